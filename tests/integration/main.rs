//! Integration tests against real processes: the project's faulty servers,
//! real SDK servers installed by scripts/setup-test-peers, and the binary.
//! One test binary so the heavy dependencies link once.

mod support;

mod app_eras;
mod apps;
mod browser;
mod capture_roundtrip;
mod cli;
mod conformance_2026;
mod docs;
mod eras;
mod export;
mod faulty_servers;
mod files;
mod filter;
mod hostile;
mod hostile_files;
mod hostile_input;
mod hostile_interop;
mod hostile_proxy;
mod hostile_serve;
mod hostile_wrap;
mod http;
mod intercept;
mod lint;
mod live;
mod live_app;
mod load;
mod mock;
mod oauth;
mod package;
mod protocol_features;
mod real_servers;
mod schema_form;
mod screenshots;
mod terminal;
mod ui;
mod vectors;
mod verify;
mod window;
