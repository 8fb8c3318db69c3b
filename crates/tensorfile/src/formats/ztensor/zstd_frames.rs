//! zstd for tensor blobs: frames of large tensors compressed independently (on the thread
//! pool, by the writer), and decompression into exactly the declared size, never more:
//! whole (frames decoded in parallel straight into their place) or in pieces.
//!
//! A blob is a sequence of standard zstd frames. Small tensors get one frame (as the
//! reference writes); large ones are cut into [`CHUNK`]-byte pieces, each a frame that
//! states its decoded size. Any zstd decoder reads the concatenation (the reference does).

use rayon::prelude::*;
use std::io::Read;
use zstd::zstd_safe;

use crate::checked;
use crate::cursor;
use crate::error::{Error, Result, Rule};
use crate::model::Chunks;
use crate::source::Bytes;

/// Bytes of input per frame when a tensor is split for parallel compression.
pub const CHUNK: usize = 4 << 20;

fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadCompressedData, detail)
}

/// Tensors of at least this many bytes are stored as frames of [`CHUNK`] input bytes each
/// (the last one shorter); smaller ones as one frame, as the reference writes them.
pub const SPLIT_AT: u64 = 2 * CHUNK as u64;

/// One frame of `data` at `level`.
pub fn compress(data: &[u8], level: i32) -> Result<Vec<u8>> {
    zstd::bulk::compress(data, level).map_err(Error::from)
}

/// One frame of a blob: where it is and what it says it decodes to.
struct Frame {
    start: usize,
    len: usize,
    content: Option<u64>,
    /// The most its blocks can decode to.
    bound: u64,
}

/// The most bytes one zstd block decodes to (the format's block size limit).
const BLOCK_MAX: u64 = 128 << 10;

/// The most bytes `frame` (one whole frame, as `find_frame_compressed_size` measured it)
/// can decode to: 128 KiB per block, 0 for a skippable frame. Computed from the blocks
/// actually present, never from the size the header claims, so a few bytes claiming
/// terabytes are refused before anything is allocated.
pub fn frame_bound(frame: &[u8]) -> Result<u64> {
    let corrupt = || bad("a frame's blocks do not fit in it");
    let magic = cursor::u32_le_at(frame, 0, "zstd frame magic").map_err(|_| corrupt())?;
    if magic & 0xFFFF_FFF0 == 0x184D_2A50 {
        return Ok(0);
    }
    let descriptor = *frame.get(4).ok_or_else(corrupt)?;
    let single_segment = descriptor & 0x20 != 0;
    let dictionary_id = [0, 1, 2, 4][usize::from(descriptor & 3)];
    let content_size = match descriptor >> 6 {
        0 => usize::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let mut pos = 5 + usize::from(!single_segment) + dictionary_id + content_size;
    let mut blocks = 0u64;
    loop {
        let header = cursor::array_at::<3>(frame, pos, "zstd block header").map_err(|_| corrupt())?;
        let bits = u32::from_le_bytes([header[0], header[1], header[2], 0]);
        let size = (bits >> 3) as usize;
        pos += 3 + match (bits >> 1) & 3 {
            1 => 1, // RLE: one byte repeated `size` times
            3 => return Err(bad("a block of the reserved type")),
            _ => size,
        };
        blocks += 1;
        if bits & 1 == 1 {
            break;
        }
    }
    if pos > frame.len() {
        return Err(corrupt());
    }
    Ok(blocks * BLOCK_MAX)
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
        let bound = frame_bound(&rest[..len])?;
        if let Some(c) = content.filter(|&c| c > bound) {
            return Err(Error::invalid(
                Rule::DecompressedSizeMismatch,
                format!("zstd frame at byte {pos} declares {c} bytes, its blocks hold at most {bound}"),
            ));
        }
        out.push(Frame { start: pos, len, content, bound });
        pos += len;
    }
    Ok(out)
}

