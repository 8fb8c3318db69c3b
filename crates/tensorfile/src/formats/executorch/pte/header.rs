//! The `.pte` file header: the flatbuffer root offset and `ET12`, then the optional `eh00`
//! extended header that places the program and its segments.

use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};

/// The identifier of the program schema tensorfile reads.
pub const IDENTIFIER: &[u8; 4] = b"ET12";
/// The extended header's length as ExecuTorch ≥ 1.0 writes it.
pub const EXTENDED_LENGTH: u32 = 32;
/// The shortest extended header (files before ExecuTorch 1.0).
const MIN_EXTENDED_LENGTH: u32 = 24;

/// Where the program and the segments are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderLayout {
    /// Length of the `eh00` header (0 when there is none).
    pub extended_length: u32,
    /// Bytes of the flatbuffer program, from byte 0 (headers included).
    pub program_size: u64,
    /// Absolute offset of the segment data (0: no segments).
    pub segment_base_offset: u64,
    /// Bytes of segment data.
    pub segment_data_size: u64,
}

impl HeaderLayout {
    /// Read the headers of a file of `bytes`, checked against its length.
    #[cfg(any(test, feature = "internals"))]
    pub fn parse(bytes: &[u8]) -> Result<HeaderLayout> {
        HeaderLayout::parse_head(bytes, bytes.len() as u64)
    }

    /// Read the headers from `head`, the first bytes of a file of `len` bytes (all of them,
    /// or at least the first 40: every field read lies there), checked against `len`.
    pub fn parse_head(bytes: &[u8], len: u64) -> Result<HeaderLayout> {
        // The caller's part: whether `eh00` follows is only known from bytes it passed.
        if (bytes.len() as u64) < len.min(40) {
            return Err(Error::invalid(Rule::Truncated, "program headers cut short"));
        }
        if len < 8 {
            return Err(Error::invalid(Rule::Truncated, format!("{len} bytes: too short for a program header")));
        }
        let mut c = Cursor::new(bytes);
        c.skip(4, "flatbuffer root offset")?;
        let ident = c.array::<4>("program identifier")?;
        if &ident != IDENTIFIER {
            let what = String::from_utf8_lossy(&ident);
            return Err(if ident.starts_with(b"ET") {
                Error::unsupported(format!("program format {what}: tensorfile reads ET12"))
            } else {
                Error::invalid(Rule::BadMagic, format!("identifier {what:?} is not ET12"))
            });
        }
        if !c.rest().starts_with(b"eh00") {
            return Ok(HeaderLayout {
                extended_length: 0,
                program_size: len,
                segment_base_offset: 0,
                segment_data_size: 0,
            });
        }
        c.skip(4, "extended header magic")?;
        let extended_length = c.u32_le("extended header length")?;
        if extended_length < MIN_EXTENDED_LENGTH {
            return Err(Error::invalid(Rule::BadField, format!("extended header length {extended_length} < 24")));
        }
        let header_end = 8 + u64::from(extended_length);
        if header_end > len {
            return Err(Error::invalid(Rule::Truncated, "extended header cut short"));
        }
        let program_size = c.u64_le("program size")?;
        let segment_base_offset = c.u64_le("segment base offset")?;
        if program_size < header_end || program_size > len {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!("program size {program_size} outside {header_end}..={len} (the headers..the file)"),
            ));
        }
        let segment_data_size = if extended_length >= 32 {
            c.u64_le("segment data size")?
        } else {
            // Before the field existed, segment data ran to the end of the file.
            len.saturating_sub(segment_base_offset)
        };
        if segment_base_offset != 0 {
            let end = checked::add(segment_base_offset, segment_data_size, "segment data")?;
            if segment_base_offset < program_size || end > len {
                return Err(Error::invalid(
                    Rule::OutOfBounds,
                    format!(
                        "segment data {segment_base_offset}..{end} outside {program_size}..={len} (after the program, within the file)"
                    ),
                ));
            }
        } else if segment_data_size != 0 {
            return Err(Error::invalid(Rule::BadField, "segment data without a segment base offset"));
        }
        Ok(HeaderLayout { extended_length, program_size, segment_base_offset, segment_data_size })
    }

    /// The 32-byte `eh00` header for a program of `program_size` bytes and its segments.
    pub fn extended_bytes(program_size: u64, segment_base_offset: u64, segment_data_size: u64) -> [u8; 32] {
        let mut b = [0u8; 32];
        b[0..4].copy_from_slice(b"eh00");
        b[4..8].copy_from_slice(&EXTENDED_LENGTH.to_le_bytes());
        b[8..16].copy_from_slice(&program_size.to_le_bytes());
        b[16..24].copy_from_slice(&segment_base_offset.to_le_bytes());
        b[24..32].copy_from_slice(&segment_data_size.to_le_bytes());
        b
    }
}
