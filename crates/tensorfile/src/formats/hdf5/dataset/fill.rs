//! The fill value messages (old: type 0x04; new: type 0x05, versions 1 to 3): what elements
//! never written read as. Zeros when no fill value is defined, and when it is undefined (a
//! size of -1 in versions 1 and 2, the "undefined" flag in version 3): HDF5 then leaves the
//! reader's buffer as it is, and h5py's is zeroed.

use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};

/// The fill value of elements of `element_size` bytes, in the dataset's stored byte order:
/// from the new message when there is one, else from the old one, else `None` (zeros).
pub(in crate::formats::hdf5) fn parse(
    new: Option<&[u8]>,
    old: Option<&[u8]>,
    element_size: u64,
) -> Result<Option<Vec<u8>>> {
    let value = match (new, old) {
        (Some(body), _) => parse_new(body)?,
        (None, Some(body)) => {
            let mut c = Cursor::new(body);
            let size = c.u32_le("fill value size")?;
            Some(c.take(size as usize, "fill value")?)
        }
        (None, None) => None,
    };
    match value {
        None => Ok(None),
        Some([]) => Ok(None),
        Some(v) if v.len() as u64 == element_size => Ok(Some(v.to_vec())),
        Some(v) => Err(Error::invalid(
            Rule::SizeMismatch,
            format!("HDF5 fill value of {} bytes for elements of {element_size}", v.len()),
        )),
    }
}

fn parse_new(body: &[u8]) -> Result<Option<&[u8]>> {
    let mut c = Cursor::new(body);
    let version = c.u8("fill value version")?;
    match version {
        1 | 2 => {
            c.skip(2, "fill value allocation and write times")?;
            // Version 1 always has the size field; HDF5 reads it only when the value is
            // defined, as a signed number: -1 is an undefined value, 0 the default (zeros).
            if c.u8("fill value defined")? == 0 || c.is_at_end() {
                return Ok(None);
            }
            let size = c.u32_le("fill value size")? as i32;
            if size <= 0 {
                return Ok(None);
            }
            Ok(Some(c.take(size as usize, "fill value")?))
        }
        3 => {
            // Bit 4: undefined; bit 5: a value follows.
            let flags = c.u8("fill value flags")?;
            if flags & 0x20 == 0 || c.is_at_end() {
                return Ok(None);
            }
            if flags & 0x10 != 0 {
                return Err(Error::invalid(
                    Rule::BadField,
                    "HDF5 fill value message both undefined and defined (flags 0x10 and 0x20)",
                ));
            }
            let size = c.u32_le("fill value size")?;
            Ok(Some(c.take(size as usize, "fill value")?))
        }
        v => Err(Error::invalid(Rule::BadField, format!("HDF5 fill value message version {v}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_and_old_messages() {
        assert_eq!(parse(Some(&[3, 0x20, 2, 0, 0, 0, 7, 0]), None, 2).unwrap(), Some(vec![7, 0]));
        assert_eq!(parse(Some(&[3, 0x0a]), Some(&[1, 0, 0, 0, 5]), 1).unwrap(), None);
        assert_eq!(parse(Some(&[2, 2, 2, 0]), None, 4).unwrap(), None);
        assert_eq!(parse(Some(&[2, 2, 2, 1, 1, 0, 0, 0, 9]), None, 1).unwrap(), Some(vec![9]));
        assert_eq!(parse(None, Some(&[1, 0, 0, 0, 5]), 1).unwrap(), Some(vec![5]));
        assert_eq!(parse(None, None, 8).unwrap(), None);
    }

    #[test]
    fn undefined_fill_values_read_as_zeros() {
        // Version 1: the size is always there; not defined, or -1, is no value.
        assert_eq!(parse(Some(&[1, 3, 2, 0, 0xff, 0xff, 0xff, 0xff]), None, 4).unwrap(), None);
        assert_eq!(parse(Some(&[1, 3, 2, 1, 0xff, 0xff, 0xff, 0xff]), None, 4).unwrap(), None);
        assert_eq!(parse(Some(&[2, 3, 2, 1, 0xff, 0xff, 0xff, 0xff]), None, 4).unwrap(), None);
        assert_eq!(parse(Some(&[2, 3, 2, 1, 0, 0, 0, 0]), None, 4).unwrap(), None);
        assert_eq!(parse(Some(&[1, 3, 2, 1, 1, 0, 0, 0, 6]), None, 1).unwrap(), Some(vec![6]));
        // Version 3: the undefined flag alone.
        assert_eq!(parse(Some(&[3, 0x10 | 0x0a]), None, 4).unwrap(), None);
    }

    #[test]
    fn hostile_fill_values() {
        let rule = |new: &[u8], size| parse(Some(new), None, size).unwrap_err().rule();
        assert_eq!(rule(&[3, 0x20, 4, 0, 0, 0, 7, 0, 0, 0], 2), Some(Rule::SizeMismatch));
        assert_eq!(rule(&[3, 0x20, 0xff, 0xff, 0xff, 0xff], 2), Some(Rule::Truncated));
        assert_eq!(rule(&[9], 2), Some(Rule::BadField));
        assert_eq!(rule(&[3, 0x30, 2, 0, 0, 0, 7, 0], 2), Some(Rule::BadField));
        assert_eq!(rule(&[2, 3, 2, 1, 0xfe, 0xff, 0xff, 0x7f], 2), Some(Rule::Truncated));
    }
}
