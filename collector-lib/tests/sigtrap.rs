//! The sigtrap clock inside a real process: libcollector.so preloaded into a
//! C program (built at test time) that has its own SIGTRAP handler and a
//! thread that blocks every signal. The program's traps reach its handler,
//! its handler stays what it installed, and both threads are profiled.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cdylib cargo built with this test binary: `cargo test` leaves it in
/// target/<profile>/deps beside the test; `cargo build` also copies it to
/// target/<profile>.
fn library() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let beside = deps.join("libcollector.so");
    match (beside.exists(), deps.parent()) {
        (false, Some(profile_dir)) => profile_dir.join("libcollector.so"),
        _ => beside,
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("collector-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn build_target(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/sigtrap_target.c");
    let exe = dir.join("sigtrap_target");
    let status = Command::new("gcc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&exe)
        .arg(&source)
        .status()
        .expect("gcc");
    assert!(status.success(), "gcc failed");
    exe
}

/// Thread ids of the profile blocks (kind 1) in `profile`, and the number
/// of clock events each holds (block header: tid at 8, committed at 12).
fn events_per_thread(profile: &[u8]) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    for block in profile.chunks(65536) {
        let word = |at: usize| u32::from_le_bytes(block[at..at + 4].try_into().unwrap());
        if block.len() < 32 || word(0) != 0x3142_5852 {
            continue;
        }
        let (tid, events) = (word(8), word(12) / 24);
        match out.iter_mut().find(|(t, _)| *t == tid) {
            Some(entry) => entry.1 += events,
            None => out.push((tid, events)),
        }
    }
    out
}

#[test]
fn programs_own_sigtrap_handler_and_blocked_threads_under_the_sigtrap_clock() {
    let library = library();
    assert!(library.exists(), "{} not built", library.display());
    let dir = scratch("sigtrap");
    let exe = build_target(&dir);
    let expt = dir.join("t.er");
    std::fs::create_dir_all(&expt).unwrap();
    // `exec` keeps the shell's pid, which the config must name.
    let script = format!(
        "RDBX_COLLECTOR_CONFIG=\"expt={e};founder={e};pid=$$;mode=collect;profile=1000000;depth=64\" exec {exe}",
        e = expt.display(),
        exe = exe.display()
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .env("LD_PRELOAD", &library)
        .output()
        .expect("run the target");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Its three raise(SIGTRAP)s reached its handler, none of the clock's
    // did, sigaction still reports its handler, while the kernel's is the
    // collector's (the clock signals with SIGTRAP).
    assert!(
        stdout.contains("own_traps=3 other_traps=0 handler_kept=1 kernel_handler_is_ours=0"),
        "{stdout}"
    );
    let log = std::fs::read_to_string(expt.join("log")).unwrap();
    assert!(log.contains("clock=perf-event"), "{log}");
    let profile = std::fs::read(expt.join("profile")).unwrap();
    let threads = events_per_thread(&profile);
    // main burns 150 ms, the worker 150 ms with every signal blocked: at
    // 1 ms each should have well over 50 events.
    let busy = threads.iter().filter(|(_, n)| *n >= 50).count();
    assert!(busy >= 2, "{threads:?}\n{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
