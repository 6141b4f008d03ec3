//! A model in the loop, over the wire: model turns over HTTP
//! ([`provider_call`]), where the provider's key comes from ([`key`]), and
//! a recorded chat served again ([`replay`]).

pub mod key;
pub mod provider_call;
pub mod replay;
