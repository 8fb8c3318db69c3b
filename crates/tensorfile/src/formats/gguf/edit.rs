//! Other metadata for a GGUF file: the header with the new key/value count, the key/values
//! as gguf-py's writer lays them out, the tensor infos as they were, the padding to the
//! alignment, and the data region copied byte for byte. When the edits change
//! `general.alignment`, the tensors are laid out again in the order of their infos, each
//! padded to the new alignment (as gguf-py writes them); their bytes are still copied as
//! they are. A file of no tensors keeps whatever follows its index. A big-endian file stays
//! big-endian.

use super::GgufReader;
use super::header::MAGIC;
use super::index::Declared;
use super::metadata::{encode_all_in, put, string_in};
use super::read::alignment_of;
use super::split;
use crate::checked;
use crate::error::{Error, Result};
use crate::formats::{MetaEdits, Output};
use crate::model::ByteOrder;
use crate::output::copy_range;

/// The unit's metadata editor.
pub(crate) fn edit(input: &MetaEdits<'_>, out: &mut dyn Output) -> Result<()> {
    let reader = input.file_as::<GgufReader>().ok_or_else(|| split::not_one_file("its metadata edited"))?;
    // A big-endian file (gguf-py's `endianess=BIG`) keeps its byte order: the index is
    // written big-endian, the tensors' bytes are copied as they are.
    let big = reader.byte_order() == ByteOrder::Big;
    let alignment = alignment_of(input.metadata).map_err(|e| Error::usage(e.detail()))?;
    let declared = reader.declared();
    let same_layout = alignment == reader.alignment();
    // Where each tensor's data goes, from the start of the data region.
    let mut offsets = Vec::with_capacity(declared.len());
    let mut next = 0u64;
    for (d, nbytes) in declared {
        if same_layout {
            offsets.push(d.offset);
            continue;
        }
        let n = nbytes.ok_or_else(|| {
            Error::unsupported(format!(
                "a new alignment for a file whose tensor {:?} is of a type this library does not know",
                d.name
            ))
        })?;
        offsets.push(next);
        next = checked::align_up(checked::add(next, n, "data size")?, alignment)?;
    }
    let mut head = MAGIC.to_vec();
    put(&mut head, reader.version().to_le_bytes(), big);
    put(&mut head, (declared.len() as u64).to_le_bytes(), big);
    put(&mut head, (input.metadata.len() as u64).to_le_bytes(), big);
    head.extend_from_slice(&encode_all_in(input.metadata, big)?);
    for ((d, _), offset) in declared.iter().zip(&offsets) {
        info(&mut head, d, *offset, big);
    }
    out.write_all(&head)?;
    if declared.is_empty() {
        return keep_tail(reader, head.len() as u64, alignment, out);
    }
    pad(out, head.len() as u64, alignment)?;
    let src = reader.source();
    if same_layout {
        return copy_range(src, reader.data_offset(), src.len(), out);
    }
    for (d, nbytes) in declared {
        let n = nbytes.unwrap_or(0);
        let from = checked::add(reader.data_offset(), d.offset, "tensor offset")?;
        copy_range(src, from, checked::add(from, n, "tensor end")?, out)?;
        pad(out, n, alignment)?;
    }
    Ok(())
}

/// What a file of no tensors holds after its index, kept: nothing (as gguf-py writes a
/// vocabulary alone), the padding to the alignment (as ggml writes it: padded again after the
/// new index), or bytes of other kinds, which are copied as they are (after the padding when
/// the original had one before them).
fn keep_tail(reader: &GgufReader, head_len: u64, alignment: u64, out: &mut dyn Output) -> Result<()> {
    let src = reader.source();
    let (end, len, data) = (reader.index_end(), src.len(), reader.data_offset());
    if end >= len {
        return Ok(());
    }
    let padding = src.range(end, data.min(len) - end)?;
    if padding.iter().all(|&b| b == 0) {
        pad(out, head_len, alignment)?;
        return copy_range(src, data.min(len), len, out);
    }
    copy_range(src, end, len, out)
}

/// A tensor info: name, dimension count, `ne`, ggml type, offset.
fn info(head: &mut Vec<u8>, d: &Declared, offset: u64, big: bool) {
    string_in(head, &d.name, big);
    put(head, (d.ne.len() as u32).to_le_bytes(), big);
    d.ne.iter().for_each(|n| put(head, n.to_le_bytes(), big));
    put(head, d.ggml_type.to_le_bytes(), big);
    put(head, offset.to_le_bytes(), big);
}

/// Zeros from `len` to the next multiple of `alignment`.
fn pad(out: &mut dyn Output, len: u64, alignment: u64) -> Result<()> {
    let n = checked::align_up(len, alignment)? - len;
    std::io::copy(&mut std::io::Read::take(std::io::repeat(0), n), out)?;
    Ok(())
}
