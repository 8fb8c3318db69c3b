//! Fractal heaps (`FRHP`): where new-style groups keep their link messages and objects their
//! attributes once there are too many for the header. An object is named by a heap ID: a
//! managed object by its offset and length in the heap's doubling table of direct blocks
//! (`FHDB`) under indirect blocks (`FHIB`), a tiny object by the bytes of the ID itself, a huge
//! object (larger than the heap's managed objects, stored on its own) by its address and
//! length, in the ID itself when it has room for them, else in the heap's B-tree v2 of huge
//! objects under the key the ID holds. Filtered heaps are refused.

use std::sync::OnceLock;

use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::hdf5::io::{H5Io, uint};
use crate::formats::hdf5::{btree2, checksum};
use crate::source::Bytes;

/// The deepest chain of indirect blocks followed.
const MAX_DEPTH: usize = 32;

/// An opened fractal heap: what its header says about the doubling table.
#[derive(Debug)]
pub(in crate::formats::hdf5) struct FractalHeap {
    addr: u64,
    /// The length of the heap's IDs.
    id_len: usize,
    width: u64,
    start_block: u64,
    max_direct_block: u64,
    /// Bytes of an offset in a heap ID and in a block's header.
    off_size: u8,
    /// Bytes of a length in a heap ID.
    len_size: u8,
    root: u64,
    root_rows: u64,
    /// The B-tree v2 of huge objects (undefined when there are none).
    huge_tree: u64,
    /// Its records once read: (key, address, length), by key.
    huge: OnceLock<Vec<(u64, u64, u64)>>,
}

/// The B-tree v2 record types of a fractal heap's huge objects: keyed by ID, not filtered (1)
/// and filtered (2); addressed from the ID itself, not filtered (3) and filtered (4).
const HUGE_KEYED: u8 = 1;

fn bad(addr: u64, what: impl std::fmt::Display) -> Error {
    Error::invalid(Rule::BadField, format!("fractal heap at {addr}: {what}"))
}

/// log2 of `v` when it is a power of two.
fn log2_exact(v: u64, addr: u64, what: &str) -> Result<u32> {
    if v.is_power_of_two() {
        Ok(v.trailing_zeros())
    } else {
        Err(bad(addr, format!("{what} {v} is not a power of two")))
    }
}

impl FractalHeap {
    /// The heap whose header is at `addr`.
    pub(in crate::formats::hdf5) fn open(io: &H5Io, addr: u64) -> Result<FractalHeap> {
        let (o, l) = (u64::from(io.offset_size()), u64::from(io.length_size()));
        let len = 4 + 1 + 2 + 2 + 1 + 4 + 12 * l + 3 * o + 2 + 2 + 2 + 2 + 4;
        let b = io.read_what(addr, len, "fractal heap header")?;
        let mut c = Cursor::new(&b);
        if c.take(4, "signature")? != b"FRHP" {
            return Err(Error::invalid(Rule::BadMagic, format!("fractal heap at {addr} does not start with FRHP")));
        }
        let version = c.u8("fractal heap version")?;
        if version != 0 {
            return Err(bad(addr, format!("version {version}")));
        }
        let id_len = usize::from(c.u16_le("heap ID length")?);
        let filters = c.u16_le("I/O filters' encoded length")?;
        if filters != 0 {
            return Err(Error::unsupported(format!("fractal heap at {addr} has filtered blocks")));
        }
        c.skip(1, "flags")?;
        let max_managed = u64::from(c.u32_le("maximum size of managed objects")?);
        // Next huge ID, the huge objects' B-tree, free space, the free-space manager, managed
        // space, allocated space, the allocation iterator, managed count, huge size and count,
        // tiny size and count: none needed to find an object.
        io.length(&mut c)?;
        let huge_tree = io.offset(&mut c)?;
        io.length(&mut c)?;
        io.offset(&mut c)?;
        for _ in 0..8 {
            io.length(&mut c)?;
        }
        let width = u64::from(c.u16_le("table width")?);
        let start_block = io.length(&mut c)?;
        let max_direct_block = io.length(&mut c)?;
        let max_heap_bits = c.u16_le("maximum heap size")?;
        c.skip(2, "starting rows")?;
        let root = io.offset(&mut c)?;
        let root_rows = u64::from(c.u16_le("current rows")?);
        checksum::verify(&b, &format!("fractal heap header at {addr}"))?;
        if max_heap_bits == 0 || max_heap_bits > 64 {
            return Err(bad(addr, format!("maximum heap size of {max_heap_bits} bits")));
        }
        log2_exact(width, addr, "table width")?;
        let start_log = log2_exact(start_block, addr, "starting block size")?;
        let max_log = log2_exact(max_direct_block, addr, "maximum direct block size")?;
        if max_log < start_log {
            return Err(bad(addr, "maximum direct block size below the starting block size"));
        }
        let off_size = max_heap_bits.div_ceil(8) as u8;
        // The length of a managed object: as many bytes as the offsets in a direct block of the
        // largest size, or fewer when the largest managed object needs fewer.
        let direct_len_size = max_log.div_ceil(8) as u8;
        let managed_len_size = (63 - max_managed.max(1).leading_zeros()) / 8 + 1;
        let len_size = direct_len_size.min(managed_len_size as u8);
        Ok(FractalHeap {
            addr,
            id_len,
            width,
            start_block,
            max_direct_block,
            off_size,
            len_size,
            root,
            root_rows,
            huge_tree,
            huge: OnceLock::new(),
        })
    }

