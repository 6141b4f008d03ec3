//! Integration tests against real processes: the project's faulty servers,
//! real SDK servers installed by scripts/setup-test-peers, and the binary.
//! One test binary so the heavy dependencies link once.

// Elsewhere than on Unix the tests about Unix (modes, FIFOs, signals) are
// left out, and the helpers only they use would be reported unused.
#![cfg_attr(not(unix), allow(dead_code, unused_imports))]

mod support;

mod app_eras;
mod apps;
#[cfg(target_os = "linux")] // a subreaper (Linux's) and a launcher script
mod browser;
mod capture_roundtrip;
mod cli;
mod collections;
mod collections_http;
mod conformance_2026;
#[cfg(unix)] // the tour runs sh in process groups
mod docs;
mod eras;
mod export;
mod faulty_servers;
#[cfg(unix)] // modes, FIFOs, devices and other users' links
mod files;
mod filter;
mod hostile;
#[cfg(unix)] // FIFOs, devices and links
mod hostile_files;
#[cfg(unix)] // a Unix socket as input
mod hostile_input;
mod hostile_interop;
#[cfg(unix)] // signals to the proxy
mod hostile_proxy;
mod hostile_serve;
mod hostile_wrap;
mod http;
mod intercept;
mod lint;
#[cfg(unix)] // modes and signals to proxies
mod live;
mod live_app;
mod load;
mod mock;
mod model;
#[cfg(unix)] // process groups for the peers it starts
mod oauth;
mod package;
mod platform;
mod protocol_features;
mod real_servers;
mod schema_form;
mod screenshots;
mod stats;
mod terminal;
mod ui;
mod vectors;
mod verify;
mod window;
mod wine;
