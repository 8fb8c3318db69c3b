//! Reading an HDF5 file by address: the sizes of offsets and lengths and the base address the
//! superblock declares, every read checked against the file's length.

use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::source::{Bytes, Source};

/// The file as HDF5 addresses it: reads at addresses relative to the base address, and the
/// widths of the offsets ("addresses") and lengths its structures hold.
#[derive(Debug)]
pub(super) struct H5Io {
    src: Source,
    offset_size: u8,
    length_size: u8,
    base: u64,
}

impl H5Io {
    /// The file `src` with offsets of `offset_size` and lengths of `length_size` bytes (2, 4
    /// or 8) and addresses counted from `base`.
    pub(super) fn new(src: Source, offset_size: u8, length_size: u8, base: u64) -> Result<H5Io> {
        for (what, size) in [("size of offsets", offset_size), ("size of lengths", length_size)] {
            if !matches!(size, 2 | 4 | 8) {
                return Err(Error::invalid(Rule::BadField, format!("{what} {size}: this library reads 2, 4 or 8")));
            }
        }
        if base > src.len() {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!("base address {base} is past the end of the file ({} bytes)", src.len()),
            ));
        }
        Ok(H5Io { src, offset_size, length_size, base })
    }

    /// The width of an offset (an address) in bytes.
    pub(super) fn offset_size(&self) -> u8 {
        self.offset_size
    }

    /// The width of a length in bytes.
    pub(super) fn length_size(&self) -> u8 {
        self.length_size
    }

    /// The address every other address is relative to (0 unless the file has a user block).
    pub(super) fn base_address(&self) -> u64 {
        self.base
    }

    /// The file's length in bytes.
    pub(super) fn file_len(&self) -> u64 {
        self.src.len()
    }

    /// Whether `addr` is the undefined address (all bits set at the offset width).
    pub(super) fn is_undefined(&self, addr: u64) -> bool {
        addr == undefined(self.offset_size)
    }

    /// The offset in the file of address `addr`, checked so that `len` bytes fit there.
    pub(super) fn absolute(&self, addr: u64, len: u64, what: &str) -> Result<u64> {
        let at = checked::add(self.base, addr, what)?;
        let end = checked::add(at, len, what)?;
        if end > self.src.len() {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!(
                    "{what}: {len} bytes at address {addr} run past the end of the file ({} bytes)",
                    self.src.len()
                ),
            ));
        }
        Ok(at)
    }

    /// `len` bytes at address `addr` (relative to the base address), checked against the
    /// file's length before anything is read or allocated.
    pub(super) fn read(&self, addr: u64, len: u64) -> Result<Bytes> {
        self.read_what(addr, len, "block")
    }

    /// [`H5Io::read`], with what is read named in the error.
    pub(super) fn read_what(&self, addr: u64, len: u64, what: &str) -> Result<Bytes> {
        if self.is_undefined(addr) {
            return Err(Error::invalid(Rule::OutOfBounds, format!("{what} at the undefined address")));
        }
        let at = self.absolute(addr, len, what)?;
        self.src.range(at, len)
    }

    /// At most `len` bytes at address `addr`: fewer where the file ends first. For structures
    /// whose length is only known once their start is read.
    pub(super) fn read_up_to(&self, addr: u64, len: u64, what: &str) -> Result<Bytes> {
        let at = self.absolute(addr, 0, what)?;
        let n = len.min(self.src.len() - at);
        self.src.range(at, n)
    }

    /// The next offset (address) of `c`, `offset_size` bytes little-endian.
    pub(super) fn offset(&self, c: &mut Cursor<'_>) -> Result<u64> {
        uint(c, self.offset_size, "address")
    }

    /// The next length of `c`, `length_size` bytes little-endian.
    pub(super) fn length(&self, c: &mut Cursor<'_>) -> Result<u64> {
        uint(c, self.length_size, "length")
    }
}

/// The undefined address of an offset width: all ones.
pub(super) fn undefined(offset_size: u8) -> u64 {
    if offset_size >= 8 { u64::MAX } else { (1u64 << (8 * u32::from(offset_size))) - 1 }
}

/// The next `width` bytes of `c` (at most 8) as a little-endian unsigned integer.
pub(super) fn uint(c: &mut Cursor<'_>, width: u8, what: &str) -> Result<u64> {
    if width > 8 {
        return Err(Error::invalid(Rule::BadField, format!("{what} of {width} bytes (at most 8 are read)")));
    }
    let b = c.take(usize::from(width), what)?;
    Ok(b.iter().rev().fold(0u64, |v, &x| (v << 8) | u64::from(x)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(bytes: &[u8], base: u64) -> H5Io {
        H5Io::new(Source::local(Bytes::from_vec(bytes.to_vec())), 4, 8, base).unwrap()
    }

    #[test]
    fn reads_are_relative_to_the_base_and_checked_against_the_end() {
        let f = io(&[0, 1, 2, 3, 4, 5, 6, 7], 2);
        assert_eq!(&*f.read(1, 3).unwrap(), &[3, 4, 5]);
        assert_eq!(f.read(3, 4).unwrap_err().rule(), Some(Rule::OutOfBounds));
        assert_eq!(f.read(u64::MAX - 1, 4).unwrap_err().rule(), Some(Rule::OutOfBounds));
        assert_eq!(f.read(0xffff_ffff, 1).unwrap_err().rule(), Some(Rule::OutOfBounds));
        assert_eq!(&*f.read_up_to(4, 100, "x").unwrap(), &[6, 7]);
    }

    #[test]
    fn sized_fields_and_undefined_addresses() {
        let f = io(&[0; 4], 0);
        let b = [1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0];
        let mut c = Cursor::new(&b);
        assert_eq!(f.offset(&mut c).unwrap(), 1);
        assert_eq!(f.length(&mut c).unwrap(), 2);
        assert!(f.is_undefined(0xffff_ffff));
        assert!(!f.is_undefined(0xffff_fffe));
        assert_eq!(undefined(8), u64::MAX);
        assert_eq!(undefined(2), 0xffff);
        let bad = H5Io::new(Source::local(Bytes::from_vec(vec![])), 3, 8, 0).unwrap_err();
        assert_eq!(bad.rule(), Some(Rule::BadField));
    }
}
