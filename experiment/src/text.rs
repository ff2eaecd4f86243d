//! The text parts of the format: percent-encoding, log lines, the config string and the
//! manifest.
//!
//! [`LineWriter`], [`Config::write_into`], [`Config::write_descendant_into`],
//! [`write_manifest_into`], [`percent_encode_into`], [`percent_decode_into`] and
//! [`config_pairs`] never allocate: libcollector.so uses them in signal handlers and after
//! fork. The parsers ([`parse_log_line`], [`Config::parse`]) allocate.

use crate::counters::{CounterSpec, MAX_COUNTERS};
use crate::layout::{
    BLOCK_SIZE, DEFAULT_STACK_DEPTH, FORMAT_MINOR_VERSION, FORMAT_NAME, FORMAT_VERSION,
    MAX_STACK_DEPTH,
};
use crate::{Error, Result};
use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Longest log line (with its '\n') a writer may produce; readers accept longer ones.
pub const MAX_LOG_LINE: usize = 4096;

/// True for bytes a value must percent-encode: `%`, `=`, `;`, and every byte that is not a
/// printable ASCII character other than space (< 0x21 or >= 0x7f).
pub fn needs_encoding(b: u8) -> bool {
    !(0x21..0x7f).contains(&b) || b == b'%' || b == b'=' || b == b';'
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// Appends bytes to a fixed buffer; once something does not fit, every later write is
/// dropped and `overflow` stays set. Never allocates, never panics.
pub(crate) struct ByteSink<'a> {
    buf: &'a mut [u8],
    len: usize,
    limit: usize,
    overflow: bool,
}

impl<'a> ByteSink<'a> {
    pub(crate) fn new(buf: &'a mut [u8], limit: usize) -> Self {
        let limit = limit.min(buf.len());
        ByteSink {
            buf,
            len: 0,
            limit,
            overflow: false,
        }
    }

    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        if self.overflow {
            return;
        }
        let end = self.len.saturating_add(bytes.len());
        match self.buf.get_mut(self.len..end) {
            Some(dst) if end <= self.limit => {
                dst.copy_from_slice(bytes);
                self.len = end;
            }
            _ => self.overflow = true,
        }
    }

    pub(crate) fn byte(&mut self, b: u8) {
        self.bytes(&[b]);
    }

    pub(crate) fn encoded(&mut self, value: &[u8]) {
        for &b in value {
            if needs_encoding(b) {
                let hex = [
                    b'%',
                    HEX_UPPER[usize::from(b >> 4)],
                    HEX_UPPER[usize::from(b & 15)],
                ];
                self.bytes(&hex);
            } else {
                self.byte(b);
            }
        }
    }

    pub(crate) fn u64(&mut self, mut v: u64) {
        // Digits from the right; u64::MAX has 20.
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        for (i, slot) in digits.iter_mut().enumerate().rev() {
            *slot = b'0' + (v % 10) as u8;
            v /= 10;
            start = i;
            if v == 0 {
                break;
            }
        }
        self.bytes(digits.get(start..).unwrap_or(&[]));
    }

    pub(crate) fn i64(&mut self, v: i64) {
        if v < 0 {
            self.byte(b'-');
        }
        self.u64(v.unsigned_abs());
    }

    pub(crate) fn hex(&mut self, mut v: u64) {
        let mut digits = [0u8; 16];
        let mut start = digits.len();
        for (i, slot) in digits.iter_mut().enumerate().rev() {
            *slot = HEX_LOWER[(v & 15) as usize];
            v >>= 4;
            start = i;
            if v == 0 {
                break;
            }
        }
        self.bytes(b"0x");
        self.bytes(digits.get(start..).unwrap_or(&[]));
    }

    pub(crate) fn finish(self) -> Option<&'a [u8]> {
        if self.overflow {
            return None;
        }
        let buf: &'a [u8] = self.buf;
        buf.get(..self.len)
    }
}

/// Percent-encodes `src` into `dst`; the encoded length, or None if it does not fit.
pub fn percent_encode_into(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    let mut sink = ByteSink::new(dst, usize::MAX);
    sink.encoded(src);
    sink.finish().map(<[u8]>::len)
}

