//! What a session leaves behind on disk: the recorder that turns raw lines
//! into frames, captures (and following one as it grows), private files and
//! the per-user state directory. The timeline's data is `timeline`; the index
//! of proxied sessions is `sessions`.

pub mod capture;
pub mod follower;
pub mod private_files;
pub mod recorder;
pub mod state_dir;
