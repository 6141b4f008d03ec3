//! Being interrupted (SIGINT, SIGTERM and SIGHUP on Unix; Ctrl-C, Ctrl-Break
//! and closing the console on Windows) in the subcommands that run servers
//! (`call`, `proxy`, `doctor`, `listen`, the app): instead of mcpscope
//! vanishing and leaving the server's children running, every live session
//! runs its shutdown sequence (close stdin, ask the server to stop, then end
//! its whole process tree) and records why in its capture; then mcpscope
//! exits with the status the interrupt stands for (128 + the signal on Unix).
//! A second interrupt exits at once (the sessions' watchdogs still end the
//! server trees).

use mcpscope_core::platform::interrupt::{self, Interrupt};
use mcpscope_core::transport::lifecycle;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// What to do once the sessions were asked to stop.
#[derive(Clone, Copy)]
pub enum Then {
    /// The main thread notices its session ended and returns; exit only if
    /// it has not after `grace` (a backstop).
    Return { grace: Duration },
    /// Nothing on the main thread will notice (the app's event loop): exit
    /// as soon as every session is closed.
    Exit,
}

/// What stopped mcpscope, if something did.
pub fn caught() -> Option<Interrupt> {
    interrupt::caught()
}

/// Installs the handlers. Failing to (very unlikely) leaves the default
/// behaviour, which the watchdogs still make safe.
pub fn install(then: Then) {
    let seen = AtomicU32::new(0);
    interrupt::on_interrupt(move |what| {
        let name = what.name();
        // Verdicts already said come before what is said about the interrupt.
        super::output::write_paced_now();
        if seen.fetch_add(1, Ordering::SeqCst) > 0 {
            crate::errln!("mcpscope: {name} again: exiting now");
            super::output::write_paced_now();
            std::process::exit(i32::from(what.exit_status()));
        }
        lifecycle::request_stop(format!("mcpscope received {name}"));
        let live = lifecycle::live();
        if live > 0 {
            crate::errln!(
                "mcpscope: received {name}: shutting down {live} server session(s) (close stdin, ask to stop, then end \
                 the process tree); {name} again to exit at once"
            );
        }
        let code = i32::from(caught().unwrap_or(what).exit_status());
        match then {
            Then::Exit => {
                lifecycle::wait_idle(Duration::from_secs(30));
                super::output::write_paced_now();
                std::process::exit(code);
            }
            Then::Return { grace } => {
                std::thread::spawn(move || {
                    std::thread::sleep(grace);
                    lifecycle::wait_idle(Duration::from_secs(10));
                    super::output::write_paced_now();
                    std::process::exit(code);
                });
            }
        }
    });
}
