//! The fuzz input split into the files of an experiment directory and read through every
//! reading API of `Experiment` (checks in ../../tests/common/checks.rs).
//!
//! Input layout: the parts between `\n--8<--\n` separators become, in order, `manifest`,
//! `log`, `profile`, `stacks`, `notes` and `archives/index`; a missing part is a missing
//! file. When the input has no `format=` line, a valid manifest with a 256-byte block size
//! is written instead of the first part, so the fuzzer reaches the data files at once.

#![no_main]

#[path = "../../tests/common/checks.rs"]
mod checks;

use std::path::PathBuf;
use std::sync::OnceLock;

const SEPARATOR: &[u8] = b"\n--8<--\n";
const FILES: [&str; 6] = [
    "manifest",
    "log",
    "profile",
    "stacks",
    "notes",
    "archives/index",
];
const DEFAULT_MANIFEST: &[u8] = b"format=rdbx-experiment\nversion=1\nblock_size=256\n";

/// One directory per fuzzing process, rewritten for each input.
fn expt_dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| std::env::temp_dir().join(format!("rdbx-fuzz-{}.er", std::process::id())))
}

fn split(data: &[u8]) -> Vec<&[u8]> {
    let mut parts = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.windows(SEPARATOR.len()).position(|w| w == SEPARATOR) {
        parts.push(&rest[..at]);
        rest = &rest[at + SEPARATOR.len()..];
    }
    parts.push(rest);
    parts
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let dir = expt_dir();
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir.join("archives")).expect("temp dir");
    let mut parts = split(data);
    if !data.windows(7).any(|w| w == b"format=") {
        parts.insert(0, DEFAULT_MANIFEST);
    }
    for (name, bytes) in FILES.iter().zip(parts) {
        std::fs::write(dir.join(name), bytes).expect("write a part");
    }
    checks::check_experiment_dir(dir);
});
