//! zstd frames written by hand (raw and RLE blocks), so the corpus does not depend on the
//! output of a zstd library version. Frame format: RFC 8878.

const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
/// The largest block.
const BLOCK: usize = 128 * 1024;

fn block_header(out: &mut Vec<u8>, last: bool, kind: u32, size: usize) {
    let v = u32::from(last) | (kind << 1) | ((size as u32) << 3);
    out.extend_from_slice(&v.to_le_bytes()[..3]);
}

/// A frame header stating `content` as the frame's size (single segment), or, with `None`,
/// stating none (a 128 KiB window).
fn frame_header(content: Option<u64>) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    match content {
        None => {
            out.push(0x00); // no content size, not single-segment, no checksum, no dictionary
            out.push(0x38); // window descriptor: 2^(10 + 7) = 128 KiB
        }
        Some(n) if n < 256 => {
            out.push(0x20);
            out.push(n as u8);
        }
        Some(n) if n < 65536 + 256 => {
            out.push(0x60);
            out.extend_from_slice(&((n - 256) as u16).to_le_bytes());
        }
        Some(n) if n <= u64::from(u32::MAX) => {
            out.push(0xa0);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        Some(n) => {
            out.push(0xe0);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
    out
}

/// One frame holding `data` in raw blocks, stating its size.
pub fn raw_frame(data: &[u8]) -> Vec<u8> {
    let mut out = frame_header(Some(data.len() as u64));
    let chunks: Vec<&[u8]> = if data.is_empty() { vec![&[]] } else { data.chunks(BLOCK).collect() };
    for (i, c) in chunks.iter().enumerate() {
        block_header(&mut out, i + 1 == chunks.len(), 0, c.len());
        out.extend_from_slice(c);
    }
    out
}

/// One frame of `count` copies of `byte` in RLE blocks (4 bytes per 128 KiB), stating
/// `declared` as its size (`None`: no size stated).
pub fn rle_frame(byte: u8, count: usize, declared: Option<u64>) -> Vec<u8> {
    let mut out = frame_header(declared);
    let mut left = count;
    loop {
        let n = left.min(BLOCK);
        left -= n;
        block_header(&mut out, left == 0, 1, n);
        out.push(byte);
        if left == 0 {
            return out;
        }
    }
}
