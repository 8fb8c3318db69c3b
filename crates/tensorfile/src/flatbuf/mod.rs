//! FlatBuffers, driven by schema text: decode a buffer into a [`Value`] tree with every
//! offset, length and alignment checked; encode a tree back into a buffer; print it as JSON.
//!
//! Used by the ExecuTorch formats (`.pte` programs and `.ptd` named data), whose schemas are
//! in `crates/tensorfile/schema/`. A decoded tree is edited and re-encoded to rewrite
//! programs (externalize constants, update weights).

mod decode;
mod encode;
mod json;
pub mod schema;
mod value;

#[cfg(test)]
mod tests;

pub use decode::decode;
pub use encode::encode;
pub use json::to_json;
pub use schema::Schema;
pub use value::{Table, Union, Value, new_table};
