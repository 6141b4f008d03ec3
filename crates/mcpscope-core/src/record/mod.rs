//! What a session leaves behind: the recorder that turns raw lines into
//! frames, captures on disk (and following one as it grows), the per-user
//! state directory with its index of proxied sessions, the compact row store,
//! and the session model the panels read.

pub mod capture;
pub mod follower;
pub mod model;
pub mod private_files;
pub mod recorder;
pub mod replay;
pub mod row_kind;
pub mod session_index;
pub mod state_dir;
pub mod store;
