//! mcpscope's bottom layer, on which every other stands: bytes to lines and
//! frames ([`wire`]), and the text and duration helpers every layer shows
//! things with ([`text`], [`duration`]). `mcpscope-core` re-exports the three
//! modules under the same names.

pub mod duration;
pub mod text;
pub mod wire;
