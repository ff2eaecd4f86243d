//! Every pure parser of the experiment crate on the fuzz input, with the invariant checks
//! the property tests use (../../tests/common/checks.rs): no panic, committed clamped to
//! the payload, stack depth at most MAX_STACK_DEPTH, strict and lenient parsers agreeing.

#![no_main]

#[path = "../../tests/common/checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    checks::check_pure(data);
});
