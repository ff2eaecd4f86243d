//! Typed events of the `log` file.
//!
//! Parsing never fails on content: a line this reader cannot make sense of (a torn line that
//! a later append completed, a known event with a missing or bad field) becomes
//! [`Event::Malformed`], so one bad line does not hide the rest of the log. Unknown events
//! become [`Event::Other`]; unknown keys of known events are ignored.

use crate::counters::CounterSpec;
use crate::layout::SampleCause;
use crate::text::{
    cut_chars, parse_u64, percent_decode, preview, split_log_line, Mode, MAX_LOG_LINE,
};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// One line of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogEvent {
    /// CLOCK_MONOTONIC ns (0 for a malformed line without a readable timestamp).
    pub timestamp_ns: u64,
    pub event: Event,
}

/// What a log line says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    Start(StartInfo),
    Sample(Sample),
    /// `cause` is api | debugger | signal | start.
    Pause {
        cause: String,
    },
    Resume {
        cause: String,
    },
    /// A load object is present: `base` = load bias, `lo..=hi` its mapped addresses.
    Object {
        path: PathBuf,
        base: u64,
        lo: u64,
        hi: u64,
    },
    Unobject {
        path: PathBuf,
        base: u64,
    },
    ThreadStart {
        tid: u32,
        /// dbx's thread number (`t@N`), from format version 1.1; None before.
        number: Option<u32>,
        /// The thread's `pthread_t` (what a join of it names), when the
        /// thread wrote its line itself; None otherwise and in older logs.
        pthread: Option<u64>,
    },
    /// The collector's own thread (the watcher of a live start): listed by
    /// the debugger, never profiled. From format version 1.1.
    CollectorThread {
        tid: u32,
        number: u32,
    },
    ThreadEnd {
        tid: u32,
    },
    /// In the parent: a child was forked; `child_expt` is relative to the founder.
    Fork {
        pid: u32,
        child_expt: String,
    },
    /// First line after `start` in a descendant.
    Descendant {
        parent_expt: String,
        kind: DescendantKind,
    },
    /// A counter the experiment profiles on (format 1.5): its index in the counter
    /// records and what was opened; written at start, before any of its records.
    Counter {
        index: u16,
        spec: CounterSpec,
    },
    /// MPI_Init completed (format 1.6, with MPI tracing): the process's rank in
    /// MPI_COMM_WORLD and the number of ranks.
    Mpi {
        rank: u32,
        size: u32,
    },
    Warning(String),
    Error(String),
    /// The collector closed the experiment cleanly.
    End,
    /// Written by the launcher after the process ended.
    Terminated {
        how: TerminatedHow,
        code: i32,
    },
    /// An event this reader does not know (values decoded).
    Other {
        name: String,
        fields: Vec<(String, String)>,
    },
    /// A line that could not be read; `reason` says why. `line` is cut to
    /// [`MAX_LOG_LINE`] characters (a corrupted log can hold one line of many megabytes).
    Malformed {
        line: String,
        reason: String,
    },
}

/// The `start` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartInfo {
    pub pid: u32,
    pub ppid: u32,
    /// Descendant lineage, e.g. `_f1_x1`; empty for the founder.
    pub lineage: String,
    pub mode: Mode,
    pub exe: PathBuf,
    /// argv joined by spaces (for display: an argument containing a space is ambiguous).
    pub args: String,
    pub profile_ns: u64,
    /// `posix-timer`, `perf-event` or `off`.
    pub clock: String,
    pub depth: u32,
    pub sample_ns: u64,
    /// CLOCK_REALTIME ns at start (to show wall-clock dates).
    pub realtime_ns: u64,
    /// The sync-wait threshold in ns when the experiment traces waits (key `synctrace`,
    /// version 1.3); None when it does not.
    pub synctrace_ns: Option<u64>,
    /// The experiment traces I/O calls (key `iotrace=1`, version 1.4).
    pub iotrace: bool,
    /// The experiment records switches off the CPU (key `offcpu=1`, version 1.4).
    pub offcpu: bool,
    /// The experiment traces MPI calls (key `mpitrace=1`, version 1.6).
    pub mpitrace: bool,
    /// The name of the machine the process ran on (key `host`, version 1.6); None in
    /// older logs.
    pub host: Option<String>,
}

