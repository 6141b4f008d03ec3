//! The panels: each a small struct with a `ui` method that reads the session
//! model and returns what the user asked for as actions.

pub mod app_view;
pub mod collections_view;
pub mod detail;
pub mod diff_view;
pub mod expert;
pub mod file_picker;
pub mod filter_bar;
pub mod form_view;
pub mod intercept_view;
pub mod json_tree;
pub mod launcher;
pub mod live_sessions;
pub mod load_view;
pub mod log_view;
pub mod notifications;
pub mod result_view;
pub mod stats_view;
pub mod timeline;
pub mod verify_view;
pub mod watch_client;
