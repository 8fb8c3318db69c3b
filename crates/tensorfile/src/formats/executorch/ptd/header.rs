//! The `FH01` header at byte 8 of a `.ptd` file.

use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};

/// Bytes of the header as ExecuTorch writes it (magic, length, four u64).
pub const LENGTH: u64 = 40;
/// The header's length padded to the flatbuffer's alignment: `flatbuffer_offset`.
pub const PADDED_LENGTH: u64 = 48;

/// The `FH01` header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The padded header length (not where the flatbuffer starts: it starts at byte 0).
    pub flatbuffer_offset: u64,
    /// Bytes of the flatbuffer after the padded header: it spans
    /// `0..flatbuffer_offset + flatbuffer_size`.
    pub flatbuffer_size: u64,
    /// Absolute offset of the segment data.
    pub segment_base_offset: u64,
    /// Bytes of segment data (0: no segments).
    pub segment_data_size: u64,
}

impl Header {
    /// Parse and check the header of a whole file.
    #[cfg(any(test, feature = "internals"))]
    pub fn parse(bytes: &[u8]) -> Result<Header> {
        Header::parse_head(bytes, bytes.len() as u64)
    }

    /// Parse the header from `bytes`, the first bytes of a file of `file_len` bytes (all of
    /// them, or at least the first 48: every field read lies there), and check it against
    /// `file_len`.
    pub fn parse_head(bytes: &[u8], file_len: u64) -> Result<Header> {
        if file_len < 48 {
            return Err(Error::invalid(Rule::Truncated, format!("{file_len} bytes: too short for the FH01 header")));
        }
        let mut c = Cursor::new(bytes);
        c.skip(4, "flatbuffer root offset")?;
        if &c.array::<4>("file identifier")? != b"FT01" {
            return Err(Error::invalid(Rule::BadMagic, "file identifier is not FT01"));
        }
        if &c.array::<4>("FH01 magic")? != b"FH01" {
            return Err(Error::invalid(Rule::BadMagic, "no FH01 header at byte 8"));
        }
        let length = u64::from(c.u32_le("FH01 header length")?);
        if length < LENGTH {
            return Err(Error::invalid(Rule::BadField, format!("FH01 header length {length} < {LENGTH}")));
        }
        let h = Header {
            flatbuffer_offset: c.u64_le("FH01 flatbuffer offset")?,
            flatbuffer_size: c.u64_le("FH01 flatbuffer size")?,
            segment_base_offset: c.u64_le("FH01 segment base offset")?,
            segment_data_size: c.u64_le("FH01 segment data size")?,
        };
        let fb_end = checked::add(h.flatbuffer_offset, h.flatbuffer_size, "flatbuffer region")?;
        if h.flatbuffer_offset < length || fb_end > file_len {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!(
                    "flatbuffer region 0..{fb_end} (after a {}-byte header) does not fit the file of {file_len} bytes",
                    h.flatbuffer_offset
                ),
            ));
        }
        let seg_end = checked::add(h.segment_base_offset, h.segment_data_size, "segment region")?;
        if seg_end > file_len {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!(
                    "segment data {}..{seg_end} runs past the end of the file ({file_len} bytes)",
                    h.segment_base_offset
                ),
            ));
        }
        if h.segment_data_size > 0 && h.segment_base_offset < fb_end {
            return Err(Error::invalid(Rule::Overlap, "segment data overlaps the flatbuffer"));
        }
        Ok(h)
    }

    /// The 40 header bytes followed by zeros up to the padded length.
    pub fn to_bytes(self) -> [u8; PADDED_LENGTH as usize] {
        let mut b = [0u8; PADDED_LENGTH as usize];
        b[0..4].copy_from_slice(b"FH01");
        b[4..8].copy_from_slice(&(LENGTH as u32).to_le_bytes());
        b[8..16].copy_from_slice(&self.flatbuffer_offset.to_le_bytes());
        b[16..24].copy_from_slice(&self.flatbuffer_size.to_le_bytes());
        b[24..32].copy_from_slice(&self.segment_base_offset.to_le_bytes());
        b[32..40].copy_from_slice(&self.segment_data_size.to_le_bytes());
        b
    }
}
