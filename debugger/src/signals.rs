//! Signal names, descriptions, and which signals stop the target.

use nix::sys::signal::Signal;

/// What the debugger does when the target receives a signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disposition {
    /// Stop and return to the user (dbx `catch`); otherwise pass it silently (`ignore`).
    pub stop: bool,
    /// Deliver the signal to the program when it is resumed.
    pub pass: bool,
}

/// Per-signal dispositions, with gdb's defaults.
#[derive(Debug, Clone)]
pub struct SignalTable {
    table: [Disposition; 65],
}

impl Default for SignalTable {
    fn default() -> Self {
        let mut table = [Disposition {
            stop: true,
            pass: true,
        }; 65];
        let silent = [
            libc::SIGCHLD,
            libc::SIGWINCH,
            libc::SIGPROF,
            libc::SIGALRM,
            libc::SIGIO,
            libc::SIGURG,
            libc::SIGVTALRM,
            // As dbx: a continued process is no news.
            libc::SIGCONT,
        ];
        for sig in silent {
            table[sig as usize].stop = false;
        }
        // Like gdb, SIGINT stops the program and is not passed on: it is how
        // the user interrupts it.
        table[libc::SIGINT as usize].pass = false;
        // SIGTRAP is the debugger's own; it is never passed by default.
        table[libc::SIGTRAP as usize].pass = false;
        SignalTable { table }
    }
}

impl SignalTable {
    pub fn get(&self, signal: i32) -> Disposition {
        self.table
            .get(signal as usize)
            .copied()
            .unwrap_or(Disposition {
                stop: true,
                pass: true,
            })
    }

    pub fn set(&mut self, signal: i32, disposition: Disposition) {
        if let Some(slot) = self.table.get_mut(signal as usize) {
            *slot = disposition;
        }
    }

    /// Signals the program must not get (bit n for signal n).
    pub fn not_passed_mask(&self) -> u64 {
        (1..64)
            .filter(|&s| !self.table[s as usize].pass)
            .fold(0, |mask, s| mask | (1u64 << s))
    }

    /// The signals that currently stop the target.
    pub fn caught(&self) -> Vec<i32> {
        (1..65).filter(|&s| self.table[s as usize].stop).collect()
    }

    /// The signals that are passed without stopping.
    pub fn ignored(&self) -> Vec<i32> {
        (1..65).filter(|&s| !self.table[s as usize].stop).collect()
    }
}

/// `SIGSEGV`, or `SIG34` for real-time signals without a name.
pub fn signal_name(signal: i32) -> String {
    match Signal::try_from(signal) {
        Ok(sig) => sig.as_str().to_string(),
        Err(_) => format!("SIG{signal}"),
    }
}

/// The C library's description: "Segmentation fault".
pub fn signal_description(signal: i32) -> String {
    // SAFETY: strsignal returns a pointer to a static or thread-local string.
    let text = unsafe { libc::strsignal(signal) };
    if text.is_null() {
        return format!("Signal {signal}");
    }
    // SAFETY: non-null, NUL-terminated, valid until the next strsignal call.
    unsafe { std::ffi::CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// Parses `SIGSEGV`, `SEGV`, `segv` or a number.
pub fn parse_signal(text: &str) -> Option<i32> {
    if let Ok(n) = text.parse::<i32>() {
        return (1..65).contains(&n).then_some(n);
    }
    let upper = text.to_ascii_uppercase();
    let name = if upper.starts_with("SIG") {
        upper
    } else {
        format!("SIG{upper}")
    };
    name.parse::<Signal>().ok().map(|s| s as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_gdb() {
        let table = SignalTable::default();
        assert!(table.get(libc::SIGSEGV).stop);
        assert!(table.get(libc::SIGINT).stop);
        assert!(!table.get(libc::SIGCHLD).stop);
        assert!(table.get(libc::SIGCHLD).pass);
        assert!(!table.get(libc::SIGPROF).stop);
    }

    #[test]
    fn names_parse_in_every_spelling() {
        assert_eq!(parse_signal("SIGSEGV"), Some(libc::SIGSEGV));
        assert_eq!(parse_signal("segv"), Some(libc::SIGSEGV));
        assert_eq!(parse_signal("10"), Some(10));
        assert_eq!(parse_signal("SIGNOPE"), None);
        assert_eq!(signal_name(libc::SIGABRT), "SIGABRT");
        assert_eq!(signal_description(libc::SIGSEGV), "Segmentation fault");
    }
}
