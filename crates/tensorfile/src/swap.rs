//! Byte-order conversion of element buffers.

/// A copy of `bytes` with every `unit`-byte group reversed (unit 1: an unchanged copy).
pub fn swapped(bytes: &[u8], unit: usize) -> Vec<u8> {
    let mut v = bytes.to_vec();
    swap_in_place(&mut v, unit);
    v
}

/// Reverse every `unit`-byte group of `bytes` in place. A trailing partial group is left as is.
pub fn swap_in_place(bytes: &mut [u8], unit: usize) {
    match unit {
        0 | 1 => {}
        2 => bytes.chunks_exact_mut(2).for_each(|c| c.swap(0, 1)),
        4 => bytes.chunks_exact_mut(4).for_each(|c| {
            let v = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]).swap_bytes();
            c.copy_from_slice(&v.to_ne_bytes());
        }),
        8 => bytes.chunks_exact_mut(8).for_each(|c| {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            c.copy_from_slice(&u64::from_ne_bytes(a).swap_bytes().to_ne_bytes());
        }),
        n => bytes.chunks_exact_mut(n).for_each(|c| c.reverse()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_by_unit() {
        assert_eq!(swapped(&[1, 2, 3, 4], 2), [2, 1, 4, 3]);
        assert_eq!(swapped(&[1, 2, 3, 4, 5, 6, 7, 8], 4), [4, 3, 2, 1, 8, 7, 6, 5]);
        assert_eq!(swapped(&[1, 2, 3, 4, 5, 6, 7, 8], 8), [8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(swapped(&[1, 2, 3], 1), [1, 2, 3]);
        assert_eq!(swapped(&(0..16).collect::<Vec<u8>>(), 16), (0..16).rev().collect::<Vec<u8>>());
    }
}
