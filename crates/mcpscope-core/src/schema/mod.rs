//! Forms from JSON Schema, without drawing: what a schema asks for ([`analysis`]),
//! example values ([`sample`], [`pattern`]), validation mapped to fields ([`validate`]),
//! and the form's state ([`form`]).

pub mod analysis;
pub mod form;
mod pattern;
pub mod sample;
pub mod validate;
