//! The desktop around mcpscope: how this system opens a URL in the user's
//! browser, and what its windowing libraries expect of the environment.

/// The programs that open a URL in the user's default browser here, in the
/// order to try them.
pub fn url_openers() -> &'static [&'static str] {
    if cfg!(target_os = "macos") {
        &["open"]
    } else if cfg!(windows) {
        &["explorer"]
    } else {
        &["xdg-open"]
    }
}

/// The session bus address to give a browser mcpscope starts, if it needs
/// one (D-Bus desktops: Linux and the BSDs). With no session bus to talk
/// to, xdg-open and the browser start one of their own (dbus-launch,
/// dbus-daemon) that outlives mcpscope: they are told there is none
/// instead. A desktop's bus (its address set, or the standard socket in
/// the runtime directory) is left as it is.
pub fn no_session_bus() -> Option<&'static str> {
    if cfg!(any(target_os = "macos", windows)) {
        return None;
    }
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some() {
        return None;
    }
    let standard = std::env::var_os("XDG_RUNTIME_DIR").map(|d| std::path::Path::new(&d).join("bus"));
    if standard.is_some_and(|bus| bus.exists()) {
        return None;
    }
    Some("disabled:")
}

/// Whether the windowing libraries here look for `XDG_RUNTIME_DIR` (Wayland
/// and X11 desktops: Linux and the BSDs) and complain without it.
pub fn wants_xdg_runtime_dir() -> bool {
    !cfg!(any(target_os = "macos", windows))
}
