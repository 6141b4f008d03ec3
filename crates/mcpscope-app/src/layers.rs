//! The order of the app's modules, kept by a test as the core's are: a
//! module may use the floors below its own, never one above, nor a sibling
//! on its own floor. From the bottom: helpers (theme, workers, memory), the
//! models, the session's owners, the panels, the session ([`crate::inspection`]),
//! a chat with a model over it ([`crate::live_chat`]), the composer, the tabs, and the app shell ([`crate::app`]) at the top.
//!
//! What counts as a use, and what is skipped, is `mcpscope-layers`', the
//! checker the core's layers test uses too.

/// Each top-level module and its floor, lowest first.
const FLOORS: &[(&str, u8)] = &[
    ("job", 0),
    ("memory", 0),
    ("remote_proxies", 0),
    ("saved_server", 0),
    ("theme", 0),
    ("traces", 0),
    ("app_host", 1),
    ("error_view", 1),
    ("tokens", 1),
    ("live_follow", 2),
    ("sign_in", 2),
    ("live_pilot", 3),
    ("panels", 4),
    ("intercept_link", 5),
    ("inspection", 6),
    ("live_chat", 7),
    ("composer", 8),
    ("restore", 9),
    ("tabs", 10),
    ("app", 11),
];

mod tests {
    use super::FLOORS;
    use std::path::Path;

    /// What differs between systems is the core's platform layer's: the
    /// app is the same code on every system.
    #[test]
    fn the_app_names_no_operating_system() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let found = mcpscope_layers::os_specific_uses(&src, &[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            found.is_empty(),
            "OS-specific code in the app (move it behind a type in mcpscope_core::platform): {found:?}"
        );
    }

    #[test]
    fn no_module_uses_one_above_it() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let upward = mcpscope_layers::upward_uses(&src, FLOORS, &[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            upward.is_empty(),
            "upward uses (a module may use only the floors below its own, see layers.rs): {upward:?}"
        );
    }
}