/// A `sample` line: the process's resource usage (getrusage) when the sample was taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub timestamp_ns: u64,
    /// Counts from 1 per experiment.
    pub number: u64,
    pub cause: SampleCause,
    pub label: String,
    pub utime_ns: u64,
    pub stime_ns: u64,
    pub minflt: u64,
    pub majflt: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
    pub inblock: u64,
    pub oublock: u64,
    pub rss_kb: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DescendantKind {
    Fork,
    Exec,
    /// A new process that did not come through the fork wrapper (posix_spawn, vfork+exec).
    Spawn,
}

impl DescendantKind {
    pub fn name(self) -> &'static str {
        match self {
            DescendantKind::Fork => "fork",
            DescendantKind::Exec => "exec",
            DescendantKind::Spawn => "spawn",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "fork" => Some(DescendantKind::Fork),
            "exec" => Some(DescendantKind::Exec),
            "spawn" => Some(DescendantKind::Spawn),
            _ => None,
        }
    }

    /// The letter used in descendant directory names (`_f1.er`, `_x1.er`, `_c1.er`).
    pub fn letter(self) -> char {
        match self {
            DescendantKind::Fork => 'f',
            DescendantKind::Exec => 'x',
            DescendantKind::Spawn => 'c',
        }
    }
}

/// How the process ended (the `how` of a `terminated` line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TerminatedHow {
    /// `code` is the exit status.
    Exit,
    /// `code` is the signal number.
    Signal,
}

impl TerminatedHow {
    pub fn name(self) -> &'static str {
        match self {
            TerminatedHow::Exit => "exit",
            TerminatedHow::Signal => "signal",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "exit" => Some(TerminatedHow::Exit),
            "signal" => Some(TerminatedHow::Signal),
            _ => None,
        }
    }
}

/// Fields of one line, values still encoded; typed getters decode them.
struct Fields<'a> {
    pairs: Vec<(&'a str, &'a str)>,
}

impl Fields<'_> {
    fn raw(&self, key: &str) -> Result<&str, String> {
        self.pairs
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("no {key}="))
    }

    fn bytes(&self, key: &str) -> Result<Vec<u8>, String> {
        percent_decode(self.raw(key)?).map_err(|_| format!("bad encoding in {key}="))
    }

    fn string(&self, key: &str) -> Result<String, String> {
        Ok(String::from_utf8_lossy(&self.bytes(key)?).into_owned())
    }

    fn path(&self, key: &str) -> Result<PathBuf, String> {
        Ok(PathBuf::from(OsStr::from_bytes(&self.bytes(key)?)))
    }

    fn u64(&self, key: &str) -> Result<u64, String> {
        parse_u64(self.raw(key)?).ok_or_else(|| format!("bad number in {key}="))
    }

    fn u32(&self, key: &str) -> Result<u32, String> {
        u32::try_from(self.u64(key)?).map_err(|_| format!("{key}= out of range"))
    }

    fn i32(&self, key: &str) -> Result<i32, String> {
        self.raw(key)?
            .parse()
            .map_err(|_| format!("bad number in {key}="))
    }

    /// `key` read with `read` when the line has it, None when it has not (a
    /// key a newer minor version added); a present but bad value is an error.
    fn optional<T>(
        &self,
        key: &str,
        read: impl Fn(&Self, &str) -> Result<T, String>,
    ) -> Result<Option<T>, String> {
        match self.pairs.iter().any(|(k, _)| *k == key) {
            true => read(self, key).map(Some),
            false => Ok(None),
        }
    }

    fn optional_u32(&self, key: &str) -> Result<Option<u32>, String> {
        self.optional(key, Self::u32)
    }

    fn optional_u64(&self, key: &str) -> Result<Option<u64>, String> {
        self.optional(key, Self::u64)
    }

    fn optional_string(&self, key: &str) -> Result<Option<String>, String> {
        self.optional(key, Self::string)
    }

    fn named<T>(&self, key: &str, from_name: impl Fn(&str) -> Option<T>) -> Result<T, String> {
        from_name(self.raw(key)?).ok_or_else(|| format!("unknown {key}="))
    }
}

