//! Sessions other mcpscope processes run: the index of proxied sessions in
//! the per-user state directory (each proxy announces itself, its capture and
//! how it ended), which the app lists and follows.

pub mod index;
