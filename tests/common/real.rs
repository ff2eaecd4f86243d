//! Real programs nobody here wrote, built from sources cargo fetches from
//! the crate registry (tests/fixtures): Lua 5.4 from the lua-src crate's
//! sources with our driver, at -O0 and at -O2 without frame pointers; and
//! `wordfreq`, a small program of ours on the regex crate, optimized with
//! full DWARF. Each is built once per text of its sources and cached under
//! the test target directory (several test binaries may ask at once: a
//! lock file serializes the builds).

use super::{FileLock, TIMEOUT};
use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// How Lua is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    O0,
    /// -O2 -fomit-frame-pointer: what a distribution ships.
    O2,
}

impl Opt {
    fn flags(self) -> &'static [&'static str] {
        match self {
            Opt::O0 => &["-O0"],
            Opt::O2 => &["-O2", "-fomit-frame-pointer"],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Opt::O0 => "O0",
            Opt::O2 => "O2",
        }
    }
}

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn cache_root() -> PathBuf {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-programs");
    fs::create_dir_all(&root).expect("create the real programs' cache");
    root
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// A hash of the fixture files (and `extra`), naming a build.
fn key(extra: &str) -> String {
    let mut hasher = DefaultHasher::new();
    extra.hash(&mut hasher);
    let mut files = vec![
        fixtures_dir().join("Cargo.toml"),
        fixtures_dir().join("Cargo.lock"),
        fixtures_dir().join("src/main.rs"),
        fixtures_dir().join("lua/driver.c"),
    ];
    files.sort();
    for file in files {
        fs::read(&file)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
            .hash(&mut hasher);
    }
    format!("{:016x}", hasher.finish())
}

/// Runs `build` into a fresh directory and publishes it as `PREFIX-KEY`,
/// unless a complete build is there already; returns the directory. Builds
/// of `prefix` from other sources are removed.
fn cached(prefix: &str, key: &str, build: impl FnOnce(&Path)) -> PathBuf {
    let name = format!("{prefix}-{key}");
    let root = cache_root();
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(root.join(".lock"))
        .expect("open the lock file");
    let _guard = FileLock::new(&lock);
    let done = root.join(&name);
    if done.join(".complete").exists() {
        return done;
    }
    remove_older_builds(&root, prefix);
    let scratch = root.join(format!("{name}.tmp.{}", std::process::id()));
    let _ = fs::remove_dir_all(&scratch);
    fs::create_dir_all(&scratch).expect("create a build directory");
    build(&scratch);
    fs::write(scratch.join(".complete"), &name).expect("mark the build complete");
    let _ = fs::remove_dir_all(&done);
    fs::rename(&scratch, &done).expect("publish the build");
    done
}

/// Complete builds of `prefix` (other keys); called with the lock held.
fn remove_older_builds(root: &Path, prefix: &str) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let older = name
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|key| key.len() == 16 && !key.contains('.'));
        if older && entry.path().join(".complete").exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The directory of Lua 5.4's C sources inside the lua-src crate, as
/// cargo fetched it for the fixtures' manifest.
pub fn lua_sources() -> PathBuf {
    let output = Command::new(cargo())
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(fixtures_dir().join("Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    // "manifest_path":"/…/lua-src-547.1.0/Cargo.toml": the crate's directory.
    let manifest = text
        .split("\"manifest_path\":\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .find(|path| path.contains("/lua-src-"))
        .expect("lua-src in cargo metadata");
    let crate_dir = Path::new(manifest).parent().expect("a crate directory");
    let sources = fs::read_dir(crate_dir)
        .expect("read lua-src")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("lua-5.4"))
        })
        .expect("Lua 5.4's sources in lua-src");
    sources
}

/// Lua 5.4 built with `opt` and our driver: `lua SCRIPT`. Source file
/// names in its DWARF are relative (`lvm.c`), as a build from the source
/// directory gives them.
pub fn lua(opt: Opt) -> PathBuf {
    let prefix = format!("lua-{}", opt.name());
    let dir = cached(&prefix, &key(opt.name()), |out| build_lua(opt, out));
    dir.join("lua")
}

fn build_lua(opt: Opt, out: &Path) {
    let sources = lua_sources();
    let driver = fixtures_dir().join("lua/driver.c");
    let mut units: Vec<PathBuf> = fs::read_dir(&sources)
        .expect("read Lua's sources")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .filter(|p| !p.ends_with("lua.c") && !p.ends_with("luac.c"))
        .collect();
    units.sort();
    // Compile in parallel (two at a time per core is plenty), then link.
    let mut objects = Vec::new();
    let mut running = Vec::new();
    for unit in units.iter().chain(std::iter::once(&driver)) {
        let object = out.join(unit.file_name().unwrap()).with_extension("o");
        let child = Command::new("gcc")
            .args([
                "-c",
                "-g",
                "-std=gnu99",
                "-DLUA_USE_LINUX",
                "-DLUA_COMPAT_5_3",
            ])
            .args(opt.flags())
            .arg("-I")
            .arg(&sources)
            .arg(unit.file_name().unwrap())
            .arg("-o")
            .arg(&object)
            .current_dir(unit.parent().unwrap())
            .spawn()
            .expect("gcc must be installed");
        running.push((unit.clone(), child));
        objects.push(object);
        if running.len() >= 4 {
            wait_all(&mut running);
        }
    }
    wait_all(&mut running);
    let status = Command::new("gcc")
        .args(&objects)
        .args(["-o"])
        .arg(out.join("lua"))
        .args(["-lm", "-ldl"])
        .status()
        .expect("link lua");
    assert!(status.success(), "linking lua failed");
}

fn wait_all(running: &mut Vec<(PathBuf, std::process::Child)>) {
    for (unit, child) in running.drain(..) {
        let output = child.wait_with_output().expect("wait for gcc");
        assert!(output.status.success(), "gcc failed for {}", unit.display());
    }
}

/// A Lua script of the fixtures (`tables.lua`).
pub fn lua_script(name: &str) -> PathBuf {
    fixtures_dir().join("lua").join(name)
}

/// `wordfreq`, built by cargo in release with full DWARF.
pub fn wordfreq() -> PathBuf {
    let dir = cached("wordfreq", &key("wordfreq"), |out| {
        let started = std::time::Instant::now();
        let output = Command::new(cargo())
            .args(["build", "--release", "--quiet", "--manifest-path"])
            .arg(fixtures_dir().join("Cargo.toml"))
            .arg("--target-dir")
            .arg(out.join("target"))
            .output()
            .expect("run cargo build");
        assert!(
            output.status.success(),
            "building wordfreq: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(started.elapsed() < TIMEOUT * 20, "the build is too slow");
        fs::copy(out.join("target/release/wordfreq"), out.join("wordfreq")).expect("copy wordfreq");
        // The build tree is not needed once the binary is out.
        let _ = fs::remove_dir_all(out.join("target"));
    });
    dir.join("wordfreq")
}