/// Parses one log line into a typed event; never fails (see the module comment).
pub fn parse_event(line: &str) -> LogEvent {
    let malformed = |reason: String| Event::Malformed {
        line: cut_chars(line.trim_end_matches('\n'), MAX_LOG_LINE).into_owned(),
        reason,
    };
    let split = match split_log_line(line) {
        Ok(split) => split,
        Err(err) => {
            // Keep the timestamp when there is one, so the line still sorts in time.
            let timestamp_ns = line
                .split(' ')
                .next()
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            return LogEvent {
                timestamp_ns,
                event: malformed(err.to_string()),
            };
        }
    };
    let fields = Fields {
        pairs: split.fields,
    };
    let event = typed_event(split.timestamp_ns, split.event, &fields).unwrap_or_else(malformed);
    LogEvent {
        timestamp_ns: split.timestamp_ns,
        event,
    }
}

fn typed_event(timestamp_ns: u64, name: &str, f: &Fields<'_>) -> Result<Event, String> {
    Ok(match name {
        "start" => Event::Start(StartInfo {
            pid: f.u32("pid")?,
            ppid: f.u32("ppid")?,
            lineage: f.string("lineage")?,
            mode: f.named("mode", Mode::from_name)?,
            exe: f.path("exe")?,
            args: f.string("args")?,
            profile_ns: f.u64("profile_ns")?,
            clock: f.string("clock")?,
            depth: f.u32("depth")?,
            sample_ns: f.u64("sample_ns")?,
            realtime_ns: f.u64("realtime_ns")?,
            synctrace_ns: f.optional_u64("synctrace")?,
            iotrace: f.optional_u64("iotrace")? == Some(1),
            offcpu: f.optional_u64("offcpu")? == Some(1),
            mpitrace: f.optional_u64("mpitrace")? == Some(1),
            host: f.optional_string("host")?,
        }),
        "sample" => Event::Sample(Sample {
            timestamp_ns,
            number: f.u64("number")?,
            cause: f.named("cause", SampleCause::from_name)?,
            label: f.string("label")?,
            utime_ns: f.u64("utime_ns")?,
            stime_ns: f.u64("stime_ns")?,
            minflt: f.u64("minflt")?,
            majflt: f.u64("majflt")?,
            nvcsw: f.u64("nvcsw")?,
            nivcsw: f.u64("nivcsw")?,
            inblock: f.u64("inblock")?,
            oublock: f.u64("oublock")?,
            rss_kb: f.u64("rss_kb")?,
        }),
        "pause" => Event::Pause {
            cause: f.string("cause")?,
        },
        "resume" => Event::Resume {
            cause: f.string("cause")?,
        },
        "object" => Event::Object {
            path: f.path("path")?,
            base: f.u64("base")?,
            lo: f.u64("lo")?,
            hi: f.u64("hi")?,
        },
        "unobject" => Event::Unobject {
            path: f.path("path")?,
            base: f.u64("base")?,
        },
        "thread-start" => Event::ThreadStart {
            tid: f.u32("tid")?,
            number: f.optional_u32("number")?,
            pthread: f.optional_u64("pthread")?,
        },
        "collector-thread" => Event::CollectorThread {
            tid: f.u32("tid")?,
            number: f.u32("number")?,
        },
        "thread-end" => Event::ThreadEnd { tid: f.u32("tid")? },
        "fork" => Event::Fork {
            pid: f.u32("pid")?,
            child_expt: f.string("child_expt")?,
        },
        "descendant" => Event::Descendant {
            parent_expt: f.string("parent_expt")?,
            kind: f.named("kind", DescendantKind::from_name)?,
        },
        "counter" => Event::Counter {
            index: u16::try_from(f.u32("index")?).map_err(|_| "index out of range".to_string())?,
            spec: CounterSpec {
                name: f.string("name")?,
                kind: f.u32("type")?,
                config: f.u64("config")?,
                config1: f.u64("config1")?,
                config2: f.u64("config2")?,
                interval: f.u64("interval")?,
                data_address: f.u64("address")? == 1,
            },
        },
        "mpi" => Event::Mpi {
            rank: f.u32("rank")?,
            size: f.u32("size")?,
        },
        "warning" => Event::Warning(f.string("msg")?),
        "error" => Event::Error(f.string("msg")?),
        "end" => Event::End,
        "terminated" => Event::Terminated {
            how: f.named("how", TerminatedHow::from_name)?,
            code: f.i32("code")?,
        },
        // Each pair decoded in place (looking keys up by name would be quadratic in the
        // number of fields, and a corrupted line can have millions).
        other => Event::Other {
            name: other.to_string(),
            fields: f
                .pairs
                .iter()
                .map(|(k, v)| {
                    let value = percent_decode(v)
                        .map_err(|_| format!("bad encoding in {}=", preview(k)))?;
                    Ok((k.to_string(), String::from_utf8_lossy(&value).into_owned()))
                })
                .collect::<Result<_, String>>()?,
        },
    })
}

