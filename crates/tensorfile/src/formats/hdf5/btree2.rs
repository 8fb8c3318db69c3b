//! Version 2 B-trees: a header (`BTHD`) naming the root, internal nodes (`BTIN`) and leaves
//! (`BTLF`), each checked by its lookup3 checksum. This walk yields every record's raw bytes in
//! key order; what a record means depends on the tree's type (5: link names, 8: attribute
//! names, 10 and 11: chunks...), which its user decodes.
//!
//! Sizes that are not stored are derived from the header as HDF5 derives them: a leaf holds
//! `(node size - 10) / record size` records; a child pointer in an internal node at depth `d`
//! is an address, the child's record count (as many bytes as a leaf's maximum count needs) and,
//! for `d > 1`, the total records under the child (as many bytes as the maximum total at depth
//! `d - 1` needs).

use std::collections::HashSet;

use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::source::Bytes;

use super::checksum;
use super::io::{self, H5Io};

/// The deepest tree this library walks.
pub(super) const MAX_DEPTH: u16 = 32;

/// The records of a version 2 B-tree.
pub(super) struct Records {
    /// The tree's type (which records it holds).
    pub kind: u8,
    /// Bytes per record.
    pub record_size: usize,
    /// Every record, in key order.
    pub records: Vec<Bytes>,
}

/// The per-depth sizes of a tree: records a node holds at most, and bytes of the counts in
/// child pointers.
struct Shape {
    /// At depth `d`: the most records a node holds.
    max_records: Vec<u64>,
    /// At depth `d`: the most records under a node (itself and below).
    max_total: Vec<u64>,
    /// Bytes of a child's record count.
    count_width: u8,
}

/// Bytes needed to store numbers up to `n`.
fn width_of(n: u64) -> u8 {
    (n.checked_ilog2().unwrap_or(0) / 8 + 1) as u8
}

impl Shape {
    fn new(node_size: u64, record_size: u64, depth: u16, offset_size: u8) -> Result<Shape> {
        let leaf = node_size.saturating_sub(10) / record_size;
        if leaf == 0 {
            return Err(Error::invalid(
                Rule::BadField,
                format!("HDF5 B-tree v2 nodes of {node_size} bytes hold no record of {record_size}"),
            ));
        }
        let count_width = width_of(leaf);
        let mut shape = Shape { max_records: vec![leaf], max_total: vec![leaf], count_width };
        for d in 1..=u64::from(depth) {
            let pointer = shape.pointer_size(d, offset_size);
            let n = node_size.saturating_sub(10 + pointer) / (record_size + pointer);
            if n == 0 {
                return Err(Error::invalid(
                    Rule::BadField,
                    format!("HDF5 B-tree v2 internal nodes of {node_size} bytes hold no record"),
                ));
            }
            let below = shape.max_total[(d - 1) as usize];
            let total = n.saturating_add(1).saturating_mul(below).saturating_add(n);
            shape.max_records.push(n);
            shape.max_total.push(total);
        }
        Ok(shape)
    }

    /// Bytes of a child pointer in an internal node at depth `d`.
    fn pointer_size(&self, d: u64, offset_size: u8) -> u64 {
        let total = if d > 1 { u64::from(width_of(self.max_total[(d - 1) as usize])) } else { 0 };
        u64::from(offset_size) + u64::from(self.count_width) + total
    }
}

/// Every record of the tree whose header is at `addr`.
pub(super) fn records(io: &H5Io, addr: u64) -> Result<Records> {
    let o = io.offset_size();
    let head = io.read_what(addr, 16 + u64::from(o) + 2 + u64::from(io.length_size()) + 4, "B-tree v2 header")?;
    checksum::verify(&head, "HDF5 B-tree v2 header")?;
    let mut c = Cursor::new(&head);
    if c.take(4, "signature")? != b"BTHD" {
        return Err(Error::invalid(Rule::BadMagic, format!("HDF5 B-tree v2 header at {addr}: no BTHD signature")));
    }
    let version = c.u8("B-tree v2 version")?;
    if version != 0 {
        return Err(Error::invalid(Rule::BadField, format!("HDF5 B-tree v2 version {version}")));
    }
    let kind = c.u8("B-tree v2 type")?;
    let node_size = u64::from(c.u32_le("B-tree v2 node size")?);
    let record_size = u64::from(c.u16_le("B-tree v2 record size")?);
    let depth = c.u16_le("B-tree v2 depth")?;
    c.skip(2, "split and merge percentages")?;
    let root = io.offset(&mut c)?;
    let root_records = u64::from(c.u16_le("B-tree v2 root record count")?);
    let total = io.length(&mut c)?;
    if depth > MAX_DEPTH || record_size == 0 {
        return Err(Error::invalid(
            Rule::BadField,
            format!("HDF5 B-tree v2 of depth {depth}, records of {record_size} bytes"),
        ));
    }
    // Each record is stored once in the file.
    if checked::mul(total, record_size, "B-tree v2 size")? > io.file_len() {
        return Err(Error::invalid(
            Rule::OutOfBounds,
            format!("HDF5 B-tree v2 of {total} records is larger than the file"),
        ));
    }
    let mut walk = Walk {
        io,
        kind,
        record_size,
        shape: Shape::new(node_size, record_size, depth, o)?,
        out: Vec::new(),
        seen: HashSet::new(),
    };
    if !io.is_undefined(root) && total > 0 {
        walk.node(root, depth, root_records, Some(total))?;
    }
    if walk.out.len() as u64 != total {
        return Err(Error::invalid(
            Rule::SizeMismatch,
            format!("HDF5 B-tree v2 header counts {total} records, its nodes hold {}", walk.out.len()),
        ));
    }
    Ok(Records { kind, record_size: record_size as usize, records: walk.out })
}

