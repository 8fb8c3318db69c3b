//! The encoding profile `zt.zstd-seekable/1`: independent zstd frames, each with a content
//! checksum and at most 16 MiB of content, all but the last of one size, then the zstd
//! seekable format's seek table (a skippable frame listing each frame's compressed and
//! decompressed size). Decoded into exactly the part's `decoded_length`, frames in parallel,
//! never allocating more than the frames present can produce.

use rayon::prelude::*;
use zstd::zstd_safe;

use crate::checked;
use crate::cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::ztensor::zstd_frames::frame_bound;

/// The magic of the skippable frame holding the seek table.
const TABLE_MAGIC: u32 = 0x184D_2A5E;
/// The last four bytes of a seekable stream.
const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;
/// A zstd frame's magic.
const FRAME_MAGIC: u32 = 0xFD2F_B528;
/// The seek table's footer: frame count, descriptor, magic.
const TABLE_FOOTER: usize = 9;
/// The most content one frame may have.
pub const MAX_FRAME: u64 = 16 << 20;

fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadCompressedData, format!("zstd-seekable: {}", detail.into()))
}

/// One frame, as the seek table places it.
struct Frame {
    start: usize,
    len: usize,
    content: u64,
}

/// The frames of `stored` as its seek table lists them, checked against the profile and
/// against the frames themselves; with the most the frames can decode to.
fn frames(stored: &[u8], decoded_length: u64) -> Result<(Vec<Frame>, u64)> {
    let n = stored.len();
    let at_end = |back: usize, what: &str| cursor::u32_le_at(stored, n.saturating_sub(back), what);
    if n < 8 + TABLE_FOOTER || at_end(4, "seekable magic")? != SEEKABLE_MAGIC {
        return Err(bad("the stream does not end with a seek table"));
    }
    let descriptor = stored[n - 5];
    if descriptor & 0x7c != 0 {
        return Err(bad(format!("the seek table descriptor {descriptor:#04x} sets reserved bits")));
    }
    let entry = if descriptor & 0x80 != 0 { 12 } else { 8 };
    let count = at_end(9, "frame count")? as usize;
    let content = count
        .checked_mul(entry)
        .and_then(|e| e.checked_add(TABLE_FOOTER))
        .filter(|&c| c + 8 <= n)
        .ok_or_else(|| bad(format!("a seek table of {count} frames does not fit in {n} bytes")))?;
    let table = n - content - 8;
    if cursor::u32_le_at(stored, table, "seek table magic")? != TABLE_MAGIC
        || cursor::u32_le_at(stored, table + 4, "seek table size")? as usize != content
    {
        return Err(bad("the seek table is not a skippable frame of its own size"));
    }
    let mut frames = Vec::with_capacity(count);
    let (mut start, mut total, mut bound) = (0usize, 0u64, 0u64);
    for k in 0..count {
        let at = table + 8 + k * entry;
        let len = cursor::u32_le_at(stored, at, "frame size")? as usize;
        let content = u64::from(cursor::u32_le_at(stored, at + 4, "frame content size")?);
        if content > MAX_FRAME {
            return Err(bad(format!("frame {k} holds {content} bytes (at most {MAX_FRAME})")));
        }
        if let Some(first) = frames.first().map(|f: &Frame| f.content) {
            if k + 1 < count && content != first {
                return Err(bad(format!(
                    "frame {k} holds {content} bytes, frame 0 {first}: all but the last are equal"
                )));
            }
        }
        let frame = start.checked_add(len).and_then(|end| stored.get(start..end).filter(|_| end <= table));
        let frame = frame.ok_or_else(|| bad(format!("frame {k} runs into the seek table")))?;
        check_frame(frame, content, k)?;
        bound = checked::add(bound, frame_bound(frame)?, "zstd bound")?;
        total = checked::add(total, content, "zstd-seekable content")?;
        frames.push(Frame { start, len, content });
        start += len;
    }
    if start != table {
        return Err(bad(format!("the frames take {start} bytes, {table} lie before the seek table")));
    }
    if total != decoded_length {
        return Err(Error::invalid(
            Rule::DecompressedSizeMismatch,
            format!("zstd-seekable frames hold {total} bytes, decoded_length is {decoded_length}"),
        ));
    }
    Ok((frames, bound))
}

