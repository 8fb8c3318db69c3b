//! Checked arithmetic on numbers that come from files.
//!
//! A number read from a file is never used to index, add, multiply or allocate without going
//! through one of these helpers: each returns an [`Error`] naming the broken [`Rule`] instead of
//! overflowing, truncating (`as`) or panicking.

use std::ops::Range;

use crate::error::{Error, Result, Rule};

/// A file-derived `u64` as `usize`, or `OutOfBounds` on 32-bit targets where it does not fit.
pub fn to_usize(value: u64, what: &str) -> Result<usize> {
    usize::try_from(value)
        .map_err(|_| Error::invalid(Rule::OutOfBounds, format!("{what} {value} does not fit in memory")))
}

/// `offset + len` as a range inside a buffer of `total` bytes.
pub fn range_within(offset: u64, len: u64, total: usize, what: &str) -> Result<Range<usize>> {
    let end = offset
        .checked_add(len)
        .ok_or_else(|| Error::invalid(Rule::OutOfBounds, format!("{what}: offset {offset} + size {len} overflows")))?;
    if end > total as u64 {
        return Err(Error::invalid(
            Rule::OutOfBounds,
            format!("{what}: bytes {offset}..{end} run past the end ({total} bytes)"),
        ));
    }
    Ok(to_usize(offset, what)?..to_usize(end, what)?)
}

/// Product of a shape's dimensions; the empty shape (a scalar) has one element.
pub fn numel(shape: &[u64]) -> Result<u64> {
    shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| Error::invalid(Rule::ShapeOverflow, format!("shape {shape:?} has more than 2^64 elements")))
}

/// `a * b`, or `ShapeOverflow`.
pub fn mul(a: u64, b: u64, what: &str) -> Result<u64> {
    a.checked_mul(b).ok_or_else(|| Error::invalid(Rule::ShapeOverflow, format!("{what}: {a} * {b} overflows")))
}

/// `a + b`, or `OutOfBounds`.
pub fn add(a: u64, b: u64, what: &str) -> Result<u64> {
    a.checked_add(b).ok_or_else(|| Error::invalid(Rule::OutOfBounds, format!("{what}: {a} + {b} overflows")))
}

/// A buffer of `len` zero bytes, refused when `len` exceeds what the input can justify.
///
/// `justified` is the most bytes this allocation may legitimately need (for example the
/// declared dense size of a tensor that was itself checked against the file). This keeps a
/// tiny hostile file from asking for terabytes.
pub fn zeroed(len: u64, justified: u64, what: &str) -> Result<Vec<u8>> {
    if len > justified {
        return Err(Error::invalid(
            Rule::SizeMismatch,
            format!("{what}: {len} bytes asked for, at most {justified} justified"),
        ));
    }
    let n = to_usize(len, what)?;
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::unsupported(format!("{what}: cannot allocate {n} bytes")))?;
    v.resize(n, 0);
    Ok(v)
}

/// Round `value` up to a multiple of `align` (a power of two).
pub fn align_up(value: u64, align: u64) -> Result<u64> {
    debug_assert!(align.is_power_of_two());
    value
        .checked_add(align - 1)
        .map(|v| v & !(align - 1))
        .ok_or_else(|| Error::invalid(Rule::OutOfBounds, format!("aligning {value} overflows")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_past_end_is_out_of_bounds() {
        assert_eq!(range_within(10, 5, 12, "t").unwrap_err().rule(), Some(Rule::OutOfBounds));
        assert_eq!(range_within(u64::MAX, 2, 12, "t").unwrap_err().rule(), Some(Rule::OutOfBounds));
        assert_eq!(range_within(4, 8, 12, "t").unwrap(), 4..12);
    }

    #[test]
    fn numel_overflow_and_scalar() {
        assert_eq!(numel(&[]).unwrap(), 1);
        assert_eq!(numel(&[0, u64::MAX]).unwrap(), 0);
        assert_eq!(numel(&[1 << 32, 1 << 32]).unwrap_err().rule(), Some(Rule::ShapeOverflow));
    }

    #[test]
    fn zeroed_refuses_unjustified_sizes() {
        assert_eq!(zeroed(100, 10, "t").unwrap_err().rule(), Some(Rule::SizeMismatch));
        assert_eq!(zeroed(10, 10, "t").unwrap().len(), 10);
    }

    #[test]
    fn align_up_rounds() {
        assert_eq!(align_up(0, 64).unwrap(), 0);
        assert_eq!(align_up(1, 64).unwrap(), 64);
        assert_eq!(align_up(64, 64).unwrap(), 64);
        assert!(align_up(u64::MAX, 64).is_err());
    }
}
