//! The name indexes of dense storage: a B-tree v2 (see `btree2.rs`) whose records name
//! objects of a fractal heap; type 5 for a group's links, type 8 for an object's attributes.

use super::btree2;
use super::io::H5Io;
use crate::error::{Error, Result, Rule};
use crate::source::Bytes;

/// Every record of the B-tree v2 at `addr`, which must be of type `kind`.
pub(super) fn records(io: &H5Io, addr: u64, kind: u8) -> Result<Vec<Bytes>> {
    let tree = btree2::records(io, addr)?;
    if tree.kind != kind {
        return Err(Error::invalid(
            Rule::BadField,
            format!("B-tree v2 at {addr} has records of type {}, a name index of type {kind} was expected", tree.kind),
        ));
    }
    Ok(tree.records)
}