/// One whole zstd frame with a content checksum, stating no other size than `content`.
fn check_frame(frame: &[u8], content: u64, k: usize) -> Result<()> {
    if cursor::u32_le_at(frame, 0, "frame magic").ok() != Some(FRAME_MAGIC) {
        return Err(bad(format!("frame {k} is not a zstd frame")));
    }
    if zstd_safe::find_frame_compressed_size(frame).ok() != Some(frame.len()) {
        return Err(bad(format!("frame {k} is not {} bytes long, as the seek table says", frame.len())));
    }
    // Frame header descriptor, bit 2: a content checksum follows the last block.
    if frame.get(4).is_none_or(|d| d & 0x04 == 0) {
        return Err(bad(format!("frame {k} has no content checksum")));
    }
    match zstd_safe::get_frame_content_size(frame) {
        Ok(Some(stated)) if stated != content => Err(Error::invalid(
            Rule::DecompressedSizeMismatch,
            format!("zstd-seekable frame {k} states {stated} bytes, its seek table entry {content}"),
        )),
        Ok(_) => Ok(()),
        Err(_) => Err(bad(format!("frame {k} has a corrupt header"))),
    }
}

/// Decode `stored` into exactly `decoded_length` bytes.
pub fn decode(stored: &[u8], decoded_length: u64) -> Result<Vec<u8>> {
    let (frames, bound) = frames(stored, decoded_length)?;
    if bound < decoded_length {
        return Err(Error::invalid(
            Rule::DecompressedSizeMismatch,
            format!("zstd-seekable frames can hold at most {bound} bytes, decoded_length is {decoded_length}"),
        ));
    }
    let mut out = checked::zeroed(decoded_length, bound, "decoded part")?;
    let mut slots = Vec::with_capacity(frames.len());
    let mut rest = out.as_mut_slice();
    for f in &frames {
        // The contents add up to the output's length (checked above).
        let (slot, tail) = rest.split_at_mut(f.content as usize);
        slots.push(slot);
        rest = tail;
    }
    frames.par_iter().zip(slots.into_par_iter()).enumerate().try_for_each(|(k, (f, slot))| {
        let src = &stored[f.start..f.start + f.len];
        let n = zstd_safe::decompress(slot, src)
            .map_err(|code| bad(format!("frame {k}: {}", zstd_safe::get_error_name(code))))?;
        if n as u64 != f.content {
            return Err(Error::invalid(
                Rule::DecompressedSizeMismatch,
                format!("zstd-seekable frame {k} decodes to {n} bytes, its seek table entry says {}", f.content),
            ));
        }
        Ok(())
    })?;
    Ok(out)
}

/// One zstd frame of `data` with a content checksum, for tests.
#[cfg(test)]
pub fn checked_frame(data: &[u8]) -> Vec<u8> {
    let mut cx = zstd::bulk::Compressor::new(3).unwrap();
    cx.set_parameter(zstd::stream::raw::CParameter::ChecksumFlag(true)).unwrap();
    cx.compress(data).unwrap()
}

/// `frames` (each with the content size its entry states) and their seek table, for tests.
#[cfg(test)]
pub fn stream(frames: &[(Vec<u8>, u32)]) -> Vec<u8> {
    let mut out: Vec<u8> = frames.iter().flat_map(|(f, _)| f.iter().copied()).collect();
    out.extend_from_slice(&TABLE_MAGIC.to_le_bytes());
    out.extend_from_slice(&((frames.len() * 8 + TABLE_FOOTER) as u32).to_le_bytes());
    for (f, content) in frames {
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&content.to_le_bytes());
    }
    out.extend_from_slice(&(frames.len() as u32).to_le_bytes());
    out.push(0);
    out.extend_from_slice(&SEEKABLE_MAGIC.to_le_bytes());
    out
}

