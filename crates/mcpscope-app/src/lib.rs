//! The desktop app. Its modules stand in floors (kept by `layers.rs`): the
//! models and helpers at the bottom, the panels, the session
//! ([`inspection`]), the tabs, and the app shell ([`app`]) at the top.

mod app;
pub mod app_host;
pub mod composer;
pub mod error_view;
pub mod inspection;
pub mod intercept_link;
pub mod job;
#[cfg(test)]
mod layers;
pub mod live_chat;
pub mod live_follow;
pub mod live_pilot;
pub mod memory;
pub mod panels;
pub mod remote_proxies;
pub mod restore;
pub mod saved_server;
pub mod sign_in;
pub mod tabs;
pub mod theme;
pub mod tokens;
pub mod traces;

pub use app::{BottomTab, DialogPurpose, McpscopeApp, StartupArgs, run};
pub use tabs::RightTab;
