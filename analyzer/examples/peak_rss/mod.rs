//! The peak RSS of the running example, for the examples that time
//! analyzer commands one by one (a directory without `main.rs`: a module
//! they share, not an example).

/// The peak starts again from the current RSS (Linux's clear_refs).
pub fn reset() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The peak RSS since the last [`reset`], in MiB.
pub fn mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024)
}
