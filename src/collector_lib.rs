//! Where libcollector.so comes from. rdbx carries the library inside its
//! own binary (built by build.rs), so a bare `cargo install` works: at the
//! first use the bytes are written to a per-user cache file named by their
//! hash, atomically, and that file is preloaded. `RDBX_COLLECTOR=PATH`
//! overrides it (a library being developed, a test double).

use anyhow::{anyhow, bail, Context as _, Result};
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The library built into this rdbx (empty if build.rs could not build it).
static EMBEDDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libcollector.so"));
/// FNV-1a of EMBEDDED, computed by build.rs.
const EMBEDDED_HASH: &str = env!("RDBX_COLLECTOR_HASH");
const CRATE_VERSION: &str = env!("RDBX_COLLECTOR_CRATE_VERSION");

/// The library the next experiment will preload.
#[derive(Debug, Clone)]
pub struct Library {
    pub path: PathBuf,
    /// `collector 0.1.0 (embedded, 1a2b3c4d)` or `... (RDBX_COLLECTOR)`.
    pub version: String,
}

/// Finds (or installs from the embedded bytes) the collector library.
pub fn locate() -> Result<Library> {
    if let Some(path) = std::env::var_os("RDBX_COLLECTOR").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        let path = std::fs::canonicalize(&path)
            .with_context(|| format!("RDBX_COLLECTOR={}", path.display()))?;
        check_preloadable(&path)?;
        let bytes = std::fs::read(&path).with_context(|| format!("{}", path.display()))?;
        return Ok(Library {
            version: format!(
                "collector (RDBX_COLLECTOR, {})",
                &format!("{:016x}", fnv1a(&bytes))[..8]
            ),
            path,
        });
    }
    if EMBEDDED.is_empty() {
        bail!("this rdbx was built without libcollector.so; set RDBX_COLLECTOR to its path");
    }
    let path = install_embedded()?;
    Ok(Library {
        path,
        version: embedded_version(),
    })
}

/// The version of the embedded library, for `collector version`.
pub fn embedded_version() -> String {
    format!(
        "collector {CRATE_VERSION} (embedded, {})",
        &EMBEDDED_HASH[..8]
    )
}

/// LD_PRELOAD splits on spaces and colons: such a path cannot be preloaded.
fn check_preloadable(path: &Path) -> Result<()> {
    let text = path.to_string_lossy();
    if text.contains([' ', ':']) {
        bail!(
            "{}: a library path with a space or colon cannot be preloaded",
            path.display()
        );
    }
    Ok(())
}

/// Writes the embedded library into the first usable cache directory
/// (unless an identical copy is there) and returns its path.
fn install_embedded() -> Result<PathBuf> {
    let file_name = format!("libcollector-{EMBEDDED_HASH}.so");
    let mut last_error = anyhow!("no cache directory");
    for dir in cache_dirs() {
        let path = dir.join(&file_name);
        if check_preloadable(&path).is_err() {
            continue;
        }
        match install_into(&dir, &path) {
            Ok(()) => return Ok(path),
            Err(e) => last_error = e,
        }
    }
    Err(last_error.context("cannot install libcollector.so"))
}

/// `$XDG_CACHE_HOME/rdbx`, `~/.cache/rdbx`, then `/tmp/rdbx-UID`.
fn cache_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(xdg).join("rdbx"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(home).join(".cache").join("rdbx"));
    }
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    dirs.push(std::env::temp_dir().join(format!("rdbx-{uid}")));
    dirs
}

fn install_into(dir: &Path, path: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    // A directory someone else owns (a planted /tmp/rdbx-UID) could hand us
    // a library of theirs to run inside every target: never use it.
    let metadata = std::fs::metadata(dir).with_context(|| format!("{}", dir.display()))?;
    // SAFETY: getuid cannot fail.
    if metadata.uid() != unsafe { libc::getuid() } || metadata.mode() & 0o022 != 0 {
        bail!("{}: not owned by you or writable by others", dir.display());
    }
    if std::fs::read(path).is_ok_and(|bytes| bytes == EMBEDDED) {
        return Ok(());
    }
    let temporary = dir.join(format!(".libcollector.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o755)
        .open(&temporary)
        .and_then(|mut file| {
            file.write_all(EMBEDDED)?;
            file.sync_all()
        });
    let installed = written.and_then(|()| {
        std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(0o755))?;
        std::fs::rename(&temporary, path)
    });
    if let Err(e) = installed {
        let _ = std::fs::remove_file(&temporary);
        return Err(e).with_context(|| format!("{}", path.display()));
    }
    Ok(())
}

/// FNV-1a, 64 bits (the same function as build.rs).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}
