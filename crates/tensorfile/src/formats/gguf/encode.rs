//! The one encoder of a GGUF file's layout (version 3, little-endian): the index (the header,
//! the key/values and the tensor infos, each info's `ne` as given: ggml writes as many
//! dimensions as `ggml_n_dims` counts, trailing ones dropped, at least one) and the zeros that
//! align the data region and every tensor. The unit's writer ([`super::GgufWriter`]), a file of
//! key/values alone (a split model's first part) and llama-quantize's files (`crate::llama`)
//! are all laid out by it.

use std::io::{Read, Write};

use super::header::{MAGIC, WRITTEN_VERSION};
use super::metadata::{self, string};
use crate::checked;
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

/// The index, then zeros up to the next multiple of `alignment`: where the data region starts
/// (ggml pads the index even when no tensor follows).
pub fn encode_padded_index(kvs: &[(String, MetaValue)], tensors: &[IndexTensor<'_>], alignment: u64) -> Result<Vec<u8>> {
    let mut head = encode_index(kvs, tensors)?;
    let padded = checked::to_usize(checked::align_up(head.len() as u64, alignment)?, "index size")?;
    head.resize(padded, 0);
    Ok(head)
}

/// Write the zeros that follow `len` bytes up to the next multiple of `alignment` (without a
/// buffer of that size: an alignment may be large).
pub fn write_padding(out: &mut dyn Write, len: u64, alignment: u64) -> Result<()> {
    let n = checked::align_up(len, alignment)? - len;
    std::io::copy(&mut std::io::repeat(0).take(n), out)?;
    Ok(())
}
