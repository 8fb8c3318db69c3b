//! The optional header in front of an XNNPACK payload: four zero bytes, `XH00` (where a bare
//! flatbuffer has its identifier, so either can be told apart at bytes 4..8), then where the
//! flatbuffer and the constant data are. All numbers little-endian.
//!
//! | bytes  | field                          |
//! |--------|--------------------------------|
//! | 0..4   | zero                           |
//! | 4..8   | `XH00`                         |
//! | 8..10  | header length (u16, 30)        |
//! | 10..14 | flatbuffer offset (u32)        |
//! | 14..18 | flatbuffer size (u32)          |
//! | 18..22 | constant data offset (u32)     |
//! | 22..30 | constant data size (u64)       |

use crate::cursor;
use crate::error::{Error, Result, Rule};

/// The header's magic, at bytes 4..8.
pub const MAGIC: &[u8; 4] = b"XH00";
/// The header's length as ExecuTorch writes it (and the fewest bytes it is read from).
pub const LENGTH: u16 = 30;
/// The smallest flatbuffer: a root offset and an identifier.
const MIN_FLATBUFFER: u32 = 8;

/// Where an XNNPACK payload's parts are, each range checked to lie within the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadHeader {
    /// The header's own length field.
    pub length: u16,
    /// Where the flatbuffer starts, from the payload's start.
    pub flatbuffer_offset: u32,
    /// Bytes of flatbuffer.
    pub flatbuffer_size: u32,
    /// Where the constant data starts, after the flatbuffer.
    pub constant_data_offset: u32,
    /// Bytes of constant data.
    pub constant_data_size: u64,
}

impl PayloadHeader {
    /// The header of `payload`, or `None` when bytes 4..8 are not `XH00` (the payload is a
    /// bare flatbuffer). Checked as ExecuTorch's runtime checks it, and its length field too.
    #[cfg(any(test, feature = "internals"))]
    pub fn parse(payload: &[u8]) -> Result<Option<PayloadHeader>> {
        PayloadHeader::parse_head(payload, payload.len() as u64)
    }

    /// The same from `payload`, the first bytes (at least 30, or all) of a payload of `len`
    /// bytes: the ranges are checked against `len`.
    pub fn parse_head(payload: &[u8], len: u64) -> Result<Option<PayloadHeader>> {
        if payload.get(4..8) != Some(MAGIC.as_slice()) {
            return Ok(None);
        }
        if len < u64::from(LENGTH) || payload.len() < usize::from(LENGTH) {
            return Err(Error::invalid(Rule::Truncated, format!("XNNPACK header cut short: {len} of {LENGTH} bytes")));
        }
        let what = "XNNPACK header";
        let h = PayloadHeader {
            length: cursor::u16_le_at(payload, 8, what)?,
            flatbuffer_offset: cursor::u32_le_at(payload, 10, what)?,
            flatbuffer_size: cursor::u32_le_at(payload, 14, what)?,
            constant_data_offset: cursor::u32_le_at(payload, 18, what)?,
            constant_data_size: cursor::u64_le_at(payload, 22, what)?,
        };
        h.check(len)?;
        Ok(Some(h))
    }

    fn check(&self, len: u64) -> Result<()> {
        if self.length < LENGTH || u64::from(self.length) > len {
            return Err(Error::invalid(
                Rule::BadField,
                format!("XNNPACK header length {} (at least {LENGTH}, at most the payload's {len})", self.length),
            ));
        }
        if self.flatbuffer_size < MIN_FLATBUFFER {
            return Err(Error::invalid(
                Rule::BadField,
                format!("XNNPACK flatbuffer size {} is below {MIN_FLATBUFFER}", self.flatbuffer_size),
            ));
        }
        let fb_end = u64::from(self.flatbuffer_offset) + u64::from(self.flatbuffer_size);
        if fb_end > len {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!(
                    "XNNPACK flatbuffer at {} of {} bytes runs past the payload ({len} bytes)",
                    self.flatbuffer_offset, self.flatbuffer_size
                ),
            ));
        }
        let cd_end = u64::from(self.constant_data_offset).checked_add(self.constant_data_size);
        if cd_end.is_none_or(|e| e > len) {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!(
                    "XNNPACK constant data at {} of {} bytes runs past the payload ({len} bytes)",
                    self.constant_data_offset, self.constant_data_size
                ),
            ));
        }
        if u64::from(self.constant_data_offset) < fb_end {
            return Err(Error::invalid(
                Rule::Overlap,
                format!(
                    "XNNPACK constant data at {} starts inside the flatbuffer (which ends at {fb_end})",
                    self.constant_data_offset
                ),
            ));
        }
        Ok(())
    }
}
