//! Forms from JSON Schema, without drawing: what a schema asks for ([`analysis`]),
//! example values ([`sample`], `pattern`), validation mapped to fields ([`validate`]),
//! the form's state ([`form`]), and command-line arguments typed by a schema ([`typed_arg`]).

pub mod analysis;
pub mod form;
mod pattern;
pub mod sample;
pub mod typed_arg;
pub mod validate;
