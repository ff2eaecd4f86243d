//! dbx's `collector` subcommands, typed.

use crate::error::ParseError;
use crate::help::usage_of;

type Result<T> = std::result::Result<T, ParseError>;

const NANOS_PER_MS: u64 = 1_000_000;
const NANOS_PER_US: u64 = 1_000;
const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// Clock-profiling intervals of dbx's named settings, in nanoseconds.
pub const PROFILE_ON_NS: u64 = 10 * NANOS_PER_MS;
pub const PROFILE_HI_NS: u64 = NANOS_PER_MS;
pub const PROFILE_LO_NS: u64 = 100 * NANOS_PER_MS;

/// One `collector ...` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollectorCommand {
    Enable,
    Disable,
    Pause,
    Resume,
    /// `profile on|off`, `profile timer VALUE`.
    Profile(ProfileSetting),
    Sample(SampleSetting),
    /// `dbxsample on|off`: a sample at every stop the user sees.
    DbxSample(bool),
    /// `heaptrace on|off`.
    HeapTrace(bool),
    /// `synctrace on|off`, `synctrace threshold MICROSECONDS|calibrate|all`.
    SyncTrace(SyncTraceSetting),
    /// `iotrace on|off`.
    IoTrace(bool),
    /// `offcpu on|off`: record each switch off the CPU.
    OffCpu(bool),
    /// `limit MB` in bytes; `None` = no limit (`limit unlimited`).
    Limit(Option<u64>),
    Archive(ArchiveMode),
    Store(StoreSetting),
    Show(ShowWhat),
    Status,
    Version,
    /// `hwprofile on|off|list`, `hwprofile counter NAME [INTERVAL] ...`.
    HwProfile(HwProfileSetting),
    /// `mpitrace on|off`: trace MPI calls.
    MpiTrace(bool),
}

/// `collector hwprofile ...`: counter overflow profiling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HwProfileSetting {
    On,
    Off,
    /// `list`: the counters this machine offers.
    List,
    /// `counter NAME [INTERVAL] [NAME2 [INTERVAL2] ...]`: choose counters
    /// (also turns counter profiling on). Names are checked against the
    /// machine's counters when the command runs.
    Counters(Vec<CounterRequest>),
}

/// One counter asked for: a name and how often it overflows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CounterRequest {
    pub name: String,
    pub interval: CounterInterval,
    /// Written `NAME?`: profile it if this machine can count it, else go
    /// on without it (a warning), instead of refusing the whole request.
    pub if_available: bool,
}

/// A counter's overflow interval: `on` (the default), `hi`, `lo` or a
/// number of events between records (at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterInterval {
    On,
    Hi,
    Lo,
    Events(u64),
}

impl CounterInterval {
    /// `on`, `hi`, `lo` or a positive number (`10000`, `1e6`, `0x1000`);
    /// None when the word is none of these, an error for 0.
    fn parse(word: &str) -> Option<std::result::Result<CounterInterval, String>> {
        Some(Ok(match word {
            "on" => CounterInterval::On,
            "hi" | "high" => CounterInterval::Hi,
            "lo" | "low" => CounterInterval::Lo,
            _ => {
                let events = parse_count(word)?;
                if events == 0 {
                    return Some(Err(
                        "interval 0: at least 1 event between records".to_string()
                    ));
                }
                CounterInterval::Events(events)
            }
        }))
    }
}

/// A count of events: decimal, hex (`0x`), or `NeM` (`1e6`).
fn parse_count(word: &str) -> Option<u64> {
    if let Some(hex) = word.strip_prefix("0x") {
        return u64::from_str_radix(hex, 16).ok();
    }
    if let Some((mantissa, exponent)) = word.split_once(['e', 'E']) {
        let mantissa: u64 = mantissa.parse().ok()?;
        let exponent: u32 = exponent.parse().ok()?;
        return 10u64.checked_pow(exponent)?.checked_mul(mantissa);
    }
    word.parse().ok()
}

/// gprofng's `-h` list: `NAME[,INTERVAL][,NAME2[,INTERVAL2]...]`, an
/// interval being `on`, `hi`, `lo`, a number, or empty (the default).
/// `-h off` is no counters.
pub fn parse_counter_list(text: &str) -> std::result::Result<Vec<CounterRequest>, String> {
    if text == "off" {
        return Ok(Vec::new());
    }
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    counter_requests(&items, true)
}

