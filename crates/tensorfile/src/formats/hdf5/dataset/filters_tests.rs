use std::io::Write;

use super::*;

fn deflate(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn pipeline_messages() {
    // Version 2: deflate (level 4), shuffle (4-byte elements), fletcher32.
    let mut v2 = vec![2, 3];
    v2.extend_from_slice(&[1, 0, 0, 0, 1, 0, 4, 0, 0, 0]);
    v2.extend_from_slice(&[2, 0, 0, 0, 1, 0, 4, 0, 0, 0]);
    v2.extend_from_slice(&[3, 0, 0, 0, 0, 0]);
    assert_eq!(parse(&v2).unwrap(), [Filter::Deflate, Filter::Shuffle(4), Filter::Fletcher32]);
    // Version 1: lzf (32000) with its name, refused naming it.
    let mut v1 = vec![1, 1, 0, 0, 0, 0, 0, 0];
    v1.extend_from_slice(&[0x00, 0x7d, 4, 0, 1, 0, 0, 0]);
    v1.extend_from_slice(b"lzf\0\0\0\0\0");
    let e = parse(&v1).unwrap_err();
    assert_eq!(e.rule(), Some(Rule::UnknownEncoding));
    assert!(e.to_string().contains("32000 (lzf)"), "{e}");
}

#[test]
fn filters_undone_in_reverse() {
    let data: Vec<u8> = (0..64u8).collect();
    let shuffled: Vec<u8> = (0..4).flat_map(|j| data.chunks(4).map(move |e| e[j])).collect();
    let mut stored = deflate(&shuffled);
    let sum = fletcher32(&stored);
    stored.extend_from_slice(&sum.to_le_bytes());
    let pipeline = [Filter::Shuffle(4), Filter::Deflate, Filter::Fletcher32];
    assert_eq!(undo(&pipeline, 0, &stored, 64).unwrap(), data);
    // A flipped byte fails the checksum.
    let mut bad = stored.clone();
    bad[3] ^= 1;
    assert_eq!(undo(&pipeline, 0, &bad, 64).unwrap_err().rule(), Some(Rule::ChecksumMismatch));
    // The mask skips the deflate filter: the stored bytes are the shuffled ones.
    let mut plain = shuffled.clone();
    plain.extend_from_slice(&fletcher32(&shuffled).to_le_bytes());
    assert_eq!(undo(&pipeline, 0b010, &plain, 64).unwrap(), data);
    // Inflating past the chunk's size.
    assert_eq!(
        undo(&[Filter::Deflate], 0, &deflate(&[0; 100]), 64).unwrap_err().rule(),
        Some(Rule::DecompressedSizeMismatch)
    );
    assert_eq!(undo(&[Filter::Deflate], 0, &[1, 2, 3], 64).unwrap_err().rule(), Some(Rule::BadCompressedData));
}

#[test]
fn checksum_first_is_deflated_with_the_data() {
    // PyTables' order: fletcher32, shuffle, deflate. The deflate step was given the 2 data
    // bytes and the 4-byte checksum; the chunk holds 2.
    let data = [7u8, 9];
    let mut summed = data.to_vec();
    summed.extend_from_slice(&fletcher32(&data).to_le_bytes());
    let pipeline = [Filter::Fletcher32, Filter::Shuffle(1), Filter::Deflate];
    assert_eq!(undo(&pipeline, 0, &deflate(&summed), 2).unwrap(), data);
    // One byte more than the checksum allows is still refused.
    let mut long = summed.clone();
    long.push(0);
    assert_eq!(undo(&pipeline, 0, &deflate(&long), 2).unwrap_err().rule(), Some(Rule::DecompressedSizeMismatch));
    // A chunk that skipped the fletcher32 filter (mask bit 0) inflates to the data alone.
    assert_eq!(undo(&pipeline, 0b001, &deflate(&data), 2).unwrap(), data);
    assert_eq!(undo(&pipeline, 0b001, &deflate(&summed), 2).unwrap_err().rule(), Some(Rule::DecompressedSizeMismatch));
}

#[test]
fn fletcher32_of_odd_lengths() {
    assert_eq!(fletcher32(&[]), 0);
    // One word 0x0102: sum1 = 0x0102, sum2 = 0x0102.
    assert_eq!(fletcher32(&[1, 2]), 0x0102_0102);
    // An odd byte is the high byte of a last word.
    assert_eq!(fletcher32(&[1, 2, 3]), ((0x0102 + 0x0402) << 16) | 0x0402);
    // Over many words (the sums are folded every 360 words) it is the sums modulo 65535.
    let data: Vec<u8> = (0..10_001u32).map(|i| (i * 7 + i / 300) as u8).collect();
    let (mut s1, mut s2) = (0u64, 0u64);
    for w in data.chunks(2) {
        s1 = (s1 + (u64::from(w[0]) << 8 | w.get(1).map_or(0, |&b| u64::from(b)))) % 65535;
        s2 = (s2 + s1) % 65535;
    }
    assert!(s1 != 0 && s2 != 0);
    assert_eq!(fletcher32(&data), ((s2 << 16) | s1) as u32);
}
