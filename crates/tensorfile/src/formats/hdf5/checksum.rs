//! The checksum of HDF5's newer structures (superblock v2/v3, v2 object headers, B-tree v2
//! nodes, fractal heap blocks...): Bob Jenkins' lookup3 `hashlittle` with an initial value of
//! 0, stored little-endian in the last four bytes of the block it covers.

use crate::cursor;
use crate::error::{Error, Result, Rule};

/// lookup3's `hashlittle` of `bytes` with initial value 0, as HDF5 computes its checksums.
pub(super) fn lookup3(bytes: &[u8]) -> u32 {
    let init = 0xdead_beef_u32.wrapping_add(bytes.len() as u32);
    let (mut a, mut b, mut c) = (init, init, init);
    let word = |k: &[u8]| k.iter().enumerate().fold(0u32, |v, (i, &x)| v.wrapping_add(u32::from(x) << (8 * i)));
    let mut rest = bytes;
    while rest.len() > 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    // The last one to twelve bytes, the missing ones counting as zero.
    a = a.wrapping_add(word(&rest[..rest.len().min(4)]));
    if rest.len() > 4 {
        b = b.wrapping_add(word(&rest[4..rest.len().min(8)]));
    }
    if rest.len() > 8 {
        c = c.wrapping_add(word(&rest[8..]));
    }
    finish(&mut a, &mut b, &mut c);
    c
}

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

fn finish(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

/// Check a block whose last four bytes are the lookup3 checksum of the bytes before them;
/// `what` names the block in the error.
pub(super) fn verify(block: &[u8], what: &str) -> Result<()> {
    let Some(body_len) = block.len().checked_sub(4) else {
        return Err(Error::invalid(
            Rule::Truncated,
            format!("{what}: {} bytes, too short for a checksum", block.len()),
        ));
    };
    let stored = cursor::u32_le_at(block, body_len, what)?;
    let computed = lookup3(&block[..body_len]);
    if stored != computed {
        return Err(Error::invalid(
            Rule::ChecksumMismatch,
            format!("{what}: stored checksum {stored:#010x}, the bytes give {computed:#010x}"),
        ));
    }
    Ok(())
}

/// `body` followed by its checksum: how tests and the conformance generator build blocks.
#[cfg(test)]
pub(super) fn sealed(body: &[u8]) -> Vec<u8> {
    let mut v = body.to_vec();
    v.extend_from_slice(&lookup3(body).to_le_bytes());
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_of_hashlittle() {
        // The values lookup3.c's own self-test prints for initval 0.
        assert_eq!(lookup3(b""), 0xdead_beef);
        assert_eq!(lookup3(b"Four score and seven years ago"), 0x1777_0551);
    }

    #[test]
    fn a_changed_byte_is_a_mismatch() {
        let mut block = sealed(b"OHDR\x02\x00some header bytes");
        verify(&block, "header").unwrap();
        block[5] ^= 1;
        assert_eq!(verify(&block, "header").unwrap_err().rule(), Some(Rule::ChecksumMismatch));
        assert_eq!(verify(&[1, 2], "x").unwrap_err().rule(), Some(Rule::Truncated));
    }
}
