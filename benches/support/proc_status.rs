//! Memory figures of the running process for the benches (Linux): one
//! field of `/proc/self/status`, in kB. Shared by the benches of both
//! crates through `#[path]`, so that every bench reads memory the same way.

/// `VmRSS:` (resident now) or `VmHWM:` (peak resident), in kB; 0 where
/// `/proc` has no such field.
pub fn vm_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
