//! Reading fixed-width fields from file bytes without panicking.
//!
//! [`Cursor`] walks a slice, reading integers and byte runs one after another; the
//! `*_at` functions read one integer at an offset of a slice. Every read of bytes the input
//! does not have is an [`Error`] with [`Rule::Truncated`], saying what was being read and at
//! which offset: never a panic, never a default value standing in for missing bytes.

use crate::error::{Error, Result, Rule};

/// The error for `n` bytes of `what` wanted at `offset`, where only `left` remain.
fn cut_short(what: &str, n: usize, offset: u64, left: usize) -> Error {
    Error::invalid(Rule::Truncated, format!("{what} cut short: {n} bytes needed at offset {offset}, {left} left"))
}

/// The `N` bytes of `b` at `at`.
pub fn array_at<const N: usize>(b: &[u8], at: usize, what: &str) -> Result<[u8; N]> {
    at.checked_add(N)
        .and_then(|end| b.get(at..end))
        .and_then(|s| <[u8; N]>::try_from(s).ok())
        .ok_or_else(|| cut_short(what, N, at as u64, b.len().saturating_sub(at)))
}

/// `len` bytes of `b` at `at`.
#[cfg(any(test, feature = "internals"))]
pub fn bytes_at<'a>(b: &'a [u8], at: usize, len: usize, what: &str) -> Result<&'a [u8]> {
    at.checked_add(len)
        .and_then(|end| b.get(at..end))
        .ok_or_else(|| cut_short(what, len, at as u64, b.len().saturating_sub(at)))
}

macro_rules! read_at {
    ($($(#[$doc:meta])* $name:ident: $t:ty, $from:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(b: &[u8], at: usize, what: &str) -> Result<$t> {
                Ok(<$t>::$from(array_at(b, at, what)?))
            }
        )*
    };
}

read_at! {
    /// The little-endian `u16` of `b` at `at`.
    u16_le_at: u16, from_le_bytes;
    /// The little-endian `u32` of `b` at `at`.
    u32_le_at: u32, from_le_bytes;
    /// The little-endian `u64` of `b` at `at`.
    u64_le_at: u64, from_le_bytes;
}

/// A position in a slice of file bytes, read forwards.
#[derive(Debug, Clone, Copy)]
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Where `bytes` start in the file, for messages.
    base: u64,
}

