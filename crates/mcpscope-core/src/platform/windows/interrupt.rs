//! Being asked from outside to stop: Ctrl-C, Ctrl-Break, closing the
//! console window, logging off and shutting down (console control events).
//!
//! The system calls the handler on a thread of its own. For the last three
//! it ends the process once the handler returns (after five seconds at
//! most), so the handler waits there for mcpscope to finish its shutdown.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use windows_sys::Win32::System::Console::{
    CTRL_BREAK_EVENT, CTRL_C_EVENT, CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT, SetConsoleCtrlHandler,
};

/// A request to stop: here, the console control event that carried it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupt(u32);

impl Interrupt {
    pub fn name(self) -> &'static str {
        match self.0 {
            CTRL_C_EVENT => "Ctrl-C",
            CTRL_BREAK_EVENT => "Ctrl-Break",
            CTRL_CLOSE_EVENT => "the console window closing",
            CTRL_LOGOFF_EVENT => "the user logging off",
            CTRL_SHUTDOWN_EVENT => "the system shutting down",
            _ => "a console control event",
        }
    }

    /// The status mcpscope ends with: as Unix shells report the signal
    /// each stands for (Ctrl-C 130 = SIGINT, Ctrl-Break 149 = SIGBREAK,
    /// the rest 129 = SIGHUP), so scripts see the same on every system.
    pub fn exit_status(self) -> u8 {
        match self.0 {
            CTRL_C_EVENT => 130,
            CTRL_BREAK_EVENT => 149,
            _ => 129,
        }
    }
}

const NONE: u32 = u32::MAX;
static CAUGHT: AtomicU32 = AtomicU32::new(NONE);
type Handler = Box<dyn Fn(Interrupt) + Send + Sync>;
static HANDLER: OnceLock<Handler> = OnceLock::new();

/// The first interrupt since [`on_interrupt`] was called, if one came.
pub fn caught() -> Option<Interrupt> {
    match CAUGHT.load(Ordering::SeqCst) {
        NONE => None,
        event => Some(Interrupt(event)),
    }
}

unsafe extern "system" fn on_event(event: u32) -> windows_sys::core::BOOL {
    let _ = CAUGHT.compare_exchange(NONE, event, Ordering::SeqCst, Ordering::SeqCst);
    // A second event while the first is still handled runs on a thread of
    // its own too: the handler counts it and exits at once.
    if let Some(handle) = HANDLER.get() {
        handle(Interrupt(event));
    }
    if matches!(event, CTRL_CLOSE_EVENT | CTRL_LOGOFF_EVENT | CTRL_SHUTDOWN_EVENT) {
        // Returning lets the system end the process now: give the shutdown
        // the time the system allows (the handler exits the process itself
        // when it is done).
        std::thread::sleep(std::time::Duration::from_millis(4500));
    }
    1
}

/// Calls `handle` for each interrupt from now on, on the thread the system
/// gives the event. Failing to install leaves the default behaviour.
/// Only the first call counts.
pub fn on_interrupt(handle: impl Fn(Interrupt) + Send + Sync + 'static) {
    if HANDLER.set(Box::new(handle)).is_err() {
        return;
    }
    // SAFETY: installs a handler that only touches statics.
    unsafe { SetConsoleCtrlHandler(Some(on_event), 1) };
}

/// The status of a command whose stdout was closed under it: 232, the
/// system's ERROR_NO_DATA ("the pipe is being closed").
pub const STDOUT_CLOSED_STATUS: u8 = windows_sys::Win32::Foundation::ERROR_NO_DATA as u8;
