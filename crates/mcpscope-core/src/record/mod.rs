//! What a session leaves behind on disk: captures (written through the
//! session's event log, read back, followed as they grow), private files,
//! the per-user state directory, and the one rule for output files the user
//! names (`output_file`). The timeline's data is `timeline`; the index
//! of proxied sessions is `sessions`.

pub mod capture;
pub mod capture_error;
pub mod follower;
pub mod output_file;
pub mod private_files;
pub mod state_dir;
