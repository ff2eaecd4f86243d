//! Builds libcollector.so (the `collector` crate in collector-lib/) with a
//! nested cargo and puts it in OUT_DIR, so that rdbx can carry the library
//! inside its own binary (`include_bytes!`) and work after `cargo install`
//! with nothing else installed.
//!
//! The nested cargo uses its own target directory (no lock shared with the
//! outer build, hence no deadlock) and the outer build's jobserver (it
//! inherits CARGO_MAKEFLAGS), so it does not oversubscribe the machine.
//! If the library does not build, rdbx is still built, with an empty
//! library and a warning: rdbx then asks for RDBX_COLLECTOR at run time.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env("OUT_DIR"));
    for watched in ["collector-lib", "experiment", "Cargo.lock"] {
        println!(
            "cargo:rerun-if-changed={}",
            manifest_dir.join(watched).display()
        );
    }
    println!("cargo:rerun-if-env-changed=RDBX_SKIP_COLLECTOR_BUILD");

    let destination = out_dir.join("libcollector.so");
    let built = if std::env::var_os("RDBX_SKIP_COLLECTOR_BUILD").is_some() {
        Err("RDBX_SKIP_COLLECTOR_BUILD is set".to_string())
    } else {
        build_collector(&manifest_dir, &out_dir)
    };
    let bytes = match built.and_then(|library| {
        std::fs::read(&library).map_err(|e| format!("{}: {e}", library.display()))
    }) {
        Ok(bytes) => bytes,
        Err(why) => {
            println!("cargo:warning=libcollector.so is not embedded ({why}); rdbx will need RDBX_COLLECTOR");
            Vec::new()
        }
    };
    if let Err(e) = std::fs::write(&destination, &bytes) {
        panic!("{}: {e}", destination.display());
    }
    println!("cargo:rustc-env=RDBX_COLLECTOR_HASH={:016x}", fnv1a(&bytes));
    println!(
        "cargo:rustc-env=RDBX_COLLECTOR_CRATE_VERSION={}",
        crate_version(&manifest_dir.join("collector-lib/Cargo.toml"))
    );
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("cargo sets {name} for build scripts"))
}

/// `cargo build -p collector --release` into OUT_DIR; the path of the .so.
fn build_collector(manifest_dir: &Path, out_dir: &Path) -> Result<PathBuf, String> {
    let target_dir = out_dir.join("collector-target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .current_dir(manifest_dir)
        .args(["build", "-p", "collector", "--release", "--lib"])
        .arg("--manifest-path")
        .arg(manifest_dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    // What the outer cargo set for us, or for itself, must not leak into
    // the nested build (clippy's wrapper, a target directory, a target
    // triple for cross builds of rdbx itself).
    for name in [
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_INCREMENTAL",
        "CARGO_PROFILE_RELEASE_DEBUG",
    ] {
        command.env_remove(name);
    }
    let output = command
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .rfind(|l| l.starts_with("error"))
            .unwrap_or("cargo failed");
        return Err(format!("building the collector crate failed: {last}"));
    }
    Ok(target_dir.join("release").join("libcollector.so"))
}

/// The `version = "..."` of the [package] section.
fn crate_version(manifest: &Path) -> String {
    let text = std::fs::read_to_string(manifest).unwrap_or_default();
    text.lines()
        .filter_map(|line| line.trim().strip_prefix("version"))
        .filter_map(|rest| rest.trim().strip_prefix('='))
        .map(|value| value.trim().trim_matches('"').to_string())
        .next()
        .unwrap_or_else(|| "unknown".into())
}

/// FNV-1a, 64 bits: the same function names the cached copy at run time.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
