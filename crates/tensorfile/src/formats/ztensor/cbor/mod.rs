//! A small CBOR (RFC 8949) decoder and encoder for the zTensor index (v0.1) and manifest (2).
//!
//! The decoder accepts definite and indefinite lengths, bounds nesting depth, and never
//! allocates more than the input can hold: lengths are checked against the bytes that remain
//! before anything is reserved. The encoder writes what the zTensor 0.1 reference writes:
//! shortest-form integers and lengths, definite arrays, indefinite maps. `deterministic`
//! checks the core deterministic encoding zTensor 2 requires, before the decoder reads it.

mod decode;
pub mod deterministic;
mod encode;

#[cfg(test)]
mod tests;

use std::borrow::Cow;

use crate::error::Result;
use crate::model::MetaValue;

pub use decode::Decoder;
pub use encode::Encoder;

/// Decode exactly one CBOR item filling all of `input`.
pub fn decode(input: &[u8]) -> Result<MetaValue> {
    let mut d = Decoder::new(input);
    let v = d.item(0)?;
    d.finish()?;
    Ok(v)
}

/// The major type of arrays.
pub const ARRAY: u8 = 4;
/// The major type of maps.
pub const MAP: u8 = 5;

/// The length of an array or map.
#[derive(Clone, Copy)]
pub enum Len {
    Definite(u64),
    Indefinite,
}

/// An item read in the form its reader expected, or, when it has another form, decoded as a
/// generic value (boxed: the expected form is the common one, and is kept small).
pub enum Typed<T> {
    Found(T),
    Other(Box<MetaValue>),
}

/// A map key: one the caller recognises, other text, or an item of another type.
pub enum MapKey<'a, K> {
    Known(K),
    Text(Cow<'a, str>),
    NotText,
}
