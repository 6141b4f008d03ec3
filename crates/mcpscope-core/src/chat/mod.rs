//! A model in the loop, over the wire: model turns over HTTP
//! ([`provider_call`]), where the provider's key comes from ([`key`]), a
//! recorded chat served again ([`replay`]), and the chat loop driven over a
//! blocking session ([`drive`]).

pub mod drive;
pub mod key;
pub mod provider_call;
pub mod replay;
