//! What a session leaves behind: the recorder that turns raw lines into
//! frames, captures on disk, the compact row store, and the session model the
//! panels read.

pub mod capture;
pub mod model;
pub mod private_files;
pub mod recorder;
pub mod store;
