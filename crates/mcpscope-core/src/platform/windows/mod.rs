//! Windows: Job Objects for process trees, console control events for
//! stopping, named pipes for the control channel, protected owner-only ACLs
//! for private files.

pub mod fs;
pub mod interrupt;
pub mod ipc;
pub mod net;
pub mod process;
mod security;

#[cfg(test)]
mod tests;

/// `s` as a NUL-terminated UTF-16 string, for the system's `W` calls.
fn wide(s: &std::ffi::OsStr) -> Vec<u16> {
    use std::os::windows::ffi::OsStrExt;
    s.encode_wide().chain(std::iter::once(0)).collect()
}