/// `data` encoded as the profile says, `frame` bytes of content per frame, for tests.
#[cfg(test)]
pub fn encode(data: &[u8], frame: usize) -> Vec<u8> {
    let frames: Vec<(Vec<u8>, u32)> = data.chunks(frame.max(1)).map(|c| (checked_frame(c), c.len() as u32)).collect();
    stream(&frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(stored: &[u8], len: u64) -> Option<Rule> {
        decode(stored, len).err().and_then(|e| e.rule())
    }

    #[test]
    fn streams_decode_to_exactly_their_length() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for frame in [1000, 4096, 10_000, 20_000] {
            assert_eq!(decode(&encode(&data, frame), 10_000).unwrap(), data, "frames of {frame}");
        }
        assert_eq!(decode(&encode(&[], 10), 0).unwrap(), Vec::<u8>::new());
        assert_eq!(rule(&encode(&data, 4096), 9_999), Some(Rule::DecompressedSizeMismatch));
        assert_eq!(rule(&encode(&data, 4096), 10_001), Some(Rule::DecompressedSizeMismatch));
        // The last frame may be shorter or longer than the others.
        let (a, b) = (&data[..1000], &data[1000..3000]);
        let longer_last = stream(&[(checked_frame(a), 1000), (checked_frame(b), 2000)]);
        assert_eq!(decode(&longer_last, 3000).unwrap(), &data[..3000]);
    }

    #[test]
    fn broken_streams_are_refused() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 253) as u8).collect();
        let good = encode(&data, 2000);
        let n = good.len();
        let bad = Some(Rule::BadCompressedData);
        assert_eq!(rule(&good[..n - 1], 5000), bad);
        assert_eq!(rule(&[0; 8], 0), bad);
        let mut reserved = good.clone();
        reserved[n - 5] = 0x04;
        assert_eq!(rule(&reserved, 5000), bad);
        let mut count = good.clone();
        count[n - 9] = 200;
        assert_eq!(rule(&count, 5000), bad);
        let (f1, f2, f3) =
            (checked_frame(&data[..1000]), checked_frame(&data[1000..3000]), checked_frame(&data[3000..]));
        let unequal = stream(&[(f2.clone(), 2000), (f1.clone(), 1000), (f3.clone(), 2000)]);
        assert_eq!(rule(&unequal, 5000), bad, "frames before the last of unequal sizes");
        let lying = stream(&[(f1.clone(), 1500), (f2.clone(), 1500)]);
        assert_eq!(rule(&lying, 3000), Some(Rule::DecompressedSizeMismatch), "a frame stating another size");
        let mut short = f1.clone();
        short.pop();
        assert_eq!(rule(&stream(&[(short, 1000)]), 1000), bad, "a frame cut short");
        let plain = zstd::bulk::compress(&data, 3).unwrap();
        assert_eq!(rule(&stream(&[(plain, 5000)]), 5000), bad, "a frame without its checksum");
        let skippable = [0x50, 0x2a, 0x4d, 0x18, 0, 0, 0, 0].to_vec();
        assert_eq!(rule(&stream(&[(skippable, 0)]), 0), bad, "a skippable frame among the frames");
        let mut corrupt = f1.clone();
        let at = corrupt.len() - 1;
        corrupt[at] ^= 0xff;
        assert!(decode(&stream(&[(corrupt, 1000)]), 1000).is_err(), "a checksum that does not match");
        let huge = stream(&[(f1, (MAX_FRAME + 1) as u32)]);
        assert_eq!(rule(&huge, MAX_FRAME + 1), bad, "a frame past 16 MiB");
    }
}