struct Walk<'a> {
    io: &'a H5Io,
    kind: u8,
    record_size: u64,
    shape: Shape,
    out: Vec<Bytes>,
    seen: HashSet<u64>,
}

impl Walk<'_> {
    /// The node at `addr`, at `depth`, holding `count` records and `total` under it (when
    /// the parent says).
    fn node(&mut self, addr: u64, depth: u16, count: u64, total: Option<u64>) -> Result<()> {
        if !self.seen.insert(addr) {
            return Err(Error::invalid(Rule::Overlap, format!("HDF5 B-tree v2 node at {addr} is reached twice")));
        }
        let d = usize::from(depth);
        if count > self.shape.max_records[d] {
            return Err(Error::invalid(
                Rule::BadField,
                format!("HDF5 B-tree v2 node at {addr} of {count} records (at most {})", self.shape.max_records[d]),
            ));
        }
        let o = self.io.offset_size();
        let pointer = if depth > 0 { self.shape.pointer_size(u64::from(depth), o) } else { 0 };
        let len = 6 + count * self.record_size + if depth > 0 { (count + 1) * pointer } else { 0 } + 4;
        let node = self.io.read_what(addr, len, "B-tree v2 node")?;
        checksum::verify(&node, "HDF5 B-tree v2 node")?;
        let signature: &[u8] = if depth > 0 { b"BTIN" } else { b"BTLF" };
        if &node[..4] != signature || node[4] != 0 || node[5] != self.kind {
            return Err(Error::invalid(
                Rule::BadMagic,
                format!(
                    "HDF5 B-tree v2 node at {addr}: not a {} of type {}",
                    String::from_utf8_lossy(signature),
                    self.kind
                ),
            ));
        }
        let records: Vec<Bytes> =
            (0..count).map(|i| node.slice(6 + i * self.record_size, self.record_size)).collect::<Result<_>>()?;
        if depth == 0 {
            self.out.extend(records);
            return Ok(());
        }
        let mut c = Cursor::new(&node[(6 + count * self.record_size) as usize..]);
        let before = self.out.len() as u64;
        for i in 0..=count {
            let child = self.io.offset(&mut c)?;
            let n = io::uint(&mut c, self.shape.count_width, "child record count")?;
            let under = if depth > 1 {
                let width = width_of(self.shape.max_total[d - 1]);
                Some(io::uint(&mut c, width, "child total record count")?)
            } else {
                None
            };
            self.node(child, depth - 1, n, under)?;
            if let Some(record) = records.get(i as usize) {
                self.out.push(record.clone());
            }
        }
        let held = self.out.len() as u64 - before;
        if total.is_some_and(|t| t != held) {
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!("HDF5 B-tree v2 node at {addr}: {held} records under it, its parent counts {total:?}"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_of_a_chunk_tree() {
        // h5py's chunk trees: nodes of 2048 bytes; records of a 2-D unfiltered chunk index are
        // an 8-byte address and two 8-byte offsets.
        let s = Shape::new(2048, 24, 2, 8).unwrap();
        assert_eq!(s.max_records[0], (2048 - 10) / 24);
        assert_eq!(s.count_width, 1);
        assert_eq!(s.pointer_size(1, 8), 9);
        assert_eq!(s.max_records[1], (2048 - 19) / 33);
        assert_eq!(width_of(255), 1);
        assert_eq!(width_of(256), 2);
        assert!(Shape::new(12, 24, 0, 8).is_err());
    }
}
