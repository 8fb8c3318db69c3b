//! The index of a GGUF file as ggml writes it (version 3, little-endian): the header, the
//! key/values and the tensor infos, each info's `ne` as given (ggml writes as many dimensions
//! as `ggml_n_dims` counts: trailing ones dropped, at least one). For writers that lay a file
//! out themselves, such as a quantization that reproduces llama-quantize's output.

use super::header::{MAGIC, WRITTEN_VERSION};
use super::metadata::{self, string};
use crate::error::Result;
use crate::model::MetaValue;

/// One tensor info of an index.
#[derive(Debug, Clone, Copy)]
pub struct IndexTensor<'a> {
    /// The tensor's name.
    pub name: &'a str,
    /// ggml's `ne`, the fastest dimension first, as many as the info states.
    pub ne: &'a [u64],
    /// The ggml type's number.
    pub ggml_type: u32,
    /// Where its data starts, from the start of the data region.
    pub offset: u64,
}

/// The index of a file with these key/values and tensors (no padding after it).
pub fn encode_index(kvs: &[(String, MetaValue)], tensors: &[IndexTensor<'_>]) -> Result<Vec<u8>> {
    let mut head = MAGIC.to_vec();
    head.extend_from_slice(&WRITTEN_VERSION.to_le_bytes());
    head.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
    head.extend_from_slice(&(kvs.len() as u64).to_le_bytes());
    head.extend_from_slice(&metadata::encode_all(kvs)?);
    for t in tensors {
        string(&mut head, t.name);
        head.extend_from_slice(&(t.ne.len() as u32).to_le_bytes());
        for d in t.ne {
            head.extend_from_slice(&d.to_le_bytes());
        }
        head.extend_from_slice(&t.ggml_type.to_le_bytes());
        head.extend_from_slice(&t.offset.to_le_bytes());
    }
    Ok(head)
}