/// The most the frames of `stored` can decode to, from their blocks.
fn decoded_bound(frames: &[Frame]) -> Result<u64> {
    frames.iter().try_fold(0u64, |total, f| checked::add(total, f.bound, "zstd bound"))
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
    let frames = frames(stored)?;
    let bound = decoded_bound(&frames)?;
    if bound < expected {
        return Err(mismatch(format!("at most {bound}")));
    }
    let mut out = checked::zeroed(expected, bound, "decoded tensor")?;
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

/// Frames this large or smaller are decoded whole, several at once, when a blob is read in
/// pieces; a blob with a larger frame (or frames that do not state their size) is decoded
/// by one streaming decoder, [`CHUNK`] bytes at a time.
const MAX_PIECE_FRAME: u64 = 16 << 20;

/// Decode `stored` into exactly `expected` bytes, handed over in pieces of at most
/// [`MAX_PIECE_FRAME`] bytes, so that a large tensor is never whole in memory. The same
/// checks as [`decompress`], made before the first piece where the frames allow it and
/// otherwise as the pieces come.
pub fn decompress_pieces(stored: Bytes, expected: u64) -> Result<Chunks<'static>> {
    let frames = frames(&stored)?;
    let bound = decoded_bound(&frames)?;
    if bound < expected {
        return Err(size_mismatch(expected, format!("at most {bound}")));
    }
    let sized = frames.iter().all(|f| f.content.is_some_and(|c| c <= MAX_PIECE_FRAME));
    if !sized {
        let decoder =
            zstd::stream::read::Decoder::with_buffer(std::io::Cursor::new(stored)).map_err(|e| bad(e.to_string()))?;
        return Ok(Box::new(StreamPieces { decoder, left: expected, done: false }));
    }
    let declared = frames.iter().try_fold(0u64, |acc, f| acc.checked_add(f.content.unwrap_or(0)));
    if declared != Some(expected) {
        return Err(size_mismatch(expected, declared.map_or("more than 2^64".into(), |d| d.to_string())));
    }
    let window = rayon::current_num_threads().max(1);
    let mut ready = std::collections::VecDeque::new();
    let mut next = 0;
    Ok(Box::new(std::iter::from_fn(move || {
        if ready.is_empty() && next < frames.len() {
            // Decode the next few frames at once, each into its own piece.
            let end = frames.len().min(next + window);
            let decoded: Vec<Result<Bytes>> = frames[next..end].par_iter().map(|f| decode_frame(&stored, f)).collect();
            next = end;
            ready.extend(decoded);
        }
        let piece = ready.pop_front()?;
        if piece.is_err() {
            // Stop after the first error.
            next = frames.len();
            ready.clear();
        }
        Some(piece)
    })))
}

fn size_mismatch(expected: u64, got: String) -> Error {
    Error::invalid(Rule::DecompressedSizeMismatch, format!("zstd data decodes to {got} bytes, {expected} declared"))
}

/// One frame whose stated size is at most [`MAX_PIECE_FRAME`], decoded.
fn decode_frame(stored: &[u8], f: &Frame) -> Result<Bytes> {
    let n = checked::to_usize(f.content.unwrap_or(0), "zstd frame")?;
    let mut out = vec![0u8; n];
    let got = zstd_safe::decompress(&mut out[..], &stored[f.start..f.start + f.len])
        .map_err(|code| bad(zstd_safe::get_error_name(code)))?;
    if got != n {
        return Err(Error::invalid(
            Rule::DecompressedSizeMismatch,
            format!("a zstd frame declaring {n} bytes decodes to {got}"),
        ));
    }
    Ok(Bytes::from_vec(out))
}

/// Pieces from one streaming decoder: [`CHUNK`] bytes at a time, exactly `left` in all.
struct StreamPieces {
    decoder: zstd::stream::read::Decoder<'static, std::io::Cursor<Bytes>>,
    left: u64,
    done: bool,
}

impl StreamPieces {
    fn next_piece(&mut self) -> Result<Option<Bytes>> {
        if self.left == 0 {
            // Nothing may follow the declared size.
            self.done = true;
            let mut probe = [0u8; 1];
            return match self.decoder.read(&mut probe) {
                Ok(0) => Ok(None),
                Ok(_) => Err(size_mismatch(0, "more".into())),
                Err(e) => Err(bad(e.to_string())),
            };
        }
        let n = CHUNK.min(usize::try_from(self.left).unwrap_or(CHUNK));
        let mut piece = vec![0u8; n];
        self.decoder.read_exact(&mut piece).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Error::invalid(
                Rule::DecompressedSizeMismatch,
                "zstd data decodes to fewer bytes than declared".to_string(),
            ),
            _ => bad(e.to_string()),
        })?;
        self.left -= n as u64;
        Ok(Some(Bytes::from_vec(piece)))
    }
}

