//! Signal names and numbers as Linux x86-64 defines them.

use std::fmt;

/// A signal number between 1 and 64, checked when parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Signal(i32);

/// Standard signals, indexed by number - 1.
const NAMES: [&str; 31] = [
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

/// Other names the same numbers go by.
const SYNONYMS: [(&str, i32); 4] = [
    ("SIGIOT", 6),
    ("SIGPOLL", 29),
    ("SIGCLD", 17),
    ("SIGUNUSED", 31),
];

const RTMIN: i32 = 34;
const RTMAX: i32 = 64;

impl Signal {
    pub const SIGINT: Signal = Signal(2);
    pub const SIGTRAP: Signal = Signal(5);
    pub const SIGKILL: Signal = Signal(9);
    pub const SIGSEGV: Signal = Signal(11);
    pub const SIGSTOP: Signal = Signal(19);

    /// Accepts `SIGSEGV`, `SEGV`, `segv`, `11`, `SIGRTMIN+2`, `SIGRTMAX`.
    pub fn parse(text: &str) -> Option<Signal> {
        if let Ok(number) = text.parse::<i32>() {
            return Signal::from_number(number);
        }
        let upper = text.to_ascii_uppercase();
        let name = if upper.starts_with("SIG") {
            upper
        } else {
            format!("SIG{upper}")
        };
        if let Some(index) = NAMES.iter().position(|n| *n == name) {
            return Some(Signal(index as i32 + 1));
        }
        if let Some((_, number)) = SYNONYMS.iter().find(|(n, _)| *n == name) {
            return Some(Signal(*number));
        }
        Self::parse_realtime(&name)
    }

    fn parse_realtime(name: &str) -> Option<Signal> {
        let (base, rest) = if let Some(rest) = name.strip_prefix("SIGRTMIN") {
            (RTMIN, rest)
        } else if let Some(rest) = name.strip_prefix("SIGRTMAX") {
            (RTMAX, rest)
        } else {
            // gdb calls real-time signals SIG34 .. SIG64.
            let number = name.strip_prefix("SIG")?.parse::<i32>().ok()?;
            return Signal::from_number(number);
        };
        let offset = match rest.as_bytes().first() {
            None => 0,
            Some(b'+') => rest[1..].parse::<i32>().ok()?,
            Some(b'-') => -rest[1..].parse::<i32>().ok()?,
            Some(_) => return None,
        };
        let number = base + offset;
        (RTMIN..=RTMAX).contains(&number).then_some(Signal(number))
    }

    pub fn from_number(number: i32) -> Option<Signal> {
        (1..=RTMAX).contains(&number).then_some(Signal(number))
    }

    pub fn number(self) -> i32 {
        self.0
    }

    /// The standard signals that a debugger may sensibly stop on, for
    /// `handle all`: like gdb, not SIGINT and SIGTRAP (the debugger's own),
    /// nor SIGKILL and SIGSTOP (which cannot be intercepted).
    pub fn all_handleable() -> Vec<Signal> {
        (1..=NAMES.len() as i32)
            .map(Signal)
            .filter(|s| ![Self::SIGINT, Self::SIGTRAP, Self::SIGKILL, Self::SIGSTOP].contains(s))
            .collect()
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            n @ 1..=31 => f.write_str(NAMES[n as usize - 1]),
            RTMIN => f.write_str("SIGRTMIN"),
            RTMAX => f.write_str("SIGRTMAX"),
            n if n > RTMIN => write!(f, "SIGRTMIN+{}", n - RTMIN),
            n => write!(f, "SIG{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_every_spelling() {
        for text in ["SIGSEGV", "SEGV", "segv", "sigsegv", "11"] {
            assert_eq!(Signal::parse(text), Some(Signal::SIGSEGV), "{text}");
        }
        assert_eq!(Signal::parse("SIGIOT").map(Signal::number), Some(6));
        assert_eq!(Signal::parse("SIGRTMIN+2").map(Signal::number), Some(36));
        assert_eq!(Signal::parse("rtmax").map(Signal::number), Some(64));
        assert_eq!(Signal::parse("SIG40").map(Signal::number), Some(40));
    }

    #[test]
    fn bad_names_are_rejected() {
        for text in ["SIGFOO", "0", "65", "-1", "SIGRTMAX+1", "", "SIGRTMINx"] {
            assert_eq!(Signal::parse(text), None, "{text}");
        }
    }

    #[test]
    fn display_gives_canonical_name() {
        assert_eq!(Signal::parse("segv").unwrap().to_string(), "SIGSEGV");
        assert_eq!(Signal::parse("36").unwrap().to_string(), "SIGRTMIN+2");
        assert_eq!(Signal::parse("33").unwrap().to_string(), "SIG33");
        assert!(!Signal::all_handleable().contains(&Signal::SIGTRAP));
    }
}
