//! What this process's memory holds, for `STRADS_EXPLAIN`'s memory lines: its peak
//! resident set (the kernel's `VmHWM`) and sizes written in MiB.

/// The peak resident set of this process in bytes (`VmHWM` of `/proc/self/status`), or
/// `None` where the kernel does not say (not Linux, or no `/proc`).
pub(crate) fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    vm_hwm(&status)
}

/// `VmHWM` of a `/proc/<pid>/status` text, in bytes.
fn vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let mut words = line["VmHWM:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => Some(value * 1024),
        _ => None,
    }
}

/// `bytes` in MiB, one decimal.
pub(crate) fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// This process's peak as a phrase for an explain line.
pub(crate) fn peak_phrase() -> String {
    match peak_rss() {
        Some(b) => format!("peak resident {}", mib(b)),
        None => "peak resident unknown here".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_peak_of_a_status_text() {
        let status = "Name:\tx\nVmPeak:\t  20000 kB\nVmHWM:\t    1536 kB\nVmRSS:\t 1024 kB\n";
        assert_eq!(vm_hwm(status), Some(1536 * 1024));
        assert_eq!(vm_hwm("VmHWM:\t12 MB\n"), None);
        assert_eq!(vm_hwm("Name:\tx\n"), None);
        assert_eq!(mib(3 << 19), "1.5 MiB");
        // This process has a peak where the kernel reports one.
        if cfg!(target_os = "linux") {
            assert!(peak_rss().is_some_and(|b| b > 0));
        }
    }
}