macro_rules! read_int {
    ($($(#[$doc:meta])* $name:ident: $t:ty, $from:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&mut self, what: &str) -> Result<$t> {
                Ok(<$t>::$from(self.array(what)?))
            }
        )*
    };
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0, base: 0 }
    }

    /// A cursor at the start of `bytes`, which lie at offset `base` of the file: messages give
    /// offsets in the file.
    pub fn with_base(bytes: &'a [u8], base: u64) -> Self {
        Cursor { bytes, pos: 0, base }
    }

    /// Bytes read so far: the position in the slice.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The offset in the file of the next byte (the base plus the position).
    pub fn offset(&self) -> u64 {
        self.base.saturating_add(self.pos as u64)
    }

    /// Bytes left to read.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// Whether every byte has been read.
    pub fn is_at_end(&self) -> bool {
        self.remaining() == 0
    }

    /// The next byte, not consumed (`None` at the end).
    pub fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// The bytes not yet read, not consumed.
    pub fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let s = self.rest().get(..n).ok_or_else(|| cut_short(what, n, self.offset(), self.remaining()))?;
        self.pos += n;
        Ok(s)
    }

    /// Pass over the next `n` bytes.
    pub fn skip(&mut self, n: usize, what: &str) -> Result<()> {
        self.take(n, what).map(|_| ())
    }

    /// The next `N` bytes, as an array.
    pub fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let s = self.take(N, what)?;
        <[u8; N]>::try_from(s).map_err(|_| cut_short(what, N, self.offset(), self.remaining()))
    }

    /// The next byte.
    pub fn u8(&mut self, what: &str) -> Result<u8> {
        Ok(self.array::<1>(what)?[0])
    }

    read_int! {
        /// The next two bytes, little-endian.
        u16_le: u16, from_le_bytes;
        /// The next two bytes, big-endian.
        u16_be: u16, from_be_bytes;
        /// The next four bytes, little-endian.
        u32_le: u32, from_le_bytes;
        /// The next four bytes, big-endian.
        u32_be: u32, from_be_bytes;
        /// The next eight bytes, little-endian.
        u64_le: u64, from_le_bytes;
        /// The next eight bytes, big-endian.
        u64_be: u64, from_be_bytes;
        /// The next byte, as a signed integer.
        #[cfg(any(test, feature = "internals"))]
        i8: i8, from_le_bytes;
        /// The next two bytes, little-endian, signed.
        #[cfg(any(test, feature = "internals"))]
        i16_le: i16, from_le_bytes;
        /// The next four bytes, little-endian, signed.
        #[cfg(any(test, feature = "internals"))]
        i32_le: i32, from_le_bytes;
        /// The next eight bytes, little-endian, signed.
        #[cfg(any(test, feature = "internals"))]
        i64_le: i64, from_le_bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn truncated<T: std::fmt::Debug>(r: Result<T>) -> String {
        let e = r.unwrap_err();
        assert_eq!(e.rule(), Some(Rule::Truncated), "{e}");
        e.detail()
    }

    #[test]
    fn reads_in_order_both_byte_orders() {
        let b = [1, 2, 0, 0, 2, 0xff, 0xff, 0xff, 0xfe, 9, 8, 7, 6, 5, 4, 3, 2, 1];
        let mut c = Cursor::new(&b);
        assert_eq!(c.u8("a").unwrap(), 1);
        assert_eq!(c.u16_le("b").unwrap(), 2);
        assert_eq!(c.u16_be("c").unwrap(), 2);
        assert_eq!(c.position(), 5);
        assert_eq!(c.i32_le("d").unwrap(), -16_777_217);
        assert_eq!(c.remaining(), 9);
        assert_eq!(c.peek(), Some(9));
        assert_eq!(c.u64_be("e").unwrap(), 0x0908_0706_0504_0302);
        assert_eq!(c.rest(), &[1]);
        assert_eq!(c.i8("f").unwrap(), 1);
        assert!(c.is_at_end());
        assert_eq!(c.peek(), None);
    }

    #[test]
    fn every_read_of_short_input_is_truncated_and_consumes_nothing() {
        let b = [0u8; 7];
        let mut c = Cursor::with_base(&b, 100);
        c.skip(1, "lead").unwrap();
        let at = c;
        assert!(truncated(c.take(7, "the run")).contains("the run cut short: 7 bytes needed at offset 101, 6 left"));
        assert!(truncated(c.skip(7, "the gap")).contains("the gap"));
        assert!(truncated(c.array::<8>("eight")).contains("eight"));
        assert!(truncated(c.u64_le("a length")).contains("a length cut short: 8 bytes needed at offset 101"));
        truncated(c.u64_be("x"));
        truncated(c.i64_le("x"));
        c.skip(3, "x").unwrap();
        truncated(c.u32_le("x"));
        truncated(c.u32_be("x"));
        truncated(c.i32_le("x"));
        c.skip(2, "x").unwrap();
        truncated(c.u16_le("x"));
        truncated(c.u16_be("x"));
        truncated(c.i16_le("x"));
        c.skip(1, "x").unwrap();
        truncated(c.u8("x"));
        truncated(c.i8("x"));
        truncated(c.take(1, "x"));
        assert_eq!(c.take(0, "nothing").unwrap(), &[] as &[u8]);
        assert_eq!((c.position(), c.offset()), (7, 107));
        assert_eq!(at.position(), 1, "a copy keeps its own position");
    }

    #[test]
    fn reads_at_an_offset() {
        let b = [1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(u16_le_at(&b, 0, "x").unwrap(), 1);
        assert_eq!(u32_le_at(&b, 2, "x").unwrap(), 2);
        assert_eq!(u64_le_at(&b, 6, "x").unwrap(), 3);
        assert_eq!(bytes_at(&b, 2, 2, "x").unwrap(), &[2, 0]);
        assert!(
            truncated(u16_le_at(&b, 13, "the count"))
                .contains("the count cut short: 2 bytes needed at offset 13, 1 left")
        );
        truncated(u32_le_at(&b, 11, "x"));
        truncated(u64_le_at(&b, 7, "x"));
        truncated(u64_le_at(&b, usize::MAX, "x"));
        truncated(array_at::<4>(&b, 20, "x"));
        truncated(bytes_at(&b, 10, 5, "x"));
        truncated(bytes_at(&b, 1, usize::MAX, "x"));
    }
}