/// Percent-encodes `src` into a new string.
pub fn percent_encode(src: &[u8]) -> String {
    let mut out = String::with_capacity(src.len());
    for &b in src {
        if needs_encoding(b) {
            out.push('%');
            out.push(char::from(HEX_UPPER[usize::from(b >> 4)]));
            out.push(char::from(HEX_UPPER[usize::from(b & 15)]));
        } else {
            out.push(char::from(b));
        }
    }
    out
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%XX` escapes (either case); every other byte stands for itself. Calls `out` for
/// each decoded byte; None on a bad escape.
fn percent_decode_each(src: &[u8], mut out: impl FnMut(u8)) -> Option<()> {
    let mut rest = src;
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let (&[hi, lo], tail) = tail.split_first_chunk::<2>()?;
            out(hex_value(hi)? << 4 | hex_value(lo)?);
            rest = tail;
        } else {
            out(b);
            rest = tail;
        }
    }
    Some(())
}

/// Decodes `src` into `dst`; the decoded length, or None on a bad escape or if it does not
/// fit.
pub fn percent_decode_into(src: &[u8], dst: &mut [u8]) -> Option<usize> {
    let mut sink = ByteSink::new(dst, usize::MAX);
    percent_decode_each(src, |b| sink.byte(b))?;
    sink.finish().map(<[u8]>::len)
}

/// Decodes `src`; an error naming the value on a bad escape.
pub fn percent_decode(src: &str) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(src.len());
    percent_decode_each(src.as_bytes(), |b| out.push(b))
        .ok_or_else(|| Error::BadEncoding(preview(src).into_owned()))?;
    Ok(out)
}

/// Builds one log line, `<mono_ns> <event>[ key=value]*\n`, in a caller's buffer.
///
/// No allocation: usable in a signal handler. Once something does not fit (in the buffer, or
/// in [`MAX_LOG_LINE`] bytes), later calls do nothing and [`LineWriter::finish`] returns None.
/// Event names and keys are written as given (they are fixed tokens: no spaces, no `=`);
/// values are percent-encoded or numbers.
pub struct LineWriter<'a> {
    sink: ByteSink<'a>,
}

impl<'a> LineWriter<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        LineWriter {
            sink: ByteSink::new(buf, MAX_LOG_LINE),
        }
    }

    /// Starts the line: the timestamp and the event name.
    pub fn event(&mut self, timestamp_ns: u64, name: &str) -> &mut Self {
        self.sink.u64(timestamp_ns);
        self.sink.byte(b' ');
        self.sink.bytes(name.as_bytes());
        self
    }

    fn key(&mut self, key: &str) {
        self.sink.byte(b' ');
        self.sink.bytes(key.as_bytes());
        self.sink.byte(b'=');
    }

    /// ` key=value` with the value percent-encoded.
    pub fn str(&mut self, key: &str, value: &[u8]) -> &mut Self {
        self.key(key);
        self.sink.encoded(value);
        self
    }

    /// ` key=value` where the value is `parts` joined by `separator`, percent-encoded
    /// (e.g. argv joined by spaces).
    pub fn str_joined<'b, I>(&mut self, key: &str, parts: I, separator: u8) -> &mut Self
    where
        I: IntoIterator<Item = &'b [u8]>,
    {
        self.key(key);
        for (i, part) in parts.into_iter().enumerate() {
            if i > 0 {
                self.sink.encoded(&[separator]);
            }
            self.sink.encoded(part);
        }
        self
    }

    /// ` key=<decimal>`.
    pub fn u64(&mut self, key: &str, value: u64) -> &mut Self {
        self.key(key);
        self.sink.u64(value);
        self
    }

    /// ` key=<decimal, maybe negative>`.
    pub fn i64(&mut self, key: &str, value: i64) -> &mut Self {
        self.key(key);
        self.sink.i64(value);
        self
    }

    /// ` key=0x<lowercase hex>`.
    pub fn hex(&mut self, key: &str, value: u64) -> &mut Self {
        self.key(key);
        self.sink.hex(value);
        self
    }

    /// True once something did not fit.
    pub fn overflowed(&self) -> bool {
        self.sink.overflow
    }

    /// The whole line, ending in '\n'; None if it did not fit.
    pub fn finish(mut self) -> Option<&'a [u8]> {
        self.sink.byte(b'\n');
        self.sink.finish()
    }
}

/// A log line split into its parts, values decoded (bytes that are not UTF-8 are replaced
/// by U+FFFD; [`crate::log`] keeps paths byte-exact).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawLine {
    pub timestamp_ns: u64,
    pub event: String,
    pub fields: Vec<(String, String)>,
}

impl RawLine {
    /// The decoded value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A log line split without decoding: timestamp, event name, (key, encoded value) pairs.
pub(crate) struct SplitLine<'a> {
    pub timestamp_ns: u64,
    pub event: &'a str,
    pub fields: Vec<(&'a str, &'a str)>,
}

pub(crate) fn split_log_line(line: &str) -> Result<SplitLine<'_>> {
    let bad = |why: &str| Error::BadLogLine(format!("{why}: {:?}", preview(line)));
    let line = line.strip_suffix('\n').unwrap_or(line);
    let mut tokens = line.split(' ').filter(|t| !t.is_empty());
    let timestamp_ns = tokens
        .next()
        .and_then(|t| t.parse::<u64>().ok())
        .ok_or_else(|| bad("no timestamp"))?;
    let event = tokens.next().ok_or_else(|| bad("no event name"))?;
    if event.contains('=') {
        return Err(bad("no event name"));
    }
    let fields = tokens
        .map(|t| match t.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k, v)),
            _ => Err(bad("field without key=value")),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(SplitLine {
        timestamp_ns,
        event,
        fields,
    })
}

/// Parses one log line (with or without its '\n'), decoding the values.
pub fn parse_log_line(line: &str) -> Result<RawLine> {
    let split = split_log_line(line)?;
    let fields = split
        .fields
        .iter()
        .map(|(k, v)| {
            let value = percent_decode(v)?;
            Ok((k.to_string(), String::from_utf8_lossy(&value).into_owned()))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RawLine {
        timestamp_ns: split.timestamp_ns,
        event: split.event.to_string(),
        fields,
    })
}

/// Longest piece of input text an error message quotes.
pub(crate) const PREVIEW_CHARS: usize = 80;

/// `text` cut to [`PREVIEW_CHARS`] characters (with `...` when cut), for error messages: a
/// corrupted file can hold one line of many megabytes.
pub(crate) fn preview(text: &str) -> std::borrow::Cow<'_, str> {
    cut_chars(text, PREVIEW_CHARS)
}

/// `text` cut to `max` characters, with `...` when cut.
pub(crate) fn cut_chars(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => text.into(),
        Some((cut, _)) => format!("{}...", text.get(..cut).unwrap_or_default()).into(),
    }
}

/// Parses a number written as decimal or as `0x` hex.
pub fn parse_u64(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Who starts the collection: the library itself (`rdbx collect`) or the debugger.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    #[default]
    Collect,
    Debugger,
}

/// Synchronization-wait tracing (config key `synctrace`): off, a threshold measured at start,
/// or a threshold given in microseconds (0 = `all`: every wait).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncTrace {
    #[default]
    Off,
    /// 5 times the uncontended mutex lock + unlock time measured at start, at least 1 µs.
    Calibrate,
    /// A wait of at least this many microseconds is recorded; 0 = every wait.
    ThresholdUs(u64),
}

impl SyncTrace {
    /// Parses the config value: `off`, `calibrate`, `all` or a number of microseconds.
    pub fn from_name(text: &str) -> Option<SyncTrace> {
        match text {
            "off" => Some(SyncTrace::Off),
            "calibrate" => Some(SyncTrace::Calibrate),
            "all" => Some(SyncTrace::ThresholdUs(0)),
            _ if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
                text.parse().ok().map(SyncTrace::ThresholdUs)
            }
            _ => None,
        }
    }

    pub fn is_on(self) -> bool {
        self != SyncTrace::Off
    }
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Collect => "collect",
            Mode::Debugger => "debugger",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "collect" => Some(Mode::Collect),
            "debugger" => Some(Mode::Debugger),
            _ => None,
        }
    }
}

/// The collector's configuration (env RDBX_COLLECTOR_CONFIG and the argument of
/// `__rdbx_collector_start`): `key=value` pairs separated by `;`, values percent-encoded.
///
/// Owned (parsing allocates). To re-emit a config without allocating, e.g. in a child after
/// fork, use [`Config::write_descendant_into`] on the parent's parsed config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Experiment directory this process writes (key `expt`).
    pub expt: PathBuf,
    /// Founder experiment directory (key `founder`).
    pub founder: PathBuf,
    /// The pid the config was made for; another pid means a descendant (key `pid`).
    pub pid: u32,
    pub mode: Mode,
    /// Clock-profiling interval, 0 = off (key `profile`).
    pub profile_ns: u64,
    /// Stack depth limit, 1..=2048 (key `depth`).
    pub depth: u32,
    /// Periodic sample interval, 0 = manual only (key `sample`).
    pub sample_ns: u64,
    /// Data limit in bytes, 0 = none (key `limit`).
    pub limit_bytes: u64,
    /// Collect descendants (key `follow`, 1 | 0).
    pub follow: bool,
    /// Signal toggling pause/resume, 0 = none.
    pub pause_signal: i32,
    /// Signal recording a sample, 0 = none.
    pub sample_signal: i32,
    /// Start paused (key `paused`, 1 | 0).
    pub paused: bool,
    /// Trace the malloc family and anonymous mmap (key `heaptrace`, 1 | 0).
    pub heaptrace: bool,
    /// Trace synchronization waits (key `synctrace`).
    pub synctrace: SyncTrace,
    /// Trace file I/O calls (key `iotrace`, 1 | 0; format 1.4).
    pub iotrace: bool,
    /// Record each switch off the CPU (key `offcpu`, 1 | 0; format 1.4).
    pub offcpu: bool,
    /// Counters to profile on, in order (key `counter`, repeated, one per counter;
    /// format 1.5). At most [`crate::counters::MAX_COUNTERS`].
    pub counters: Vec<CounterSpec>,
    /// Trace MPI calls (key `mpitrace`, 1 | 0; format 1.6).
    pub mpitrace: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            expt: PathBuf::new(),
            founder: PathBuf::new(),
            pid: 0,
            mode: Mode::Collect,
            profile_ns: 10_000_000,
            depth: DEFAULT_STACK_DEPTH as u32,
            sample_ns: 1_000_000_000,
            limit_bytes: 0,
            follow: true,
            pause_signal: 0,
            sample_signal: 0,
            paused: false,
            heaptrace: false,
            synctrace: SyncTrace::Off,
            iotrace: false,
            offcpu: false,
            counters: Vec::new(),
            mpitrace: false,
        }
    }
}

/// The `(key, encoded value)` pairs of a config string, without allocating. Empty pieces
/// (e.g. after a trailing `;`) and pieces without `=` are skipped.
pub fn config_pairs(config: &str) -> impl Iterator<Item = (&str, &str)> {
    config
        .split(';')
        .filter_map(|piece| piece.split_once('='))
        .filter(|(key, _)| !key.is_empty())
}

/// Highest signal number Linux has (SIGRTMAX).
const MAX_SIGNAL: i32 = 64;

impl Config {
    /// Parses a config string. Unknown keys are ignored; missing keys keep their defaults; a
    /// bad value is an error naming the key.
    pub fn parse(config: &str) -> Result<Config> {
        let mut out = Config::default();
        for (key, encoded) in config_pairs(config) {
            let bad = || Error::BadConfig {
                key: preview(key).into_owned(),
                value: preview(encoded).into_owned(),
            };
            let value = percent_decode(encoded).map_err(|_| bad())?;
            let text = std::str::from_utf8(&value).map_err(|_| bad());
            match key {
                "expt" => out.expt = PathBuf::from(OsStr::from_bytes(&value)),
                "founder" => out.founder = PathBuf::from(OsStr::from_bytes(&value)),
                "pid" => out.pid = text?.parse().map_err(|_| bad())?,
                "mode" => out.mode = Mode::from_name(text?).ok_or_else(bad)?,
                "profile" => out.profile_ns = text?.parse().map_err(|_| bad())?,
                "depth" => {
                    out.depth = text?
                        .parse()
                        .ok()
                        .filter(|d| (1..=MAX_STACK_DEPTH as u32).contains(d))
                        .ok_or_else(bad)?
                }
                "sample" => out.sample_ns = text?.parse().map_err(|_| bad())?,
                "limit" => out.limit_bytes = text?.parse().map_err(|_| bad())?,
                "follow" => out.follow = parse_flag(text?).ok_or_else(bad)?,
                "pause_signal" => out.pause_signal = parse_signal(text?).ok_or_else(bad)?,
                "sample_signal" => out.sample_signal = parse_signal(text?).ok_or_else(bad)?,
                "paused" => out.paused = parse_flag(text?).ok_or_else(bad)?,
                "heaptrace" => out.heaptrace = parse_flag(text?).ok_or_else(bad)?,
                "synctrace" => out.synctrace = SyncTrace::from_name(text?).ok_or_else(bad)?,
                "iotrace" => out.iotrace = parse_flag(text?).ok_or_else(bad)?,
                "offcpu" => out.offcpu = parse_flag(text?).ok_or_else(bad)?,
                "mpitrace" => out.mpitrace = parse_flag(text?).ok_or_else(bad)?,
                "counter" => {
                    if out.counters.len() >= MAX_COUNTERS {
                        return Err(bad());
                    }
                    out.counters
                        .push(CounterSpec::parse(text?).ok_or_else(bad)?);
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// The config string (allocates; see [`Config::write_into`] for the no-alloc form).
    pub fn to_config_string(&self) -> String {
        self.to_string()
    }

    /// Writes the config string into `buf` without allocating; its length, or None if it
    /// does not fit. No NUL is added.
    pub fn write_into(&self, buf: &mut [u8]) -> Option<usize> {
        self.write_descendant_into(self.expt.as_os_str().as_bytes(), self.pid, buf)
    }

    /// Writes this config with `expt` and `pid` replaced (a descendant's config) into `buf`
    /// without allocating; its length, or None if it does not fit.
    pub fn write_descendant_into(&self, expt: &[u8], pid: u32, buf: &mut [u8]) -> Option<usize> {
        let mut sink = ByteSink::new(buf, usize::MAX);
        self.emit(&mut sink, expt, pid);
        sink.finish().map(<[u8]>::len)
    }

    fn emit(&self, sink: &mut ByteSink<'_>, expt: &[u8], pid: u32) {
        let key = |sink: &mut ByteSink<'_>, key: &str| {
            if key != "expt" {
                sink.byte(b';');
            }
            sink.bytes(key.as_bytes());
            sink.byte(b'=');
        };
        key(sink, "expt");
        sink.encoded(expt);
        key(sink, "founder");
        sink.encoded(self.founder.as_os_str().as_bytes());
        key(sink, "pid");
        sink.u64(u64::from(pid));
        key(sink, "mode");
        sink.bytes(self.mode.name().as_bytes());
        key(sink, "profile");
        sink.u64(self.profile_ns);
        key(sink, "depth");
        sink.u64(u64::from(self.depth));
        key(sink, "sample");
        sink.u64(self.sample_ns);
        key(sink, "limit");
        sink.u64(self.limit_bytes);
        key(sink, "follow");
        sink.u64(u64::from(self.follow));
        key(sink, "pause_signal");
        sink.i64(i64::from(self.pause_signal));
        key(sink, "sample_signal");
        sink.i64(i64::from(self.sample_signal));
        key(sink, "paused");
        sink.u64(u64::from(self.paused));
        key(sink, "heaptrace");
        sink.u64(u64::from(self.heaptrace));
        key(sink, "synctrace");
        match self.synctrace {
            SyncTrace::Off => sink.bytes(b"off"),
            SyncTrace::Calibrate => sink.bytes(b"calibrate"),
            SyncTrace::ThresholdUs(0) => sink.bytes(b"all"),
            SyncTrace::ThresholdUs(us) => sink.u64(us),
        }
        key(sink, "iotrace");
        sink.u64(u64::from(self.iotrace));
        key(sink, "offcpu");
        sink.u64(u64::from(self.offcpu));
        key(sink, "mpitrace");
        sink.u64(u64::from(self.mpitrace));
        for counter in &self.counters {
            key(sink, "counter");
            for n in counter.numbers() {
                sink.u64(n);
                sink.encoded(b":");
            }
            sink.encoded(counter.name.as_bytes());
        }
    }
}

fn parse_flag(text: &str) -> Option<bool> {
    match text {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }
}

fn parse_signal(text: &str) -> Option<i32> {
    text.parse().ok().filter(|s| (0..=MAX_SIGNAL).contains(s))
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Grow a buffer until the config fits (paths are at most a few KiB).
        let mut size = 1024;
        loop {
            let mut buf = vec![0u8; size];
            if let Some(len) = self.write_into(&mut buf) {
                let text = buf.get(..len).unwrap_or(&[]);
                return f.write_str(&String::from_utf8_lossy(text));
            }
            size *= 4;
        }
    }
}

/// Writes the manifest text into `buf` without allocating; its length, or None if it does
/// not fit. `files` is e.g. `log,profile,stacks`; `kinds` e.g. `clock-profile` or empty;
/// `created_by` e.g. `libcollector 0.1.0`.
pub fn write_manifest_into(
    buf: &mut [u8],
    files: &str,
    kinds: &str,
    created_by: &str,
) -> Option<usize> {
    let mut sink = ByteSink::new(buf, usize::MAX);
    sink.bytes(b"format=");
    sink.bytes(FORMAT_NAME.as_bytes());
    sink.bytes(b"\nversion=");
    sink.u64(u64::from(FORMAT_VERSION));
    sink.byte(b'.');
    sink.u64(u64::from(FORMAT_MINOR_VERSION));
    sink.bytes(b"\nblock_size=");
    sink.u64(BLOCK_SIZE as u64);
    sink.bytes(b"\nfiles=");
    sink.bytes(files.as_bytes());
    sink.bytes(b"\nkinds=");
    sink.bytes(kinds.as_bytes());
    sink.bytes(b"\ncreated_by=");
    sink.bytes(created_by.as_bytes());
    sink.byte(b'\n');
    sink.finish().map(<[u8]>::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(f: impl FnOnce(&mut LineWriter<'_>)) -> Option<Vec<u8>> {
        let mut buf = [0u8; MAX_LOG_LINE];
        let mut w = LineWriter::new(&mut buf);
        f(&mut w);
        w.finish().map(<[u8]>::to_vec)
    }

    #[test]
    fn line_writer_formats() {
        let out = line(|w| {
            w.event(123, "object")
                .str("path", b"/lib/x.so")
                .hex("base", 0x7f00_0000_0000)
                .u64("n", 0)
                .i64("code", -9)
                .hex("zero", 0);
        })
        .unwrap();
        assert_eq!(
            out,
            b"123 object path=/lib/x.so base=0x7f0000000000 n=0 code=-9 zero=0x0\n"
        );
        let extremes = line(|w| {
            w.event(u64::MAX, "x")
                .i64("a", i64::MIN)
                .u64("b", u64::MAX)
                .hex("c", u64::MAX);
        })
        .unwrap();
        assert_eq!(
            extremes,
            b"18446744073709551615 x a=-9223372036854775808 b=18446744073709551615 c=0xffffffffffffffff\n"
        );
    }

    #[test]
    fn percent_encoding_edges() {
        let nasty: Vec<u8> = b"a b=c%d;e\t\n\x7f\xff\x00~!".to_vec();
        let out = line(|w| {
            w.event(1, "warning").str("msg", &nasty).str("empty", b"");
        })
        .unwrap();
        assert_eq!(
            out,
            b"1 warning msg=a%20b%3Dc%25d%3Be%09%0A%7F%FF%00~! empty=\n"
        );
        let parsed = parse_log_line(std::str::from_utf8(&out).unwrap()).unwrap();
        assert_eq!(parsed.event, "warning");
        assert_eq!(parsed.get("empty"), Some(""));
        assert_eq!(
            percent_decode("a%20b%3dc%25d%3Be%09%0A%7F%FF%00~!").unwrap(),
            nasty
        );
        assert_eq!(percent_encode(&nasty), "a%20b%3Dc%25d%3Be%09%0A%7F%FF%00~!");
        // Every byte survives a roundtrip.
        let all: Vec<u8> = (0..=255).collect();
        let mut enc = [0u8; 768];
        let n = percent_encode_into(&all, &mut enc).unwrap();
        let mut dec = [0u8; 256];
        let m = percent_decode_into(&enc[..n], &mut dec).unwrap();
        assert_eq!(&dec[..m], &all[..]);
        assert_eq!(percent_encode_into(&all, &mut enc[..100]), None);
        assert!(percent_decode("%").is_err());
        assert!(percent_decode("%4").is_err());
        assert!(percent_decode("%zz").is_err());
        assert_eq!(percent_decode_into(b"%41%42", &mut [0u8; 1]), None);
    }

    #[test]
    fn joined_args() {
        let args: [&[u8]; 3] = [b"prog", b"-x", b"two words"];
        let out = line(|w| {
            w.event(5, "start")
                .str_joined("args", args.iter().copied(), b' ');
        })
        .unwrap();
        assert_eq!(out, b"5 start args=prog%20-x%20two%20words\n");
    }

    #[test]
    fn line_writer_overflow() {
        let mut small = [0u8; 16];
        let mut w = LineWriter::new(&mut small);
        w.event(1, "sample").u64("number", 12345);
        assert!(w.overflowed());
        assert_eq!(w.finish(), None);
        // Exactly fitting, with the newline.
        let mut exact = [0u8; 9];
        let mut w = LineWriter::new(&mut exact);
        w.event(12, "end").u64("a", 1);
        assert!(w.overflowed());
        let mut exact = [0u8; 7];
        let mut w = LineWriter::new(&mut exact);
        w.event(12, "end");
        assert_eq!(w.finish(), Some(&b"12 end\n"[..]));
        let mut no_room_for_newline = [0u8; 6];
        let mut w = LineWriter::new(&mut no_room_for_newline);
        w.event(12, "end");
        assert_eq!(w.finish(), None);
        // Never longer than MAX_LOG_LINE, whatever the buffer.
        let mut big = vec![0u8; 3 * MAX_LOG_LINE];
        let mut w = LineWriter::new(&mut big);
        w.event(1, "warning").str("msg", &[b' '; 1400]);
        assert_eq!(w.finish(), None);
    }

    #[test]
    fn parse_log_line_cases() {
        let l = parse_log_line("42 end").unwrap();
        assert_eq!((l.timestamp_ns, l.event.as_str()), (42, "end"));
        assert!(l.fields.is_empty());
        let l = parse_log_line("42 sample number=1 label=a%20b\n").unwrap();
        assert_eq!(l.get("number"), Some("1"));
        assert_eq!(l.get("label"), Some("a b"));
        assert_eq!(l.get("nope"), None);
        let l = parse_log_line("7 x k==v").unwrap();
        assert_eq!(l.get("k"), Some("=v"));
        assert!(parse_log_line("").is_err());
        assert!(parse_log_line("x end").is_err());
        assert!(parse_log_line("12").is_err());
        assert!(parse_log_line("12 a=b").is_err());
        assert!(parse_log_line("12 end junk").is_err());
        assert!(parse_log_line("12 end =v").is_err());
        assert!(parse_log_line("12 end k=%G0").is_err());
        assert_eq!(parse_u64("0x1F"), Some(31));
        assert_eq!(parse_u64("31"), Some(31));
        assert_eq!(parse_u64("-1"), None);
    }

    #[test]
    fn config_roundtrip() {
        let c = Config {
            expt: "/tmp/a dir;x/test.1.er".into(),
            founder: "/tmp/a dir;x/test.1.er".into(),
            pid: 4321,
            mode: Mode::Debugger,
            profile_ns: 1_000_000,
            depth: 2048,
            sample_ns: 0,
            limit_bytes: 1 << 30,
            follow: false,
            pause_signal: 12,
            sample_signal: 10,
            paused: true,
            heaptrace: true,
            synctrace: SyncTrace::ThresholdUs(250),
            iotrace: true,
            offcpu: true,
            counters: vec![
                CounterSpec::parse("1:2:0:0:100:1:page-faults").unwrap(),
                CounterSpec::parse("4:60:0:0:1000003:0:cpu/event=0x3c;x=1/").unwrap(),
            ],
            mpitrace: true,
        };
        let s = c.to_config_string();
        assert!(s.starts_with("expt=/tmp/a%20dir%3Bx/test.1.er;founder="));
        assert_eq!(Config::parse(&s).unwrap(), c);
        assert_eq!(Config::parse("").unwrap(), Config::default());
        let d = Config::default();
        assert_eq!(d.profile_ns, 10_000_000);
        assert_eq!(d.depth, 256);
        assert_eq!(d.sample_ns, 1_000_000_000);
        assert!(d.follow && !d.paused);
        assert_eq!(Config::parse(&d.to_string()).unwrap(), d);
        // Unknown keys and empty pieces are ignored.
        let c2 = Config::parse("future=1;;pid=9;mode=collect;").unwrap();
        assert_eq!(c2.pid, 9);
        // At most MAX_COUNTERS counters.
        let many = "counter=1:2:0:0:100:1:page-faults;".repeat(MAX_COUNTERS);
        assert_eq!(Config::parse(&many).unwrap().counters.len(), MAX_COUNTERS);
        let too_many = format!("{many}counter=1:3:0:0:100:0:context-switches");
        assert!(Config::parse(&too_many).is_err());
    }

    #[test]
    fn config_descendant_without_alloc() {
        let c = Config {
            expt: "/e/test.1.er".into(),
            founder: "/e/test.1.er".into(),
            pid: 100,
            ..Config::default()
        };
        let mut buf = [0u8; 512];
        let n = c
            .write_descendant_into(b"/e/test.1.er/_f1.er", 101, &mut buf)
            .unwrap();
        let child = Config::parse(std::str::from_utf8(&buf[..n]).unwrap()).unwrap();
        assert_eq!(child.expt, PathBuf::from("/e/test.1.er/_f1.er"));
        assert_eq!(child.founder, c.founder);
        assert_eq!(child.pid, 101);
        assert_eq!(child.profile_ns, c.profile_ns);
        assert_eq!(c.write_into(&mut buf[..20]), None);
        let pairs: Vec<_> = config_pairs("a=1;b=%20;;c").collect();
        assert_eq!(pairs, [("a", "1"), ("b", "%20")]);
    }

    #[test]
    fn config_errors_name_the_key() {
        for (input, key) in [
            ("pid=-1", "pid"),
            ("mode=batch", "mode"),
            ("depth=0", "depth"),
            ("depth=2049", "depth"),
            ("profile=1ms", "profile"),
            ("follow=yes", "follow"),
            ("paused=2", "paused"),
            ("pause_signal=65", "pause_signal"),
            ("sample_signal=x", "sample_signal"),
            ("limit=", "limit"),
            ("expt=%zz", "expt"),
            ("mpitrace=on", "mpitrace"),
        ] {
            let err = Config::parse(input).unwrap_err();
            match &err {
                Error::BadConfig { key: k, .. } => assert_eq!(k, key, "{input}"),
                other => panic!("{input}: {other}"),
            }
            assert!(err.to_string().contains(key), "{err}");
        }
    }

    #[test]
    fn manifest_text() {
        let mut buf = [0u8; 256];
        let n = write_manifest_into(
            &mut buf,
            "log,profile,stacks,heap",
            "clock-profile,heap-trace",
            "libcollector 0.1.0",
        )
        .unwrap();
        assert_eq!(
            std::str::from_utf8(&buf[..n]).unwrap(),
            "format=rdbx-experiment\nversion=1.6\nblock_size=65536\nfiles=log,profile,stacks,heap\n\
             kinds=clock-profile,heap-trace\ncreated_by=libcollector 0.1.0\n"
        );
        assert_eq!(write_manifest_into(&mut buf[..10], "log", "", "x"), None);
    }
}
