//! The filter pipeline message (type 0x0b, versions 1 and 2) and the filters this library
//! undoes: deflate (1), shuffle (2) and fletcher32 (3). Any other filter is refused by id and
//! name; an optional filter is refused too, since its chunks may or may not have gone through it
//! (their filter masks say which).

use std::io::Read;

use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};

/// A filter this library undoes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::formats::hdf5) enum Filter {
    /// zlib-wrapped deflate.
    Deflate,
    /// Bytes regrouped by their position in elements of this many bytes.
    Shuffle(u64),
    /// A Fletcher-32 checksum appended to the chunk.
    Fletcher32,
}

/// Well-known filter ids, for refusals.
fn filter_name(id: u16) -> &'static str {
    match id {
        4 => "szip",
        5 => "nbit",
        6 => "scaleoffset",
        307 => "bzip2",
        32000 => "lzf",
        32001 => "blosc",
        32004 => "lz4",
        32008 => "bitshuffle",
        32013 => "zfp",
        32015 => "zstd",
        32026 => "blosc2",
        _ => "unknown",
    }
}

/// Decodes a filter pipeline message into the filters in the order they were applied when
/// writing.
pub(in crate::formats::hdf5) fn parse(body: &[u8]) -> Result<Vec<Filter>> {
    let mut c = Cursor::new(body);
    let version = c.u8("filter pipeline version")?;
    let count = c.u8("number of filters")?;
    match version {
        1 => c.skip(6, "filter pipeline reserved bytes")?,
        2 => {}
        v => return Err(Error::invalid(Rule::BadField, format!("HDF5 filter pipeline message version {v}"))),
    }
    if count > 32 {
        return Err(Error::invalid(Rule::BadField, format!("HDF5 filter pipeline of {count} filters (at most 32)")));
    }
    let mut filters = Vec::with_capacity(usize::from(count));
    for _ in 0..count {
        let id = c.u16_le("filter id")?;
        let name_len = if version == 1 || id >= 256 { c.u16_le("filter name length")? } else { 0 };
        let flags = c.u16_le("filter flags")?;
        let values = c.u16_le("number of filter client values")?;
        let name_stored = if version == 1 { (usize::from(name_len) + 7) & !7 } else { usize::from(name_len) };
        let name = c.take(name_stored, "filter name")?;
        let mut data = Vec::with_capacity(usize::from(values).min(64));
        for _ in 0..values {
            data.push(c.u32_le("filter client value")?);
        }
        if version == 1 && values % 2 == 1 {
            c.skip(4, "filter client data padding")?;
        }
        let named = String::from_utf8_lossy(name.split(|&b| b == 0).next().unwrap_or_default()).into_owned();
        let filter = match id {
            1 => Filter::Deflate,
            2 => Filter::Shuffle(match data.first() {
                Some(&n) if n > 0 => u64::from(n),
                _ => return Err(Error::invalid(Rule::BadField, "HDF5 shuffle filter without its element size")),
            }),
            3 => Filter::Fletcher32,
            _ => {
                let known = if named.is_empty() { filter_name(id).to_string() } else { named };
                let how = if flags & 1 != 0 { "optional " } else { "" };
                return Err(Error::invalid(
                    Rule::UnknownEncoding,
                    format!("HDF5 {how}filter {id} ({known}), which this library does not decode"),
                ));
            }
        };
        filters.push(filter);
    }
    Ok(filters)
}

/// Whether filter `i` of a pipeline was skipped for a chunk with this filter mask.
fn skipped(i: usize, mask: u32) -> bool {
    i < 32 && mask & (1 << i) != 0
}

/// How many bytes each filter of the pipeline was given when the chunk was written: the
/// chunk's `expected` bytes, plus 4 for every Fletcher-32 checksum appended before it (PyTables
/// runs fletcher32 first, so its deflate step compresses the checksum with the data).
fn sizes_given(filters: &[Filter], mask: u32, expected: u64) -> Vec<u64> {
    let mut size = expected;
    let mut given = Vec::with_capacity(filters.len());
    for (i, filter) in filters.iter().enumerate() {
        given.push(size);
        if *filter == Filter::Fletcher32 && !skipped(i, mask) {
            size = size.saturating_add(4);
        }
    }
    given
}

