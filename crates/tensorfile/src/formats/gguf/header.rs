//! The fixed header (magic, version, counts) and the walk over the index that follows it, in
//! the file's byte order.
//!
//! GGUF states no byte order: a file is written in its producer's. As gguf-py and ggml do, a
//! version whose low 16 bits read as zero in little-endian is taken as a big-endian file (a
//! version is small: 2 or 3). The index is read from a prefix of the file, which for a remote
//! file may end before the index does: the walk then asks for more ([`Stop::More`]) instead of
//! failing, and only the file's real end makes a read [`Rule::Truncated`].

use crate::error::{Error, Result, Rule};
use crate::model::ByteOrder;

/// The first four bytes of every GGUF file, in either byte order.
pub(crate) const MAGIC: &[u8; 4] = b"GGUF";

/// The version this library writes.
pub(crate) const WRITTEN_VERSION: u32 = 3;

/// Why a walk over the index stopped.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The file breaks a rule.
    Invalid(Error),
    /// The bytes given end before the index does: the file's first `n` bytes are needed.
    More(u64),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Invalid(e)
    }
}

/// A walk forward over the first bytes of a file of `file_len` bytes, reading integers in the
/// file's byte order.
pub(crate) struct Walk<'a> {
    bytes: &'a [u8],
    pos: usize,
    file_len: u64,
    big: bool,
}

impl<'a> Walk<'a> {
    /// A walk from the start of `bytes`, the first bytes (or all) of a file of `file_len`.
    pub fn new(bytes: &'a [u8], file_len: u64) -> Self {
        Walk { bytes, pos: 0, file_len, big: false }
    }

    /// The offset of the next byte in the file.
    pub fn offset(&self) -> u64 {
        self.pos as u64
    }

    /// Whether integers are big-endian.
    pub fn big_endian(&self) -> bool {
        self.big
    }

    /// Bytes of the file after the position (read or not yet).
    fn left_in_file(&self) -> u64 {
        self.file_len.saturating_sub(self.pos as u64)
    }

    /// Bytes given after the position: what a capacity may be sized by.
    pub fn left_in_bytes(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], Stop> {
        if n > self.left_in_file() {
            return Err(Stop::Invalid(Error::invalid(
                Rule::Truncated,
                format!("{what} cut short: {n} bytes needed at offset {}, {} left", self.pos, self.left_in_file()),
            )));
        }
        let end = self.pos as u64 + n;
        if end > self.bytes.len() as u64 {
            return Err(Stop::More(end));
        }
        let end = end as usize;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// Check that `count` items of at least `least` bytes each fit in what is left of the file,
    /// before any is read or room is made for them.
    pub fn expect(&self, count: u64, least: u64, what: &str) -> Result<(), Stop> {
        match count.checked_mul(least) {
            Some(need) if need <= self.left_in_file() => Ok(()),
            _ => Err(Stop::Invalid(Error::invalid(
                Rule::Truncated,
                format!(
                    "{count} {what} need at least {least} bytes each, {} bytes are left at offset {}",
                    self.left_in_file(),
                    self.pos
                ),
            ))),
        }
    }

    /// The next `N` bytes in little-endian order (reversed in a big-endian file).
    pub fn word<const N: usize>(&mut self, what: &str) -> Result<[u8; N], Stop> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N as u64, what)?);
        if self.big {
            a.reverse();
        }
        Ok(a)
    }

    /// The next `u32`.
    pub fn u32(&mut self, what: &str) -> Result<u32, Stop> {
        self.word(what).map(u32::from_le_bytes)
    }

    /// The next `u64`.
    pub fn u64(&mut self, what: &str) -> Result<u64, Stop> {
        self.word(what).map(u64::from_le_bytes)
    }

    /// A GGUF string: a `u64` length, then that many bytes of UTF-8.
    pub fn string(&mut self, what: &str) -> Result<String, Stop> {
        let len = self.u64(what)?;
        let at = self.pos;
        let bytes = self.take(len, what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_string()),
            Err(e) => Err(Stop::Invalid(Error::invalid(Rule::BadUtf8, format!("{what} at offset {at}: {e}")))),
        }
    }
}

/// What the fixed header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub version: u32,
    pub order: ByteOrder,
    pub tensor_count: u64,
    pub kv_count: u64,
}

