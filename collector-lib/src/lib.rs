//! libcollector.so: the rdbx performance collector, running inside the
//! profiled program (preloaded by `rdbx collect` or by rdbx with
//! `collector enable`).
//!
//! How it starts: the ELF constructor reads RDBX_COLLECTOR_CONFIG. With
//! `mode=collect` it starts the experiment itself; with `mode=debugger` it
//! waits for rdbx to call `__rdbx_collector_start` from the program's entry
//! point. A process whose pid or image differs from the one the
//! configuration names is a descendant (exec, posix_spawn) and writes its
//! own experiment inside the founder's when following is on.
//!
//! What it records: see docs/experiment-format.md and docs/architecture.md.

mod allocator;
mod blocks;
mod clock;
mod counters;
#[macro_use]
mod got;
#[macro_use]
mod real;
mod exec;
mod heap;
mod hold;
mod interpose;
mod io;
mod lifecycle;
mod log;
mod mpi;
mod numbers;
mod objects;
mod offcpu;
mod profile;
mod samples;
mod stack_ids;
mod state;
mod sync;
mod sys;
mod threads;
mod tsc;
pub mod unwind;
mod watch;

use experiment::layout::SampleCause;
use experiment::text::{Config, Mode};
use std::ffi::{c_char, c_int, CStr};

/// The library's version, reported by `collector version` and the manifest.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = on_load;

#[used]
#[link_section = ".fini_array"]
static DESTRUCTOR: extern "C" fn() = on_unload;

extern "C" fn on_load() {
    real::resolve_all();
    let Ok(text) = std::env::var(state::CONFIG_VAR) else {
        return;
    };
    let Ok(config) = Config::parse(&text) else {
        return;
    };
    if config.mode == Mode::Debugger {
        // rdbx starts the experiment with an injected call at the entry
        // point. (Descendants of a debugged process find mode=collect: the
        // started collector rewrites the environment entry.)
        return;
    }
    let role = state::role_from_environment(&config);
    let start = role == state::Role::Founder || config.follow;
    if start {
        let (pause_signal, sample_signal) = (config.pause_signal, config.sample_signal);
        match state::start(config, role) {
            Ok(()) => interpose::install_control_signals(pause_signal, sample_signal),
            // Nowhere else to say it: the experiment could not be written.
            Err(err) => eprintln!("rdbx collector: {err}"),
        }
    }
}

extern "C" fn on_unload() {
    state::stop();
}

// ---- the public API (collector_api.h) ----------------------------------

/// Records a sample labelled `name`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn collector_sample(name: *const c_char) {
    if state::active() {
        samples::record(SampleCause::Api, label(name));
    }
}

#[no_mangle]
pub extern "C" fn collector_pause() {
    state::pause("api");
}

#[no_mangle]
pub extern "C" fn collector_resume() {
    state::resume("api");
}

#[no_mangle]
pub extern "C" fn collector_terminate_expt() {
    state::stop();
}

unsafe fn label<'a>(name: *const c_char) -> &'a [u8] {
    if name.is_null() {
        &[]
    } else {
        CStr::from_ptr(name).to_bytes()
    }
}

// ---- entry points for rdbx's injected calls ----------------------------

/// Starts an experiment with `config` (the config string of
/// docs/experiment-format.md). 0 on success, -1 bad config, -2 already
/// active, -3 cannot write the experiment.
///
/// # Safety
/// `config` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn __rdbx_collector_start(config: *const c_char) -> c_int {
    if config.is_null() {
        return -1;
    }
    let Ok(text) = CStr::from_ptr(config).to_str() else {
        return -1;
    };
    let Ok(config) = Config::parse(text) else {
        return -1;
    };
    if state::active() {
        return -2;
    }
    // Loaded into a running process (injected dlopen): our interposers
    // are not what the program calls. `attach=1` in the config says so
    // too (the debugger knows); either one is enough.
    state::set_live(config_says_attach(text) || !interpose::interposing());
    let (pause_signal, sample_signal) = (config.pause_signal, config.sample_signal);
    match state::start(config, state::Role::Founder) {
        Ok(()) => {
            interpose::install_control_signals(pause_signal, sample_signal);
            0
        }
        Err(_) => -3,
    }
}

/// Whether the config string has `attach=1` (a key the shared Config
/// parser ignores).
fn config_says_attach(text: &str) -> bool {
    text.split(';').any(|pair| pair.trim() == "attach=1")
}

/// Records a sample with `label` and cause code `cause` (see
/// experiment::layout::SampleCause). 0, or -1 when no experiment is active.
///
/// # Safety
/// `label` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn __rdbx_collector_sample(label_text: *const c_char, cause: c_int) -> c_int {
    if !state::active() {
        return -1;
    }
    let cause = u32::try_from(cause)
        .ok()
        .and_then(SampleCause::from_code)
        .unwrap_or(SampleCause::Manual);
    samples::record(cause, label(label_text));
    0
}

#[no_mangle]
pub extern "C" fn __rdbx_collector_pause() -> c_int {
    if state::pause("debugger") {
        0
    } else {
        -1
    }
}

#[no_mangle]
pub extern "C" fn __rdbx_collector_resume() -> c_int {
    if state::resume("debugger") {
        0
    } else {
        -1
    }
}

#[no_mangle]
pub extern "C" fn __rdbx_collector_stop() -> c_int {
    if state::stop() {
        0
    } else {
        -1
    }
}

#[no_mangle]
pub extern "C" fn __rdbx_collector_version() -> *const c_char {
    concat!("rdbx libcollector ", env!("CARGO_PKG_VERSION"), "\0")
        .as_ptr()
        .cast()
}