/// Names each followed by an optional interval. With `empty_is_default`
/// an empty item is a name's default interval (`cycles,,insts`).
fn counter_requests(
    items: &[&str],
    empty_is_default: bool,
) -> std::result::Result<Vec<CounterRequest>, String> {
    let mut out = Vec::new();
    let mut items = items.iter().copied().peekable();
    while let Some(item) = items.next() {
        let (name, if_available) = match item.strip_suffix('?') {
            Some(bare) => (bare, true),
            None => (item, false),
        };
        if name.is_empty() || CounterInterval::parse(name).is_some() {
            return Err(format!("expected a counter name, got \"{item}\""));
        }
        let interval = match items.peek().copied() {
            Some("") if empty_is_default => {
                items.next();
                CounterInterval::On
            }
            Some(word) => match CounterInterval::parse(word) {
                Some(interval) => {
                    items.next();
                    interval.map_err(|problem| format!("counter \"{name}\": {problem}"))?
                }
                None => CounterInterval::On,
            },
            None => CounterInterval::On,
        };
        out.push(CounterRequest {
            name: name.to_string(),
            interval,
            if_available,
        });
    }
    if out.is_empty() {
        return Err("no counter given".to_string());
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileSetting {
    On,
    Off,
    /// `profile timer VALUE`, in nanoseconds (also turns profiling on).
    Timer(u64),
    /// `profile depth N`: the stack depth limit (frames).
    Depth(u32),
}

/// The largest stack depth limit the experiment format allows.
pub const MAX_STACK_DEPTH: u32 = 2048;

/// Parses a stack depth limit: 1..=2048 frames.
pub fn stack_depth(text: &str) -> std::result::Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (1..=MAX_STACK_DEPTH).contains(&n) => Ok(n),
        _ => Err(format!(
            "stack depth must be 1 to {MAX_STACK_DEPTH} frames, not \"{text}\""
        )),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncTraceSetting {
    On,
    Off,
    /// `synctrace threshold ...`: the threshold of the next experiment (tracing stays as
    /// it is, as in dbx).
    Threshold(SyncThreshold),
}

/// How long a synchronization wait must be to be recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncThreshold {
    /// Measured when the experiment starts: 5 times an uncontended mutex lock + unlock,
    /// at least 1 µs (the default).
    #[default]
    Calibrate,
    /// At least this many microseconds; 0 (`all`) records every wait.
    Microseconds(u64),
}

/// Parses a sync-wait threshold: `calibrate`, `all` or a number of microseconds.
pub fn sync_threshold(word: &str) -> std::result::Result<SyncThreshold, String> {
    match word {
        "calibrate" => Ok(SyncThreshold::Calibrate),
        "all" => Ok(SyncThreshold::Microseconds(0)),
        _ if !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit()) => word
            .parse()
            .map(SyncThreshold::Microseconds)
            .map_err(|_| format!("the threshold {word} is too large")),
        _ => Err(format!(
            "expected a threshold in microseconds, calibrate or all, got \"{word}\""
        )),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SampleSetting {
    Periodic,
    Manual,
    /// `sample period SECONDS`, in nanoseconds.
    Period(u64),
    /// `sample record [NAME]`.
    Record(Option<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveMode {
    On,
    Off,
    Copy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSetting {
    Directory(String),
    /// Ends in `.er`.
    Filename(String),
    /// Ends in `.erg`.
    Group(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShowWhat {
    All,
    Profile,
    HwProfile,
    SyncTrace,
    HeapTrace,
    IoTrace,
    MpiTrace,
    OffCpu,
    Sample,
    Store,
    Limit,
    Archive,
}

/// The subcommand names, in the order of the command table.
pub const SUBCOMMANDS: &[&str] = &[
    "enable",
    "disable",
    "pause",
    "resume",
    "profile",
    "hwprofile",
    "synctrace",
    "heaptrace",
    "iotrace",
    "mpitrace",
    "offcpu",
    "sample",
    "dbxsample",
    "limit",
    "archive",
    "store",
    "show",
    "status",
    "version",
];

/// Parses the words after `collector`.
pub(crate) fn parse(words: &[String]) -> Result<CollectorCommand> {
    let Some((first, rest)) = words.split_first() else {
        return Err(invalid(
            "collector",
            format!("missing subcommand ({})", SUBCOMMANDS.join(", ")),
        ));
    };
    let sub = Sub {
        name: match SUBCOMMANDS.iter().find(|s| **s == first.as_str()) {
            Some(name) => name,
            None => {
                return Err(invalid(
                    "collector",
                    format!("unknown subcommand \"{first}\""),
                ))
            }
        },
        rest,
    };
    sub.parse()
}

/// The words after `collector NAME`.
struct Sub<'a> {
    name: &'static str,
    rest: &'a [String],
}

impl Sub<'_> {
    fn parse(&self) -> Result<CollectorCommand> {
        match self.name {
            "enable" => self.none(CollectorCommand::Enable),
            "disable" => self.none(CollectorCommand::Disable),
            "pause" => self.none(CollectorCommand::Pause),
            "resume" => self.none(CollectorCommand::Resume),
            "status" => self.none(CollectorCommand::Status),
            "version" => self.none(CollectorCommand::Version),
            "profile" => self.profile().map(CollectorCommand::Profile),
            "sample" => self.sample().map(CollectorCommand::Sample),
            "dbxsample" => self.on_off().map(CollectorCommand::DbxSample),
            "limit" => self.limit().map(CollectorCommand::Limit),
            "archive" => self.archive().map(CollectorCommand::Archive),
            "store" => self.store().map(CollectorCommand::Store),
            "show" => self.show().map(CollectorCommand::Show),
            "hwprofile" => self.hwprofile().map(CollectorCommand::HwProfile),
            "synctrace" => self.synctrace().map(CollectorCommand::SyncTrace),
            "heaptrace" => self.on_off().map(CollectorCommand::HeapTrace),
            "iotrace" => self.on_off().map(CollectorCommand::IoTrace),
            "offcpu" => self.on_off().map(CollectorCommand::OffCpu),
            _ => self.on_off().map(CollectorCommand::MpiTrace),
        }
    }

    fn command(&self) -> String {
        format!("collector {}", self.name)
    }

    fn invalid(&self, problem: impl Into<String>) -> ParseError {
        invalid(&self.command(), problem)
    }

    fn none(&self, command: CollectorCommand) -> Result<CollectorCommand> {
        match self.rest.first() {
            None => Ok(command),
            Some(word) => Err(self.invalid(format!("unexpected argument \"{word}\""))),
        }
    }

    /// Exactly `count` words after the subcommand.
    fn exactly(&self, count: usize, what: &str) -> Result<&[String]> {
        if self.rest.len() < count {
            return Err(self.invalid(format!("missing {what}")));
        }
        if let Some(extra) = self.rest.get(count) {
            return Err(self.invalid(format!("unexpected argument \"{extra}\"")));
        }
        Ok(self.rest)
    }

    fn on_off(&self) -> Result<bool> {
        let word = &self.exactly(1, "on or off")?[0];
        on_off(word).ok_or_else(|| self.invalid(format!("expected on or off, got \"{word}\"")))
    }

    fn synctrace(&self) -> Result<SyncTraceSetting> {
        match self.rest.first().map(String::as_str) {
            Some("threshold") => {
                let word = &self.exactly(2, "threshold")?[1];
                sync_threshold(word)
                    .map(SyncTraceSetting::Threshold)
                    .map_err(|problem| self.invalid(problem))
            }
            _ => {
                let word = &self.exactly(1, "on, off or threshold")?[0];
                match word.as_str() {
                    "on" => Ok(SyncTraceSetting::On),
                    "off" => Ok(SyncTraceSetting::Off),
                    _ => {
                        Err(self.invalid(format!("expected on, off or threshold, got \"{word}\"")))
                    }
                }
            }
        }
    }

    fn hwprofile(&self) -> Result<HwProfileSetting> {
        match self.rest.first().map(String::as_str) {
            Some("counter") => {
                let items: Vec<&str> = self.rest[1..].iter().map(String::as_str).collect();
                counter_requests(&items, false)
                    .map(HwProfileSetting::Counters)
                    .map_err(|problem| self.invalid(problem))
            }
            Some("list") => self.exactly(1, "").map(|_| HwProfileSetting::List),
            _ => {
                let word = &self.exactly(1, "on, off, list or counter")?[0];
                match word.as_str() {
                    "on" => Ok(HwProfileSetting::On),
                    "off" => Ok(HwProfileSetting::Off),
                    _ => {
                        Err(self
                            .invalid(format!("expected on, off, list or counter, got \"{word}\"")))
                    }
                }
            }
        }
    }

    fn profile(&self) -> Result<ProfileSetting> {
        match self.rest.first().map(String::as_str) {
            Some("timer") => {
                let words = &self.exactly(2, "interval")?[1..];
                profile_interval(&words[0])
                    .map(ProfileSetting::Timer)
                    .map_err(|problem| self.invalid(problem))
            }
            Some("depth") => {
                let words = &self.exactly(2, "frames")?[1..];
                stack_depth(&words[0])
                    .map(ProfileSetting::Depth)
                    .map_err(|problem| self.invalid(problem))
            }
            _ => Ok(if self.on_off()? {
                ProfileSetting::On
            } else {
                ProfileSetting::Off
            }),
        }
    }

    fn sample(&self) -> Result<SampleSetting> {
        let Some(first) = self.rest.first() else {
            return Err(self.invalid("missing periodic, manual, period or record"));
        };
        match first.as_str() {
            "periodic" => self.exactly(1, "").map(|_| SampleSetting::Periodic),
            "manual" => self.exactly(1, "").map(|_| SampleSetting::Manual),
            "period" => {
                let word = &self.exactly(2, "number of seconds")?[1];
                seconds(word)
                    .map(SampleSetting::Period)
                    .map_err(|problem| self.invalid(problem))
            }
            "record" => match self.rest.len() {
                1 => Ok(SampleSetting::Record(None)),
                2 => Ok(SampleSetting::Record(Some(self.rest[1].clone()))),
                _ => Err(self.invalid(format!("unexpected argument \"{}\"", self.rest[2]))),
            },
            other => Err(self.invalid(format!(
                "expected periodic, manual, period or record, got \"{other}\""
            ))),
        }
    }

    fn limit(&self) -> Result<Option<u64>> {
        let word = &self.exactly(1, "number of megabytes")?[0];
        if matches!(word.as_str(), "unlimited" | "none" | "off") {
            return Ok(None);
        }
        match word.parse::<u64>() {
            Ok(mb) if mb > 0 => mb
                .checked_mul(1024 * 1024)
                .map(Some)
                .ok_or_else(|| self.invalid(format!("{mb} megabytes is too large"))),
            _ => Err(self.invalid(format!(
                "expected a positive number of megabytes or unlimited, got \"{word}\""
            ))),
        }
    }

    fn archive(&self) -> Result<ArchiveMode> {
        let word = &self.exactly(1, "on, off or copy")?[0];
        match word.as_str() {
            "on" => Ok(ArchiveMode::On),
            "off" => Ok(ArchiveMode::Off),
            "copy" => Ok(ArchiveMode::Copy),
            _ => Err(self.invalid(format!("expected on, off or copy, got \"{word}\""))),
        }
    }

    fn store(&self) -> Result<StoreSetting> {
        let Some(first) = self.rest.first() else {
            return Err(self.invalid("missing directory, filename or group"));
        };
        let what = match first.as_str() {
            "directory" => "directory",
            "filename" => "experiment name",
            "group" => "group name",
            other => {
                return Err(self.invalid(format!(
                    "expected directory, filename or group, got \"{other}\""
                )))
            }
        };
        let value = self.exactly(2, what)?[1].clone();
        match first.as_str() {
            "directory" => Ok(StoreSetting::Directory(value)),
            "filename" => {
                check_experiment_name(&value).map_err(|problem| self.invalid(problem))?;
                Ok(StoreSetting::Filename(value))
            }
            _ => {
                if !value.ends_with(".erg") || value.contains('/') {
                    return Err(self.invalid(format!(
                        "a group name is a file name ending in .erg, got \"{value}\""
                    )));
                }
                Ok(StoreSetting::Group(value))
            }
        }
    }

    fn show(&self) -> Result<ShowWhat> {
        let word = match self.rest {
            [] => return Ok(ShowWhat::All),
            [word] => word.as_str(),
            [_, extra, ..] => return Err(self.invalid(format!("unexpected argument \"{extra}\""))),
        };
        Ok(match word {
            "all" => ShowWhat::All,
            "profile" => ShowWhat::Profile,
            "hwprofile" => ShowWhat::HwProfile,
            "synctrace" => ShowWhat::SyncTrace,
            "heaptrace" => ShowWhat::HeapTrace,
            "iotrace" => ShowWhat::IoTrace,
            "mpitrace" => ShowWhat::MpiTrace,
            "offcpu" => ShowWhat::OffCpu,
            "sample" => ShowWhat::Sample,
            "store" => ShowWhat::Store,
            "limit" => ShowWhat::Limit,
            "archive" => ShowWhat::Archive,
            other => return Err(self.invalid(format!("nothing called \"{other}\" to show"))),
        })
    }
}

fn invalid(name: &str, problem: impl Into<String>) -> ParseError {
    ParseError::Invalid {
        command: name.to_string(),
        problem: problem.into(),
        usage: usage_of(name).to_string(),
    }
}

fn on_off(word: &str) -> Option<bool> {
    match word {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

/// `on`, `hi`/`high`, `lo`/`low`, or a number of milliseconds with an
/// optional `m` (ms) or `u` (µs) suffix; in nanoseconds.
pub fn profile_interval(word: &str) -> std::result::Result<u64, String> {
    match word {
        "on" => return Ok(PROFILE_ON_NS),
        "hi" | "high" => return Ok(PROFILE_HI_NS),
        "lo" | "low" => return Ok(PROFILE_LO_NS),
        _ => {}
    }
    let (number, unit) = if let Some(n) = word.strip_suffix('u') {
        (n, NANOS_PER_US)
    } else if let Some(n) = word.strip_suffix('m') {
        (n, NANOS_PER_MS)
    } else {
        (word, NANOS_PER_MS)
    };
    match scaled(number, unit) {
        Some(ns) if ns > 0 => Ok(ns),
        _ => Err(format!(
            "expected on, hi, lo or a positive number of milliseconds (suffix m for ms, u for µs), got \"{word}\""
        )),
    }
}

/// A positive number of seconds (decimals allowed), in nanoseconds.
pub fn seconds(word: &str) -> std::result::Result<u64, String> {
    match scaled(word, NANOS_PER_SECOND) {
        Some(ns) if ns > 0 => Ok(ns),
        _ => Err(format!(
            "expected a positive number of seconds, got \"{word}\""
        )),
    }
}

/// `12`, `0.5`, `2.25` times `unit`, exactly (no floating point).
fn scaled(number: &str, unit: u64) -> Option<u64> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if !digits(whole) || !digits(fraction) {
        return None;
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut total = whole.checked_mul(unit)?;
    let mut place = unit;
    for c in fraction.chars() {
        place /= 10;
        total = total.checked_add(u64::from(c.to_digit(10)?) * place)?;
    }
    Some(total)
}

/// An experiment name: one path component ending in `.er`.
pub fn check_experiment_name(name: &str) -> std::result::Result<(), String> {
    if name.contains('/') {
        return Err(format!(
            "the experiment name \"{name}\" must not contain \"/\" (use store directory)"
        ));
    }
    if name.len() <= 3 || !name.ends_with(".er") {
        return Err(format!("the experiment name \"{name}\" must end in .er"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<CollectorCommand> {
        let words: Vec<String> = text.split_whitespace().map(String::from).collect();
        parse(&words)
    }

    fn err(text: &str) -> String {
        parse_text(text).unwrap_err().to_string()
    }

    #[test]
    fn intervals() {
        assert_eq!(profile_interval("on"), Ok(10_000_000));
        assert_eq!(profile_interval("high"), Ok(1_000_000));
        assert_eq!(profile_interval("lo"), Ok(100_000_000));
        assert_eq!(profile_interval("5"), Ok(5_000_000));
        assert_eq!(profile_interval("2.5m"), Ok(2_500_000));
        assert_eq!(profile_interval("250u"), Ok(250_000));
        assert!(profile_interval("0").is_err());
        assert!(profile_interval("x").is_err());
        assert!(profile_interval("-1").is_err());
        assert!(profile_interval(".").is_err());
        assert_eq!(seconds("0.5"), Ok(500_000_000));
        assert!(seconds("0").is_err());
    }

    #[test]
    fn subcommands() {
        use CollectorCommand as C;
        assert_eq!(parse_text("enable"), Ok(C::Enable));
        assert_eq!(
            parse_text("profile timer hi"),
            Ok(C::Profile(ProfileSetting::Timer(1_000_000)))
        );
        assert_eq!(
            parse_text("profile off"),
            Ok(C::Profile(ProfileSetting::Off))
        );
        assert_eq!(
            parse_text("profile depth 64"),
            Ok(C::Profile(ProfileSetting::Depth(64)))
        );
        assert_eq!(
            parse_text("sample record phase2"),
            Ok(C::Sample(SampleSetting::Record(Some("phase2".into()))))
        );
        assert_eq!(
            parse_text("sample period 2"),
            Ok(C::Sample(SampleSetting::Period(2_000_000_000)))
        );
        assert_eq!(parse_text("limit 10"), Ok(C::Limit(Some(10 << 20))));
        assert_eq!(parse_text("limit unlimited"), Ok(C::Limit(None)));
        assert_eq!(
            parse_text("archive copy"),
            Ok(C::Archive(ArchiveMode::Copy))
        );
        assert_eq!(
            parse_text("store filename run.er"),
            Ok(C::Store(StoreSetting::Filename("run.er".into())))
        );
        assert_eq!(parse_text("show"), Ok(C::Show(ShowWhat::All)));
        assert_eq!(parse_text("show sample"), Ok(C::Show(ShowWhat::Sample)));
        assert_eq!(parse_text("dbxsample off"), Ok(C::DbxSample(false)));
        assert_eq!(
            parse_text("synctrace threshold 10"),
            Ok(C::SyncTrace(SyncTraceSetting::Threshold(
                SyncThreshold::Microseconds(10)
            )))
        );
        assert_eq!(
            parse_text("synctrace threshold all"),
            Ok(C::SyncTrace(SyncTraceSetting::Threshold(
                SyncThreshold::Microseconds(0)
            )))
        );
        assert_eq!(
            parse_text("synctrace threshold calibrate"),
            Ok(C::SyncTrace(SyncTraceSetting::Threshold(
                SyncThreshold::Calibrate
            )))
        );
        assert_eq!(
            parse_text("synctrace on"),
            Ok(C::SyncTrace(SyncTraceSetting::On))
        );
        assert_eq!(parse_text("offcpu on"), Ok(C::OffCpu(true)));
        assert_eq!(parse_text("offcpu off"), Ok(C::OffCpu(false)));
        assert_eq!(parse_text("show offcpu"), Ok(C::Show(ShowWhat::OffCpu)));
        assert_eq!(
            parse_text("synctrace off"),
            Ok(C::SyncTrace(SyncTraceSetting::Off))
        );
        assert_eq!(parse_text("iotrace on"), Ok(C::IoTrace(true)));
        assert_eq!(parse_text("iotrace off"), Ok(C::IoTrace(false)));
        assert_eq!(parse_text("show iotrace"), Ok(C::Show(ShowWhat::IoTrace)));
        assert_eq!(parse_text("mpitrace on"), Ok(C::MpiTrace(true)));
        assert_eq!(parse_text("mpitrace off"), Ok(C::MpiTrace(false)));
        assert_eq!(parse_text("show mpitrace"), Ok(C::Show(ShowWhat::MpiTrace)));
    }

    fn request(name: &str, interval: CounterInterval) -> CounterRequest {
        CounterRequest {
            name: name.into(),
            interval,
            if_available: false,
        }
    }

    #[test]
    fn hwprofile() {
        use CollectorCommand as C;
        use CounterInterval::{Events, Hi, Lo, On};
        assert_eq!(
            parse_text("hwprofile on"),
            Ok(C::HwProfile(HwProfileSetting::On))
        );
        assert_eq!(
            parse_text("hwprofile off"),
            Ok(C::HwProfile(HwProfileSetting::Off))
        );
        assert_eq!(
            parse_text("hwprofile list"),
            Ok(C::HwProfile(HwProfileSetting::List))
        );
        assert_eq!(
            parse_text("hwprofile counter page-faults 1 context-switches hi cycles lo insts"),
            Ok(C::HwProfile(HwProfileSetting::Counters(vec![
                request("page-faults", Events(1)),
                request("context-switches", Hi),
                request("cycles", Lo),
                request("insts", On),
            ])))
        );
        assert_eq!(
            parse_text("hwprofile counter r01c2 1e6 faults 0x100"),
            Ok(C::HwProfile(HwProfileSetting::Counters(vec![
                request("r01c2", Events(1_000_000)),
                request("faults", Events(256)),
            ])))
        );
        let optional = CounterRequest {
            if_available: true,
            ..request("cycles", Events(1000))
        };
        assert_eq!(
            parse_text("hwprofile counter cycles? 1000 page-faults"),
            Ok(C::HwProfile(HwProfileSetting::Counters(vec![
                optional.clone(),
                request("page-faults", On),
            ])))
        );
        assert_eq!(
            parse_counter_list("cycles?,1000,page-faults"),
            Ok(vec![optional, request("page-faults", On)])
        );
        assert_eq!(
            parse_counter_list("?"),
            Err("expected a counter name, got \"?\"".to_string())
        );
    }

    #[test]
    fn counter_lists_as_gprofng_writes_them() {
        use CounterInterval::{Events, Hi, On};
        assert_eq!(
            parse_counter_list("page-faults,1,context-switches"),
            Ok(vec![
                request("page-faults", Events(1)),
                request("context-switches", On)
            ])
        );
        assert_eq!(
            parse_counter_list("cycles,,insts,hi"),
            Ok(vec![request("cycles", On), request("insts", Hi)])
        );
        assert_eq!(
            parse_counter_list("page-faults"),
            Ok(vec![request("page-faults", On)])
        );
        assert_eq!(parse_counter_list("off"), Ok(vec![]));
        for (bad, needle) in [
            ("", "expected a counter name, got \"\""),
            ("1,page-faults", "expected a counter name, got \"1\""),
            ("page-faults,0", "counter \"page-faults\": interval 0"),
            ("page-faults,1,2", "expected a counter name, got \"2\""),
        ] {
            let problem = parse_counter_list(bad).unwrap_err();
            assert!(problem.contains(needle), "{bad:?}: {problem}");
        }
    }

    #[test]
    fn bad_input_is_one_line() {
        for (text, needle) in [
            ("", "missing subcommand"),
            ("frobnicate", "unknown subcommand \"frobnicate\""),
            ("enable now", "unexpected argument \"now\""),
            ("profile maybe", "expected on or off"),
            ("profile timer", "missing interval"),
            ("profile timer 0", "positive number of milliseconds"),
            ("profile depth 0", "stack depth must be 1 to 2048"),
            ("profile depth 5000", "stack depth must be 1 to 2048"),
            ("sample period x", "positive number of seconds"),
            ("sample", "missing periodic"),
            ("limit -3", "positive number of megabytes"),
            ("archive maybe", "expected on, off or copy"),
            ("store filename run", "must end in .er"),
            ("store filename a/b.er", "must not contain"),
            ("store group g.er", "ending in .erg"),
            ("store", "missing directory"),
            ("show things", "nothing called \"things\""),
            ("heaptrace maybe", "expected on or off"),
            ("iotrace maybe", "expected on or off"),
            ("iotrace", "missing on or off"),
            ("mpitrace maybe", "expected on or off"),
            ("mpitrace", "missing on or off"),
            ("mpitrace on now", "unexpected argument \"now\""),
            ("hwprofile counter ?", "expected a counter name, got \"?\""),
            ("synctrace maybe", "expected on, off or threshold"),
            ("synctrace", "missing on, off or threshold"),
            ("synctrace threshold", "missing threshold"),
            ("synctrace threshold 1.5", "threshold in microseconds"),
            ("synctrace threshold -3", "threshold in microseconds"),
            ("synctrace on now", "unexpected argument \"now\""),
            ("hwprofile", "missing on, off, list or counter"),
            ("hwprofile maybe", "expected on, off, list or counter"),
            ("hwprofile list all", "unexpected argument \"all\""),
            ("hwprofile counter", "no counter given"),
            (
                "hwprofile counter 100",
                "expected a counter name, got \"100\"",
            ),
            ("hwprofile counter page-faults 0", "interval 0"),
        ] {
            let message = err(text);
            assert!(message.contains(needle), "{text:?}: {message}");
            assert!(!message.contains('\n'), "{text:?}: {message}");
            assert!(message.contains("usage: collector"), "{text:?}: {message}");
        }
    }
}