    /// The length of this heap's IDs.
    pub(in crate::formats::hdf5) fn id_len(&self) -> usize {
        self.id_len
    }

    /// The object a heap ID names.
    pub(in crate::formats::hdf5) fn object(&self, io: &H5Io, id: &[u8]) -> Result<Bytes> {
        let first = *id.first().ok_or_else(|| bad(self.addr, "empty heap ID"))?;
        if first >> 6 != 0 {
            return Err(bad(self.addr, format!("heap ID version {}", first >> 6)));
        }
        match (first >> 4) & 3 {
            0 => {
                let mut c = Cursor::new(&id[1..]);
                let offset = uint(&mut c, self.off_size, "heap object offset")?;
                let len = uint(&mut c, self.len_size, "heap object length")?;
                self.managed(io, offset, len)
            }
            1 => self.huge_object(io, &id[1..]),
            2 => {
                let (len, from) = if self.id_len <= 18 {
                    (usize::from(first & 0x0f) + 1, 1)
                } else {
                    let second = *id.get(1).ok_or_else(|| bad(self.addr, "tiny heap ID cut short"))?;
                    ((usize::from(first & 0x0f) << 8 | usize::from(second)) + 1, 2)
                };
                let data = id.get(from..from + len).ok_or_else(|| {
                    Error::invalid(
                        Rule::OutOfBounds,
                        format!("tiny object of {len} bytes in a heap ID of {}", id.len()),
                    )
                })?;
                Ok(Bytes::from_vec(data.to_vec()))
            }
            t => Err(bad(self.addr, format!("heap ID type {t}"))),
        }
    }

    /// The huge object whose ID (after its first byte) is `key`: its address and length, when
    /// the ID has room for them, else a key into the heap's B-tree v2 of huge objects.
    fn huge_object(&self, io: &H5Io, key: &[u8]) -> Result<Bytes> {
        let (o, l) = (io.offset_size(), io.length_size());
        let stored = self.id_len.saturating_sub(1);
        let mut c = Cursor::new(key);
        let (addr, len) = if stored >= usize::from(o) + usize::from(l) {
            (uint(&mut c, o, "huge object address")?, uint(&mut c, l, "huge object length")?)
        } else {
            let wanted = uint(&mut c, stored.min(8) as u8, "huge object ID")?;
            let records = self.huge_records(io)?;
            let at = records.binary_search_by_key(&wanted, |r| r.0).map_err(|_| {
                Error::invalid(
                    Rule::OutOfBounds,
                    format!("huge object {wanted} is not in the B-tree of the fractal heap at {}", self.addr),
                )
            })?;
            (records[at].1, records[at].2)
        };
        io.read_what(addr, len, "huge object of a fractal heap")
    }

    /// The records of the huge objects' B-tree (type 1), read once: (key, address, length),
    /// by key.
    fn huge_records(&self, io: &H5Io) -> Result<&[(u64, u64, u64)]> {
        if let Some(records) = self.huge.get() {
            return Ok(records);
        }
        if io.is_undefined(self.huge_tree) {
            return Err(bad(self.addr, "a huge object ID but no B-tree of huge objects"));
        }
        let tree = btree2::records(io, self.huge_tree)?;
        if tree.kind != HUGE_KEYED {
            return Err(bad(self.addr, format!("B-tree of huge objects of type {} (1 expected)", tree.kind)));
        }
        let (o, l) = (io.offset_size(), io.length_size());
        let mut records = Vec::with_capacity(tree.records.len());
        for r in &tree.records {
            let mut c = Cursor::new(r);
            let addr = uint(&mut c, o, "huge object address")?;
            let len = uint(&mut c, l, "huge object length")?;
            let key = uint(&mut c, l, "huge object ID")?;
            records.push((key, addr, len));
        }
        records.sort_unstable_by_key(|r| r.0);
        Ok(self.huge.get_or_init(|| records))
    }