/// The process's rank in MPI_COMM_WORLD and the number of ranks, from a
/// log's `mpi` line (format 1.6, with MPI tracing); None when it has none.
pub fn mpi_place(log: &[LogEvent]) -> Option<(u32, u32)> {
    log.iter().find_map(|e| match e.event {
        Event::Mpi { rank, size } => Some((rank, size)),
        _ => None,
    })
}

/// Parses a whole log. Only lines ending in '\n' count: a last line without one is being
/// written (or the writer died in the middle of it) and is ignored.
pub fn parse_log(bytes: &[u8]) -> Vec<LogEvent> {
    let complete = match bytes.iter().rposition(|&b| b == b'\n') {
        Some(last) => bytes.get(..=last).unwrap_or(&[]),
        None => &[],
    };
    complete
        .split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| parse_event(&String::from_utf8_lossy(line)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_lines() {
        let events = parse_log(
            b"5 counter index=1 name=page-faults type=1 config=2 config1=0 config2=0 \
              interval=100 address=1\n6 counter index=70000 name=x type=1 config=2 config1=0 \
              config2=0 interval=100 address=0\n",
        );
        assert_eq!(
            events[0].event,
            Event::Counter {
                index: 1,
                spec: CounterSpec::parse("1:2:0:0:100:1:page-faults").unwrap(),
            }
        );
        assert!(matches!(events[1].event, Event::Malformed { .. }));
    }

    #[test]
    fn thread_numbers() {
        let events = parse_log(
            b"1 thread-start tid=11\n2 thread-start tid=12 number=3\n\
              3 collector-thread tid=13 number=4\n4 thread-start tid=14 number=x\n\
              5 collector-thread tid=15\n\
              6 thread-start tid=16 number=5 pthread=0x7f0012345640\n\
              7 thread-start tid=17 number=6 pthread=zz\n",
        );
        assert_eq!(
            events[0].event,
            Event::ThreadStart {
                tid: 11,
                number: None,
                pthread: None,
            }
        );
        assert_eq!(
            events[1].event,
            Event::ThreadStart {
                tid: 12,
                number: Some(3),
                pthread: None,
            }
        );
        // The pthread_t the thread gave, when it did: optional.
        assert_eq!(
            events[5].event,
            Event::ThreadStart {
                tid: 16,
                number: Some(5),
                pthread: Some(0x7f00_1234_5640),
            }
        );
        assert!(matches!(events[6].event, Event::Malformed { .. }));
        assert_eq!(
            events[2].event,
            Event::CollectorThread { tid: 13, number: 4 }
        );
        // A bad number, or none where it is required, is a malformed line.
        assert!(matches!(events[3].event, Event::Malformed { .. }));
        assert!(matches!(events[4].event, Event::Malformed { .. }));
    }

    #[test]
    fn typed_events() {
        let log = b"100 start pid=10 ppid=1 lineage= mode=collect exe=/bin/a%20b args=a%20b%20-x \
profile_ns=10000000 clock=posix-timer depth=256 sample_ns=1000000000 realtime_ns=1700000000000000000\n\
101 object path=/lib/libc.so.6 base=0x7f0000000000 lo=0x7f0000000000 hi=0x7f00001fffff\n\
102 sample number=1 cause=start label= utime_ns=1 stime_ns=2 minflt=3 majflt=4 nvcsw=5 nivcsw=6 inblock=7 oublock=8 rss_kb=9\n\
103 pause cause=api\n104 resume cause=signal\n105 thread-start tid=11\n106 thread-end tid=11\n\
107 unobject path=/x.so base=0x1000\n108 fork pid=12 child_expt=_f1.er\n\
109 descendant parent_expt=. kind=exec\n110 warning msg=disk%20full\n111 error msg=x\n\
112 end\n113 terminated how=signal code=9\n114 future-event a=1 b=x%20y\n";
        let events = parse_log(log);
        assert_eq!(events.len(), 15);
        let Event::Start(start) = &events[0].event else {
            panic!("{:?}", events[0]);
        };
        assert_eq!(start.exe, PathBuf::from("/bin/a b"));
        assert_eq!(start.args, "a b -x");
        assert_eq!(start.realtime_ns, 1_700_000_000_000_000_000);
        assert_eq!(start.mode, Mode::Collect);
        assert_eq!(
            start.synctrace_ns, None,
            "a log older than 1.3 has no synctrace"
        );
        let traced_log = parse_log(
            b"5 start pid=10 ppid=1 lineage= mode=collect exe=/a args=a profile_ns=0 clock=off \
depth=256 sample_ns=0 realtime_ns=1 heaptrace=0 synctrace=1500 iotrace=1 offcpu=0 \
mpitrace=1 host=node%2007\n6 mpi rank=3 size=4\n",
        );
        let Event::Start(traced) = &traced_log[0].event else {
            panic!("{traced_log:?}");
        };
        assert_eq!(traced.synctrace_ns, Some(1500));
        assert!(traced.iotrace && !traced.offcpu);
        assert!(traced.mpitrace);
        assert_eq!(traced.host.as_deref(), Some("node 07"));
        assert_eq!(start.host, None, "a log older than 1.6 names no host");
        assert_eq!(traced_log[1].event, Event::Mpi { rank: 3, size: 4 });
        assert!(
            !start.iotrace && !start.offcpu,
            "a log older than 1.4 traces neither"
        );
        assert_eq!(
            events[1].event,
            Event::Object {
                path: "/lib/libc.so.6".into(),
                base: 0x7f00_0000_0000,
                lo: 0x7f00_0000_0000,
                hi: 0x7f00_001f_ffff
            }
        );
        let Event::Sample(s) = &events[2].event else {
            panic!("{:?}", events[2]);
        };
        assert_eq!(
            (s.timestamp_ns, s.number, s.cause),
            (102, 1, SampleCause::Start)
        );
        assert_eq!((s.utime_ns, s.rss_kb), (1, 9));
        assert_eq!(
            events[9].event,
            Event::Descendant {
                parent_expt: ".".into(),
                kind: DescendantKind::Exec
            }
        );
        assert_eq!(events[10].event, Event::Warning("disk full".into()));
        assert_eq!(events[12].event, Event::End);
        assert_eq!(
            events[13].event,
            Event::Terminated {
                how: TerminatedHow::Signal,
                code: 9
            }
        );
        assert_eq!(
            events[14].event,
            Event::Other {
                name: "future-event".into(),
                fields: vec![("a".into(), "1".into()), ("b".into(), "x y".into())],
            }
        );
        assert_eq!(events[14].timestamp_ns, 114);
    }

    /// An unknown event with very many fields parses in linear time (looking each key up
    /// by name was quadratic: minutes for this line).
    #[test]
    fn many_fields_stay_linear() {
        let mut line = b"7 future".to_vec();
        for _ in 0..200_000 {
            line.extend_from_slice(b" k=v%20w");
        }
        line.push(b'\n');
        let start = std::time::Instant::now();
        let events = parse_log(&line);
        let Event::Other { fields, .. } = &events[0].event else {
            panic!("not Other");
        };
        assert_eq!(fields.len(), 200_000);
        assert_eq!(fields[0], ("k".to_string(), "v w".to_string()));
        assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
        // A malformed giant line keeps a bounded copy and a short reason.
        let mut bad = vec![b'x'; 1 << 20];
        bad.push(b'\n');
        let Event::Malformed { line, reason } = &parse_log(&bad)[0].event else {
            panic!("not malformed");
        };
        assert!(line.len() <= MAX_LOG_LINE + 3);
        assert!(reason.len() < 200, "{reason}");
    }

    #[test]
    fn torn_and_malformed_lines() {
        // The last line has no newline: ignored.
        let events = parse_log(b"1 end\n2 sample number=3 cau");
        assert_eq!(events.len(), 1);
        assert!(parse_log(b"1 end").is_empty());
        // A torn line completed by a later append: malformed, the rest still read.
        let events = parse_log(b"1 sample number=3 cau\n2 terminated how=exit code=0\n");
        assert!(matches!(events[0].event, Event::Malformed { .. }));
        assert_eq!(events[0].timestamp_ns, 1);
        assert_eq!(
            events[1].event,
            Event::Terminated {
                how: TerminatedHow::Exit,
                code: 0
            }
        );
        let events = parse_log(b"garbage\n3 thread-start tid=x\n4 sample cause=bogus\n\n");
        assert_eq!(events.len(), 3);
        for e in &events {
            assert!(matches!(e.event, Event::Malformed { .. }), "{e:?}");
        }
    }
}
