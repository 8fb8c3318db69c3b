//! The dataspace message (type 0x01, versions 1 and 2): a dataset's shape and maximum shape.

use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::hdf5::io;

/// The most dimensions HDF5 allows.
pub(in crate::formats::hdf5) const MAX_RANK: usize = 32;

/// The maximum size of a dimension that may grow without bound.
pub(in crate::formats::hdf5) const UNLIMITED: u64 = u64::MAX;

/// A dataset's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::formats::hdf5) struct Dataspace {
    /// The current dimensions (empty for a scalar).
    pub dims: Vec<u64>,
    /// The maximum dimensions ([`UNLIMITED`] for an unlimited one); the current ones when the
    /// message gives none.
    pub max_dims: Vec<u64>,
}

/// Decodes a dataspace message with lengths of `length_size` bytes. A null dataspace (no
/// elements and no shape: h5py's `Empty`) is refused.
pub(in crate::formats::hdf5) fn parse(body: &[u8], length_size: u8) -> Result<Dataspace> {
    let mut c = Cursor::new(body);
    let version = c.u8("dataspace version")?;
    let rank = usize::from(c.u8("dataspace rank")?);
    let flags = c.u8("dataspace flags")?;
    match version {
        1 => c.skip(5, "dataspace reserved bytes")?,
        2 => match c.u8("dataspace type")? {
            0 | 1 => {}
            2 => return Err(Error::unsupported("HDF5 null dataspace (h5py.Empty): no shape and no elements")),
            t => return Err(Error::invalid(Rule::BadField, format!("HDF5 dataspace type {t}"))),
        },
        v => return Err(Error::invalid(Rule::BadField, format!("HDF5 dataspace message version {v}"))),
    }
    if rank > MAX_RANK {
        return Err(Error::invalid(Rule::BadField, format!("HDF5 dataspace of rank {rank} (at most {MAX_RANK})")));
    }
    let mut dims = Vec::with_capacity(rank);
    for _ in 0..rank {
        dims.push(io::uint(&mut c, length_size, "dataspace dimension")?);
    }
    let max_dims = if flags & 1 != 0 {
        let mut max = Vec::with_capacity(rank);
        for &d in &dims {
            let m = io::uint(&mut c, length_size, "dataspace maximum dimension")?;
            let m = if m == io::undefined(length_size) { UNLIMITED } else { m };
            if m < d {
                return Err(Error::invalid(
                    Rule::BadField,
                    format!("HDF5 dataspace dimension {d} is larger than its maximum {m}"),
                ));
            }
            max.push(m);
        }
        max
    } else {
        dims.clone()
    };
    checked::numel(&dims)?;
    Ok(Dataspace { dims, max_dims })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_one_and_two() {
        // Version 1, rank 2, max dims present, reserved; dims 3, 4; max 3, unlimited.
        let mut v1 = vec![1, 2, 1, 0, 0, 0, 0, 0];
        for d in [3u64, 4, 3, u64::MAX] {
            v1.extend_from_slice(&d.to_le_bytes());
        }
        let s = parse(&v1, 8).unwrap();
        assert_eq!(s.dims, [3, 4]);
        assert_eq!(s.max_dims, [3, UNLIMITED]);
        // Version 2 scalar.
        let s = parse(&[2, 0, 0, 0], 8).unwrap();
        assert!(s.dims.is_empty());
        // Version 2 null.
        assert!(parse(&[2, 0, 0, 2], 8).is_err());
    }

    #[test]
    fn hostile_dataspaces() {
        assert_eq!(parse(&[2, 33, 0, 1], 8).unwrap_err().rule(), Some(Rule::BadField));
        assert_eq!(parse(&[3, 1, 0, 1], 8).unwrap_err().rule(), Some(Rule::BadField));
        assert_eq!(parse(&[2, 1, 0, 1, 5], 8).unwrap_err().rule(), Some(Rule::Truncated));
        let mut big = vec![2, 2, 0, 1];
        big.extend_from_slice(&(1u64 << 40).to_le_bytes());
        big.extend_from_slice(&(1u64 << 40).to_le_bytes());
        assert_eq!(parse(&big, 8).unwrap_err().rule(), Some(Rule::ShapeOverflow));
        let mut shrink = vec![2, 1, 1, 1];
        shrink.extend_from_slice(&5u64.to_le_bytes());
        shrink.extend_from_slice(&4u64.to_le_bytes());
        assert_eq!(parse(&shrink, 8).unwrap_err().rule(), Some(Rule::BadField));
    }
}