impl Iterator for StreamPieces {
    type Item = Result<Bytes>;
    fn next(&mut self) -> Option<Result<Bytes>> {
        if self.done {
            return None;
        }
        let piece = self.next_piece();
        if piece.is_err() {
            self.done = true;
        }
        piece.transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `data` as the writer stores a large tensor: a frame per [`CHUNK`] bytes.
    fn framed(data: &[u8]) -> Vec<u8> {
        data.chunks(CHUNK).flat_map(|c| compress(c, 3).unwrap()).collect()
    }

    fn joined(pieces: Chunks<'_>) -> Result<Vec<u8>> {
        let mut all = Vec::new();
        for p in pieces {
            let p = p?;
            assert!(p.len() as u64 <= MAX_PIECE_FRAME, "a piece of {} bytes", p.len());
            all.extend_from_slice(&p);
        }
        Ok(all)
    }

    #[test]
    fn large_inputs_split_into_frames_and_round_trip() {
        let data: Vec<u8> = (0..(3 * CHUNK + 123)).map(|i| (i % 251) as u8).collect();
        let z = framed(&data);
        assert_eq!(frames(&z).unwrap().len(), 4);
        assert_eq!(declared_content_size(&z).unwrap(), Some(data.len() as u64));
        assert_eq!(decompress(&z, data.len() as u64).unwrap(), data);
        assert_eq!(joined(decompress_pieces(Bytes::from_vec(z.clone()), data.len() as u64).unwrap()).unwrap(), data);
        let short = decompress_pieces(Bytes::from_vec(z.clone()), data.len() as u64 - 1).err().unwrap();
        assert_eq!(short.rule(), Some(Rule::DecompressedSizeMismatch));
    }

    #[test]
    fn one_large_frame_decodes_in_pieces() {
        // One frame larger than a piece (as the reference writes any tensor): streamed.
        let data: Vec<u8> = (0..(MAX_PIECE_FRAME as usize + 5 * CHUNK / 2)).map(|i| (i / 7 % 253) as u8).collect();
        let z = compress(&data, 1).unwrap();
        assert_eq!(frames(&z).unwrap().len(), 1);
        assert_eq!(joined(decompress_pieces(Bytes::from_vec(z.clone()), data.len() as u64).unwrap()).unwrap(), data);
        for wrong in [data.len() as u64 - 1, data.len() as u64 + 1] {
            let err = decompress_pieces(Bytes::from_vec(z.clone()), wrong).and_then(joined).unwrap_err();
            assert_eq!(err.rule(), Some(Rule::DecompressedSizeMismatch), "{wrong}");
        }
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
        assert_eq!(joined(decompress_pieces(Bytes::from_vec(z.clone()), 100_000).unwrap()).unwrap(), data);
        for wrong in [99_999, 100_001] {
            let err = decompress_pieces(Bytes::from_vec(z.clone()), wrong).and_then(joined).unwrap_err();
            assert_eq!(err.rule(), Some(Rule::DecompressedSizeMismatch), "{wrong}");
        }
    }

    /// One frame of one RLE block (`byte` repeated `n` times, n < 2^21) whose header
    /// claims `claimed` bytes of content.
    fn rle_frame(byte: u8, n: u32, claimed: u64) -> Vec<u8> {
        let mut f = 0xFD2F_B528u32.to_le_bytes().to_vec();
        f.push(0xC0 | 0x20); // 8-byte content size, single segment
        f.extend_from_slice(&claimed.to_le_bytes());
        let block = (n << 3) | (1 << 1) | 1; // last block, RLE
        f.extend_from_slice(&block.to_le_bytes()[..3]);
        f.push(byte);
        f
    }

    #[test]
    fn a_frame_claiming_more_than_its_blocks_hold_is_refused_before_allocating() {
        let honest = rle_frame(7, 1000, 1000);
        assert_eq!(decompress(&honest, 1000).unwrap(), vec![7u8; 1000]);
        assert_eq!(joined(decompress_pieces(Bytes::from_vec(honest.clone()), 1000).unwrap()).unwrap(), vec![7u8; 1000]);
        for claimed in [1 << 31, 1 << 40, 1 << 60] {
            let liar = rle_frame(7, 1000, claimed);
            let whole = decompress(&liar, claimed).unwrap_err();
            assert_eq!(whole.rule(), Some(Rule::DecompressedSizeMismatch), "{claimed}: {whole}");
            let pieces = decompress_pieces(Bytes::from_vec(liar.clone()), claimed).err().unwrap();
            assert_eq!(pieces.rule(), Some(Rule::DecompressedSizeMismatch), "{claimed}: {pieces}");
        }
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