/// Read the magic, the version (which tells the byte order) and the two counts.
pub(crate) fn header(w: &mut Walk<'_>) -> Result<Header, Stop> {
    if w.take(4, "magic")? != MAGIC {
        return Err(Stop::Invalid(Error::invalid(Rule::BadMagic, "the file does not start with GGUF")));
    }
    let raw = u32::from_le_bytes(w.word("version")?);
    if raw & 0xFFFF == 0 {
        w.big = true;
    }
    let version = if w.big { raw.swap_bytes() } else { raw };
    check_version(version)?;
    let tensor_count = w.u64("tensor count")?;
    let kv_count = w.u64("key/value count")?;
    let order = if w.big { ByteOrder::Big } else { ByteOrder::Little };
    Ok(Header { version, order, tensor_count, kv_count })
}

/// Versions 2 and 3 share one layout (3 added big-endian files); version 1 had 32-bit counts
/// and lengths and is read by no current tool.
fn check_version(version: u32) -> Result<()> {
    match version {
        2 | 3 => Ok(()),
        1 => Err(Error::invalid(
            Rule::BadField,
            "GGUF version 1 (32-bit counts, dropped by ggml and gguf-py): versions 2 and 3 are read",
        )),
        v => Err(Error::invalid(Rule::BadField, format!("GGUF version {v}: versions 2 and 3 are read"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop_rule(s: Stop) -> Option<Rule> {
        match s {
            Stop::Invalid(e) => e.rule(),
            Stop::More(n) => panic!("asked for {n} bytes"),
        }
    }

    #[test]
    fn the_version_tells_the_byte_order() {
        let mut le = b"GGUF".to_vec();
        le.extend_from_slice(&3u32.to_le_bytes());
        le.extend_from_slice(&5u64.to_le_bytes());
        le.extend_from_slice(&7u64.to_le_bytes());
        let h = header(&mut Walk::new(&le, le.len() as u64)).unwrap();
        assert_eq!(h, Header { version: 3, order: ByteOrder::Little, tensor_count: 5, kv_count: 7 });
        let mut be = b"GGUF".to_vec();
        be.extend_from_slice(&2u32.to_be_bytes());
        be.extend_from_slice(&5u64.to_be_bytes());
        be.extend_from_slice(&7u64.to_be_bytes());
        let h = header(&mut Walk::new(&be, be.len() as u64)).unwrap();
        assert_eq!(h, Header { version: 2, order: ByteOrder::Big, tensor_count: 5, kv_count: 7 });
    }

    #[test]
    fn a_short_prefix_asks_for_more_and_a_short_file_is_truncated() {
        let mut b = b"GGUF".to_vec();
        b.extend_from_slice(&3u32.to_le_bytes());
        b.extend_from_slice(&[0; 16]);
        assert!(matches!(header(&mut Walk::new(&b[..10], 24)), Err(Stop::More(16))));
        assert_eq!(stop_rule(header(&mut Walk::new(&b[..10], 10)).unwrap_err()), Some(Rule::Truncated));
        let w = Walk::new(&b, 24);
        assert_eq!(stop_rule(w.expect(u64::MAX, 2, "items").unwrap_err()), Some(Rule::Truncated));
        assert!(w.expect(12, 2, "items").is_ok());
    }

    #[test]
    fn other_versions_and_magics_are_refused() {
        for (version, rule) in [(1u32, Rule::BadField), (4, Rule::BadField), (0, Rule::BadField)] {
            let mut b = b"GGUF".to_vec();
            b.extend_from_slice(&version.to_le_bytes());
            b.extend_from_slice(&[0; 16]);
            assert_eq!(stop_rule(header(&mut Walk::new(&b, 24)).unwrap_err()), Some(rule), "version {version}");
        }
        assert_eq!(stop_rule(header(&mut Walk::new(b"GGML\x03\0\0\0", 8)).unwrap_err()), Some(Rule::BadMagic));
    }

    #[test]
    fn strings_must_be_utf8() {
        let mut b = 2u64.to_le_bytes().to_vec();
        b.extend_from_slice(&[0xc0, 0x80]);
        assert_eq!(stop_rule(Walk::new(&b, 10).string("key").unwrap_err()), Some(Rule::BadUtf8));
    }
}
