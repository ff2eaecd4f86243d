//! What the launcher (the rdbx binary) writes into an experiment: the directory itself,
//! `notes`, and the `terminated` line. The collector writes everything else.

use crate::log::TerminatedHow;
use crate::text::LineWriter;
use crate::{Error, Result};
use std::fs::OpenOptions;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The first line of an experiment group file (`NAME.erg`), as gprofng's.
pub const GROUP_HEADER: &str = "#analyzer experiment group";

/// Adds `member` (an experiment's path relative to the group file's directory) to the
/// group file `group`, creating it with its header line when there is none. Several
/// processes may add theirs at once (the ranks of an MPI job): the file comes into being
/// with its header already in it (written to a file of this process's, then linked to its
/// name, which fails when another process made it first), and each member is one write
/// on an O_APPEND descriptor, so lines are never interleaved.
pub fn append_to_group(group: &Path, member: &str) -> Result<()> {
    let io_error = |e| Error::io(group, e);
    static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let made = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut own = group.as_os_str().to_os_string();
    own.push(format!(".{}.{made}.tmp", std::process::id()));
    let own = PathBuf::from(own);
    std::fs::write(&own, format!("{GROUP_HEADER}\n")).map_err(io_error)?;
    let linked = std::fs::hard_link(&own, group);
    let _ = std::fs::remove_file(&own);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_error(e)),
    }
    let mut file = OpenOptions::new()
        .append(true)
        .open(group)
        .map_err(io_error)?;
    file.write_all(format!("{member}\n").as_bytes())
        .map_err(io_error)
}

/// Creates the founder directory `path`. The name must end in `.er`, must not exist yet,
/// and its parent directory must exist and be writable.
pub fn create_experiment_dir(path: &Path) -> Result<()> {
    let name_ok = path
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().ends_with(b".er") && n.len() > 3);
    if !name_ok {
        return Err(Error::BadExperimentName(path.to_path_buf()));
    }
    let cannot = |reason: String| Error::CannotCreate {
        path: path.to_path_buf(),
        reason,
    };
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            Err(Error::ExperimentExists(path.to_path_buf()))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(cannot(format!(
            "directory {} does not exist",
            parent_dir(path).display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Err(cannot(format!(
            "directory {} is not writable",
            parent_dir(path).display()
        ))),
        Err(e) => Err(cannot(e.to_string())),
    }
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// `dir/test.N.er` with N one above the highest existing `test.*.er` in `dir` (1 if none).
pub fn next_default_name(dir: &Path) -> PathBuf {
    let highest = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let n = name.to_str()?.strip_prefix("test.")?.strip_suffix(".er")?;
            n.parse::<u64>().ok()
        })
        .max()
        .unwrap_or(0);
    dir.join(format!("test.{}.er", highest.saturating_add(1)))
}

/// Writes `notes` (the -C comment), replacing any previous one.
pub fn write_notes(dir: &Path, notes: &str) -> Result<()> {
    let path = dir.join("notes");
    std::fs::write(&path, notes).map_err(|e| Error::io(path, e))
}

/// Appends one line to `dir/log` with a single write(2) on an O_APPEND descriptor. A '\n'
/// is added if `line` lacks one. If the log ends with a torn line (its writer died in the
/// middle), a '\n' is written first so the new line stays a line of its own.
pub fn append_log_line(dir: &Path, line: &[u8]) -> Result<()> {
    let path = dir.join("log");
    let io_err = |e| Error::io(&path, e);
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .open(&path)
        .map_err(io_err)?;
    let mut bytes = Vec::with_capacity(line.len() + 2);
    if !ends_with_newline(&mut file).map_err(io_err)? {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(line);
    if !line.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    file.write_all(&bytes).map_err(io_err)
}

/// True if the file is empty or its last byte is '\n'.
fn ends_with_newline(file: &mut std::fs::File) -> io::Result<bool> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(true);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}

/// Appends `<now> terminated how= code=` to `dir/log`.
pub fn append_terminated(dir: &Path, how: TerminatedHow, code: i32) -> Result<()> {
    let mut buf = [0u8; 128];
    let mut w = LineWriter::new(&mut buf);
    w.event(monotonic_ns(), "terminated")
        .str("how", how.name().as_bytes())
        .i64("code", i64::from(code));
    let line = w.finish().unwrap_or(b"0 terminated\n");
    append_log_line(dir, line)
}

/// CLOCK_MONOTONIC in ns, the clock of every timestamp in an experiment.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we pass and nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{parse_log, Event};

    fn temp_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "rdbx-expt-writer-{tag}-{}-{}",
            std::process::id(),
            monotonic_ns()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn create_dir_errors() {
        let dir = temp_dir("create");
        let good = dir.join("run.er");
        create_experiment_dir(&good).unwrap();
        assert!(good.is_dir());
        let err = create_experiment_dir(&good).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("experiment {} already exists", good.display())
        );
        let err = create_experiment_dir(&dir.join("run")).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "experiment name must end in .er: {}",
                dir.join("run").display()
            )
        );
        assert!(matches!(
            create_experiment_dir(Path::new(".er")),
            Err(Error::BadExperimentName(_))
        ));
        let err = create_experiment_dir(&dir.join("nope/x.er")).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
        // A parent that is a file.
        std::fs::write(dir.join("file"), "").unwrap();
        assert!(matches!(
            create_experiment_dir(&dir.join("file/x.er")),
            Err(Error::CannotCreate { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn default_names() {
        let dir = temp_dir("names");
        assert_eq!(next_default_name(&dir), dir.join("test.1.er"));
        for name in [
            "test.1.er",
            "test.9.er",
            "test.x.er",
            "test.12.er.bak",
            "other.40.er",
        ] {
            std::fs::create_dir(dir.join(name)).unwrap();
        }
        assert_eq!(next_default_name(&dir), dir.join("test.10.er"));
        assert_eq!(
            next_default_name(&dir.join("missing")),
            dir.join("missing/test.1.er")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn log_appends_repair_torn_lines() {
        let dir = temp_dir("log");
        write_notes(&dir, "a comment\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("notes")).unwrap(),
            "a comment\n"
        );
        append_log_line(&dir, b"1 end").unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("log"))
            .unwrap()
            .write_all(b"2 sample numb")
            .unwrap();
        append_terminated(&dir, TerminatedHow::Signal, 9).unwrap();
        let text = std::fs::read_to_string(dir.join("log")).unwrap();
        assert!(text.starts_with("1 end\n2 sample numb\n"), "{text:?}");
        let events = parse_log(text.as_bytes());
        assert_eq!(events.len(), 3);
        assert_eq!(
            events[2].event,
            Event::Terminated {
                how: TerminatedHow::Signal,
                code: 9
            }
        );
        assert!(events[2].timestamp_ns > 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Members added at once (threads here, the ranks of a job in practice) each get
    /// their own line after the header, never a line torn or two mixed.
    #[test]
    fn a_group_grows_one_line_per_member() {
        let dir = temp_dir("group");
        let group = dir.join("job.erg");
        let threads: Vec<_> = (0..8)
            .map(|rank| {
                let group = group.clone();
                std::thread::spawn(move || append_to_group(&group, &format!("job.{rank}.er")))
            })
            .collect();
        for thread in threads {
            thread.join().unwrap().unwrap();
        }
        let text = std::fs::read_to_string(&group).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.remove(0), GROUP_HEADER);
        lines.sort();
        let expected: Vec<String> = (0..8).map(|rank| format!("job.{rank}.er")).collect();
        assert_eq!(lines, expected);
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "no temporary file left: {left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
