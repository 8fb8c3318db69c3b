//! zstd for tensor blobs: compression split into independent frames across threads, and
//! decompression into a buffer of exactly the declared size, never more.
//!
//! A blob is a sequence of standard zstd frames. Small tensors get one frame (as the
//! reference writes); large ones are cut into [`CHUNK`]-byte pieces compressed in parallel,
//! each piece a frame that states its decoded size. Any zstd decoder reads the concatenation
//! (the reference does); ours decodes such frames in parallel straight into their place.

use rayon::prelude::*;
use std::io::Read;
use zstd::zstd_safe;

use crate::checked;
use crate::error::{Error, Result, Rule};

/// Bytes of input per frame when a tensor is split for parallel compression.
pub const CHUNK: usize = 4 << 20;

fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadCompressedData, detail)
}

/// Compress `data` at `level`; frames of [`CHUNK`] bytes in parallel when it is large.
pub fn compress(data: &[u8], level: i32) -> Result<Vec<u8>> {
    if data.len() < 2 * CHUNK || rayon::current_num_threads() < 2 {
        return zstd::bulk::compress(data, level).map_err(Error::from);
    }
    let frames: Vec<Vec<u8>> =
        data.par_chunks(CHUNK).map(|chunk| zstd::bulk::compress(chunk, level)).collect::<std::io::Result<_>>()?;
    let mut out = Vec::with_capacity(frames.iter().map(Vec::len).sum());
    frames.iter().for_each(|f| out.extend_from_slice(f));
    Ok(out)
}

/// One frame of a blob: where it is and what it says it decodes to.
struct Frame {
    start: usize,
    len: usize,
    content: Option<u64>,
}

fn frames(stored: &[u8]) -> Result<Vec<Frame>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < stored.len() {
        let rest = &stored[pos..];
        let len = zstd_safe::find_frame_compressed_size(rest)
            .map_err(|code| bad(format!("frame at byte {pos}: {}", zstd_safe::get_error_name(code))))?;
        if len == 0 || len > rest.len() {
            return Err(bad(format!("frame at byte {pos} has an impossible length")));
        }
        let content = zstd_safe::get_frame_content_size(&rest[..len])
            .map_err(|_| bad(format!("frame at byte {pos} has a corrupt header")))?;
        out.push(Frame { start: pos, len, content });
        pos += len;
    }
    Ok(out)
}

/// The decoded size the frames declare, if every frame declares one.
pub fn declared_content_size(stored: &[u8]) -> Result<Option<u64>> {
    let mut total = 0u64;
    for f in frames(stored)? {
        match f.content {
            Some(c) => total = checked::add(total, c, "zstd content size")?,
            None => return Ok(None),
        }
    }
    Ok(Some(total))
}

/// Decompress `stored` into exactly `expected` bytes. Errors, without allocating, when the
/// frames cannot decode to that many bytes, and when they decode to more or fewer.
pub fn decompress(stored: &[u8], expected: u64) -> Result<Vec<u8>> {
    let mismatch = |got: String| {
        Error::invalid(Rule::DecompressedSizeMismatch, format!("zstd data decodes to {got} bytes, {expected} declared"))
    };
    let bound = zstd_safe::decompress_bound(stored).map_err(|code| bad(zstd_safe::get_error_name(code)))?;
    if bound < expected {
        return Err(mismatch(format!("at most {bound}")));
    }
    let mut out = checked::zeroed(expected, bound, "decoded tensor")?;
    let frames = frames(stored)?;
    if frames.iter().all(|f| f.content.is_some()) {
        let declared = frames.iter().try_fold(0u64, |acc, f| acc.checked_add(f.content.unwrap_or(0)));
        if declared != Some(expected) {
            return Err(mismatch(declared.map_or("more than 2^64".into(), |d| d.to_string())));
        }
        // Cut the output into each frame's slot, then decode the frames in parallel.
        let mut slots = Vec::with_capacity(frames.len());
        let mut rest = out.as_mut_slice();
        for f in &frames {
            let n = checked::to_usize(f.content.unwrap_or(0), "zstd frame")?;
            let (slot, tail) = rest.split_at_mut(n);
            slots.push(slot);
            rest = tail;
        }
        frames.par_iter().zip(slots.into_par_iter()).try_for_each(|(f, slot)| {
            let src = &stored[f.start..f.start + f.len];
            let n = zstd_safe::decompress(slot, src).map_err(|code| bad(zstd_safe::get_error_name(code)))?;
            if n != slot.len() {
                return Err(mismatch(format!("{n} (in a frame declaring {})", slot.len())));
            }
            Ok(())
        })?;
    } else {
        let mut decoder = zstd::stream::read::Decoder::with_buffer(stored).map_err(|e| bad(e.to_string()))?;
        decoder.read_exact(&mut out).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => mismatch("fewer".into()),
            _ => bad(e.to_string()),
        })?;
        let mut probe = [0u8; 1];
        match decoder.read(&mut probe) {
            Ok(0) => {}
            Ok(_) => return Err(mismatch("more".into())),
            Err(e) => return Err(bad(e.to_string())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_inputs_split_into_frames_and_round_trip() {
        let data: Vec<u8> = (0..(3 * CHUNK + 123)).map(|i| (i % 251) as u8).collect();
        let z = compress(&data, 3).unwrap();
        let n_frames = frames(&z).unwrap().len();
        assert!(n_frames == 4 || rayon::current_num_threads() < 2, "{n_frames} frames");
        assert_eq!(declared_content_size(&z).unwrap(), Some(data.len() as u64));
        assert_eq!(decompress(&z, data.len() as u64).unwrap(), data);
    }

    #[test]
    fn streaming_frames_without_sizes_decode() {
        let data = vec![7u8; 100_000];
        let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
        enc.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut enc, &data).unwrap();
        let z = enc.finish().unwrap();
        assert_eq!(declared_content_size(&z).unwrap(), None);
        assert_eq!(decompress(&z, 100_000).unwrap(), data);
        assert_eq!(decompress(&z, 99_999).unwrap_err().rule(), Some(Rule::DecompressedSizeMismatch));
        assert_eq!(decompress(&z, 100_001).unwrap_err().rule(), Some(Rule::DecompressedSizeMismatch));
    }

    #[test]
    fn a_bomb_is_refused_before_allocating() {
        let z = zstd::bulk::compress(&vec![0u8; 1 << 20], 3).unwrap();
        // Declared far larger than the frames can produce: refused without a huge allocation.
        assert_eq!(decompress(&z, 1 << 40).unwrap_err().rule(), Some(Rule::DecompressedSizeMismatch));
        assert_eq!(decompress(&z, (1 << 20) - 1).unwrap_err().rule(), Some(Rule::DecompressedSizeMismatch));
        assert_eq!(decompress(b"not zstd at all", 4).unwrap_err().rule(), Some(Rule::BadCompressedData));
    }
}
