//! Linux (and, where POSIX is enough, other Unix systems).

pub mod fs;
pub mod ipc;
pub mod process;
mod watchdog;

#[cfg(test)]
mod tests;