    /// The size of the blocks of row `row` of the doubling table: the starting size for rows
    /// 0 and 1, doubling with each row after.
    fn row_block(&self, row: u64) -> Result<u64> {
        let shift = row.saturating_sub(1);
        if shift >= u64::from(self.start_block.leading_zeros()) {
            return Err(bad(self.addr, format!("row {row} of the doubling table is past 64-bit offsets")));
        }
        Ok(self.start_block << shift)
    }

    /// Where row `row` of a table starts, relative to the table's start.
    fn row_start(&self, row: u64) -> Result<u64> {
        if row == 0 { Ok(0) } else { checked::mul(self.width, self.row_block(row)?, "heap row offset") }
    }

    /// The rows of the doubling table that hold direct blocks.
    fn direct_rows(&self) -> u64 {
        u64::from(self.max_direct_block.trailing_zeros() - self.start_block.trailing_zeros()) + 2
    }

    /// The managed object at `offset` of `len` bytes.
    fn managed(&self, io: &H5Io, offset: u64, len: u64) -> Result<Bytes> {
        let out_of_range = || {
            Error::invalid(
                Rule::OutOfBounds,
                format!("heap object at offset {offset} ({len} bytes) is outside the fractal heap at {}", self.addr),
            )
        };
        if io.is_undefined(self.root) {
            return Err(out_of_range());
        }
        let (mut block, mut base, mut rows) = (self.root, 0u64, self.root_rows);
        if rows == 0 {
            // The root is a direct block of the starting size.
            let end = checked::add(offset, len, "heap object")?;
            if end > self.start_block {
                return Err(out_of_range());
            }
            return self.direct(io, block, offset, len);
        }
        for _ in 0..MAX_DEPTH {
            let rel = offset.checked_sub(base).ok_or_else(out_of_range)?;
            let row = (0..rows).rev().find(|&r| self.row_start(r).is_ok_and(|s| s <= rel)).ok_or_else(out_of_range)?;
            let size = self.row_block(row)?;
            let col = (rel - self.row_start(row)?) / size;
            if col >= self.width {
                return Err(out_of_range());
            }
            let within = rel - self.row_start(row)? - col * size;
            let index = row * self.width + col;
            let child = self.child(io, block, rows, index)?;
            if io.is_undefined(child) {
                return Err(out_of_range());
            }
            if row < self.direct_rows() {
                if checked::add(within, len, "heap object")? > size {
                    return Err(out_of_range());
                }
                return self.direct(io, child, within, len);
            }
            base = checked::add(base, rel - within, "heap block offset")?;
            block = child;
            // An indirect block of a row holds as many rows as fill its size.
            let first = self.start_block.trailing_zeros() + self.width.trailing_zeros();
            rows = u64::from(size.trailing_zeros().checked_sub(first).ok_or_else(out_of_range)?) + 1;
        }
        Err(Error::invalid(
            Rule::TooDeep,
            format!("fractal heap at {}: indirect blocks nested past {MAX_DEPTH}", self.addr),
        ))
    }

    /// Entry `index` of the indirect block at `addr` of `rows` rows (checked by its signature
    /// and checksum).
    fn child(&self, io: &H5Io, addr: u64, rows: u64, index: u64) -> Result<u64> {
        let o = u64::from(io.offset_size());
        let entries = checked::mul(rows, self.width, "indirect block entries")?;
        if entries > 1 << 20 {
            return Err(bad(self.addr, format!("indirect block of {rows} rows")));
        }
        let header = 4 + 1 + o + u64::from(self.off_size);
        let len = checked::add(header, checked::mul(entries, o, "indirect block")? + 4, "indirect block")?;
        let b = io.read_what(addr, len, "fractal heap indirect block")?;
        if !b.starts_with(b"FHIB") {
            return Err(Error::invalid(
                Rule::BadMagic,
                format!("fractal heap indirect block at {addr} does not start with FHIB"),
            ));
        }
        checksum::verify(&b, &format!("fractal heap indirect block at {addr}"))?;
        let mut c = Cursor::new(&b[(header + index * o) as usize..]);
        io.offset(&mut c)
    }

    /// `len` bytes at `within` of the direct block at `addr`.
    fn direct(&self, io: &H5Io, addr: u64, within: u64, len: u64) -> Result<Bytes> {
        let sig = io.read(addr, 4)?;
        if &*sig != b"FHDB" {
            return Err(Error::invalid(
                Rule::BadMagic,
                format!("fractal heap direct block at {addr} does not start with FHDB"),
            ));
        }
        let header = 5 + u64::from(io.offset_size()) + u64::from(self.off_size);
        if within < header {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!("heap object at {within} overlaps its direct block's header"),
            ));
        }
        io.read_what(checked::add(addr, within, "heap object")?, len, "heap object")
    }
}
