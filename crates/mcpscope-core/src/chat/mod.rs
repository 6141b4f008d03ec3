//! A model in the loop, over the wire: model turns over HTTP
//! ([`provider_call`]); the loop through a live session's tools builds on it.

pub mod provider_call;
pub mod replay;
