//! The wire: bytes to lines and SSE events, lines to classified JSON-RPC
//! frames, and requests correlated with their responses. Knows nothing of
//! processes, HTTP or MCP's methods beyond what a frame's label needs.

pub mod classify;
pub mod correlation;
pub mod frame;
pub mod framing;
pub mod long_line;
pub mod message;
pub mod raw_member;
pub mod sequence;
pub mod sse;

/// A serde `Visitor`'s answer to every JSON scalar: `$value`. For visitors
/// that read only objects or arrays and skip, or merely check, the rest
/// (serde_json has parsed, so checked, a scalar before it is visited).
#[macro_export]
macro_rules! scalars_are {
    ($value:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($value)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($value)
        }
    };
}
pub use crate::scalars_are;
