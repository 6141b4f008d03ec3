//! Forms from JSON Schema, without drawing: what a schema asks for, example
//! values, validation mapped to fields.

pub mod form;