/// Undoes `filters` (as written, in order) on a stored chunk, skipping those whose bit is set
/// in `mask`; the result must be exactly `expected` bytes.
pub(in crate::formats::hdf5) fn undo(filters: &[Filter], mask: u32, stored: &[u8], expected: u64) -> Result<Vec<u8>> {
    let given = sizes_given(filters, mask, expected);
    let mut data: Option<Vec<u8>> = None;
    for ((i, filter), &bound) in filters.iter().enumerate().zip(&given).rev() {
        if skipped(i, mask) {
            continue;
        }
        let input: &[u8] = data.as_deref().unwrap_or(stored);
        let out = match *filter {
            Filter::Deflate => inflate(input, bound)?,
            Filter::Shuffle(n) => unshuffle(input, n),
            Filter::Fletcher32 => fletcher32_strip(input)?.to_vec(),
        };
        data = Some(out);
    }
    let out = data.unwrap_or_else(|| stored.to_vec());
    if out.len() as u64 != expected {
        return Err(Error::invalid(
            Rule::DecompressedSizeMismatch,
            format!("HDF5 chunk decodes to {} bytes, its shape holds {expected}", out.len()),
        ));
    }
    Ok(out)
}

/// A zlib stream's content, refused past `expected` bytes (what the deflate step was given
/// when the chunk was written).
fn inflate(input: &[u8], expected: u64) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut decoder = flate2::read::ZlibDecoder::new(input).take(expected.saturating_add(1));
    decoder
        .read_to_end(&mut out)
        .map_err(|e| Error::invalid(Rule::BadCompressedData, format!("HDF5 deflate chunk: {e}")))?;
    if out.len() as u64 > expected {
        return Err(Error::invalid(
            Rule::DecompressedSizeMismatch,
            format!("HDF5 deflate chunk inflates past the {expected} bytes its filter was given"),
        ));
    }
    Ok(out)
}

/// The shuffle filter undone: byte `j` of element `i` was stored at `j * count + i`; bytes past
/// the last whole element are stored as they are.
fn unshuffle(input: &[u8], size: u64) -> Vec<u8> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    if size <= 1 || input.len() < size {
        return input.to_vec();
    }
    let count = input.len() / size;
    let mut out = vec![0u8; input.len()];
    for (j, plane) in input[..count * size].chunks_exact(count).enumerate() {
        for (i, &b) in plane.iter().enumerate() {
            out[i * size + j] = b;
        }
    }
    out[count * size..].copy_from_slice(&input[count * size..]);
    out
}

/// HDF5's Fletcher-32 of `data`: 16-bit words, the first byte the high one, an odd last
/// byte counting as a word with a zero low byte; both sums reduced modulo 65535.
pub(in crate::formats::hdf5) fn fletcher32(data: &[u8]) -> u32 {
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let even = data.len() & !1;
    for block in data[..even].chunks(720) {
        for w in block.chunks_exact(2) {
            sum1 += (u32::from(w[0]) << 8) | u32::from(w[1]);
            sum2 += sum1;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    if let [.., last] = data[even..] {
        sum1 += u32::from(last) << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    (sum2 << 16) | sum1
}

/// The chunk before its trailing Fletcher-32 checksum, once the checksum matches (HDF5 also
/// accepts the checksum with the bytes of each half swapped, as releases before 1.6.3 wrote it
/// on little-endian machines).
fn fletcher32_strip(input: &[u8]) -> Result<&[u8]> {
    let Some(split) = input.len().checked_sub(4) else {
        return Err(Error::invalid(Rule::Truncated, "HDF5 fletcher32 chunk shorter than its checksum"));
    };
    let (data, tail) = input.split_at(split);
    let stored = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    let computed = fletcher32(data);
    let swapped = ((computed & 0x00ff_00ff) << 8) | ((computed >> 8) & 0x00ff_00ff);
    if stored != computed && stored != swapped {
        return Err(Error::invalid(
            Rule::ChecksumMismatch,
            format!("HDF5 fletcher32: stored {stored:#010x}, the chunk gives {computed:#010x}"),
        ));
    }
    Ok(data)
}

#[cfg(test)]
#[path = "filters_tests.rs"]
mod tests;
