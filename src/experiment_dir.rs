//! The launcher's part of the experiment directory (collector design:
//! create the founder directory, `notes`, the `terminated` log line,
//! `archives/`) and the figures `collector status` shows.
//!
//! Stand-ins, with the same names and shapes, for what the `experiment`
//! crate provides (`create_experiment_dir`, `next_default_name`,
//! `write_notes`, `append_terminated`, `archive::write_archive`, the reader
//! `Experiment::open`): switch to the crate when it lands.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

pub type Result<T> = std::result::Result<T, String>;

/// How the founder process ended, for the `terminated` log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    Exit(i32),
    Signal(i32),
}

/// Creates `dir/name` (which must not exist) and returns its absolute path.
pub fn create_experiment_dir(dir: &Path, name: &str) -> Result<PathBuf> {
    let dir = std::fs::canonicalize(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = dir.join(name);
    match std::fs::create_dir(&path) {
        Ok(()) => Ok(path),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(format!(
            "experiment {} already exists; choose another name (collector store filename, -o)",
            path.display()
        )),
        Err(e) => Err(format!("cannot create experiment {}: {e}", path.display())),
    }
}

/// `test.N.er` with N one past the highest existing `test.M.er` in `dir`.
pub fn next_default_name(dir: &Path) -> String {
    let highest = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.strip_prefix("test.")?
                .strip_suffix(".er")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap_or(0);
    format!("test.{}.er", highest + 1)
}

/// The experiment's `notes` (the -C comments).
pub fn write_notes(expt: &Path, text: &str) -> Result<()> {
    let path = expt.join("notes");
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Appends `<mono_ns> terminated how=exit|signal code=N` to the log, in
/// one write(2) with O_APPEND like every log line.
pub fn append_terminated(expt: &Path, how: Termination) -> Result<()> {
    let (how, code) = match how {
        Termination::Exit(code) => ("exit", code),
        Termination::Signal(signal) => ("signal", signal),
    };
    let line = format!("{} terminated how={how} code={code}\n", monotonic_ns());
    let path = expt.join("log");
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o644)
        .open(&path)
        .and_then(|mut log| log.write_all(line.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn monotonic_ns() -> u64 {
    // SAFETY: clock_gettime fills the timespec.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    (now.tv_sec as u64) * 1_000_000_000 + now.tv_nsec as u64
}

/// Percent-encoding of log and config values: `%`, space, `=`, `;` and
/// bytes outside 0x21..0x7f become `%XX`.
pub fn encode_value(value: &[u8]) -> String {
    let mut out = String::with_capacity(value.len());
    for &b in value {
        if b == b'%' || b == b'=' || b == b';' || !(0x21..0x7f).contains(&b) {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    out
}

pub fn decode_value(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// The `key=value` fields of a log line after the timestamp and event.
fn fields(line: &str) -> impl Iterator<Item = (&str, &str)> {
    line.split(' ').skip(2).filter_map(|f| f.split_once('='))
}

/// The logs of an experiment and of its descendants (`_f1.er`...).
fn all_logs(founder: &Path) -> Vec<PathBuf> {
    let mut logs = vec![founder.join("log")];
    let descendants = std::fs::read_dir(founder)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('_'))
        .map(|e| e.path().join("log"));
    logs.extend(descendants);
    logs
}

pub mod archive {
    use super::*;

    /// Writes `archives/index` (and with `copy`, `archives/files/`) for
    /// every load object named by an `object` line of any log.
    pub fn write_archive(founder: &Path, copy: bool) -> Result<()> {
        let mut paths: Vec<PathBuf> = Vec::new();
        for log in all_logs(founder) {
            let Ok(text) = std::fs::read_to_string(&log) else {
                continue;
            };
            for line in text.lines() {
                if line.split(' ').nth(1) != Some("object") {
                    continue;
                }
                for (key, value) in fields(line) {
                    let path =
                        PathBuf::from(String::from_utf8_lossy(&decode_value(value)).as_ref());
                    if key == "path" && path.is_absolute() && !paths.contains(&path) {
                        paths.push(path);
                    }
                }
            }
        }
        let archives = founder.join("archives");
        let files = archives.join("files");
        let made = if copy {
            std::fs::create_dir_all(&files)
        } else {
            std::fs::create_dir_all(&archives)
        };
        made.map_err(|e| format!("{}: {e}", archives.display()))?;
        let mut index = String::new();
        for path in paths {
            index.push_str(&index_line(&path, copy.then_some(files.as_path())));
        }
        let target = archives.join("index");
        std::fs::write(&target, index).map_err(|e| format!("{}: {e}", target.display()))
    }

    /// `path= build_id= size= mtime_ns= copy=` for one load object.
    fn index_line(path: &Path, copy_into: Option<&Path>) -> String {
        let metadata = std::fs::metadata(path).ok();
        let size = metadata.as_ref().map_or(0, |m| m.len());
        let mtime_ns = metadata
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        let build_id = std::fs::read(path).ok().and_then(|bytes| build_id(&bytes));
        let build_id_text = build_id.as_deref().unwrap_or("-").to_string();
        let copied = copy_into.and_then(|files| {
            let base = path.file_name()?.to_string_lossy().into_owned();
            let stem = build_id
                .clone()
                .unwrap_or_else(|| format!("{size}-{mtime_ns}"));
            let name = format!("{stem}-{base}");
            std::fs::copy(path, files.join(&name)).ok()?;
            Some(format!("files/{name}"))
        });
        format!(
            "path={} build_id={build_id_text} size={size} mtime_ns={mtime_ns} copy={}\n",
            encode_value(path.as_os_str().as_encoded_bytes()),
            copied.map_or("-".to_string(), |c| encode_value(c.as_bytes()))
        )
    }

    /// The GNU build-id note of an ELF file, in hex.
    fn build_id(bytes: &[u8]) -> Option<String> {
        use object::Object as _;
        let file = object::File::parse(bytes).ok()?;
        let id = file.build_id().ok()??;
        Some(id.iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// What `collector status` counts, read from the directory as it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    pub clock_events: u64,
    pub samples: u64,
    pub bytes: u64,
}

const BLOCK_SIZE: usize = 65536;
const BLOCK_MAGIC: u32 = 0x3142_5852;
const CLOCK_EVENT_SIZE: u64 = 24;

/// Counts clock events (committed bytes of the `profile` blocks), `sample`
/// log lines and the bytes of every file, founder and descendants.
pub fn figures(founder: &Path) -> Figures {
    let mut figures = Figures {
        bytes: directory_bytes(founder),
        ..Figures::default()
    };
    for log in all_logs(founder) {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        figures.samples += text
            .lines()
            .filter(|l| l.split(' ').nth(1) == Some("sample"))
            .count() as u64;
        if let Some(expt) = log.parent() {
            figures.clock_events += committed_bytes(&expt.join("profile")) / CLOCK_EVENT_SIZE;
        }
    }
    figures
}

fn committed_bytes(path: &Path) -> u64 {
    let Ok(data) = std::fs::read(path) else {
        return 0;
    };
    data.chunks(BLOCK_SIZE)
        .filter(|block| block.len() >= 32)
        .filter(|block| u32::from_le_bytes([block[0], block[1], block[2], block[3]]) == BLOCK_MAGIC)
        .map(|block| {
            u64::from(u32::from_le_bytes([
                block[12], block[13], block[14], block[15],
            ]))
        })
        .sum()
}

fn directory_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => directory_bytes(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip() {
        let raw = b"/a b/c=d;e%f\x01";
        let encoded = encode_value(raw);
        assert_eq!(encoded, "/a%20b/c%3Dd%3Be%25f%01");
        assert_eq!(decode_value(&encoded), raw);
    }

    #[test]
    fn default_names_go_up() {
        let dir = std::env::temp_dir().join(format!("rdbx-names-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("test.3.er")).unwrap();
        std::fs::create_dir_all(dir.join("test.x.er")).unwrap();
        assert_eq!(next_default_name(&dir), "test.4.er");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
