//! Old-style groups: a symbol table message names a B-tree v1 (type 0, keyed by name) whose
//! leaves are symbol table nodes (`SNOD`), whose entries name objects by an offset into the
//! group's local heap (`HEAP`).

use std::collections::HashSet;

use super::{Link, MAX_LINKS, Target};
use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::hdf5::io::H5Io;
use crate::formats::hdf5::object_header::Message;
use crate::limits::MAX_NESTING;
use crate::source::Bytes;

/// The most B-tree nodes one group's tree may have.
const MAX_NODES: usize = 1 << 16;
/// The longest link name read from a local heap.
const MAX_NAME: usize = 1 << 16;

/// The B-tree and local heap addresses of a symbol table message.
pub(super) fn message(io: &H5Io, m: &Message) -> Result<(u64, u64)> {
    let mut c = Cursor::new(&m.body);
    Ok((io.offset(&mut c)?, io.offset(&mut c)?))
}

/// A local heap's data segment.
pub(super) struct LocalHeap {
    data: Bytes,
}

impl LocalHeap {
    /// The local heap at `addr`: `HEAP`, version 0, the data segment's size and address.
    pub(super) fn read(io: &H5Io, addr: u64) -> Result<LocalHeap> {
        let header_len = 8 + 2 * u64::from(io.length_size()) + u64::from(io.offset_size());
        let b = io.read_what(addr, header_len, "local heap")?;
        let mut c = Cursor::new(&b);
        if c.take(4, "signature")? != b"HEAP" {
            return Err(Error::invalid(Rule::BadMagic, format!("local heap at {addr} does not start with HEAP")));
        }
        let version = c.u8("local heap version")?;
        if version != 0 {
            return Err(Error::invalid(Rule::BadField, format!("local heap at {addr}: version {version}")));
        }
        c.skip(3, "reserved")?;
        let size = io.length(&mut c)?;
        let _free = io.length(&mut c)?;
        let data_addr = io.offset(&mut c)?;
        Ok(LocalHeap { data: io.read_what(data_addr, size, "local heap data segment")? })
    }

    /// The NUL-terminated string at `offset` of the data segment.
    pub(super) fn name(&self, offset: u64) -> Result<String> {
        let start = usize::try_from(offset).ok().filter(|&o| o < self.data.len()).ok_or_else(|| {
            Error::invalid(
                Rule::OutOfBounds,
                format!("name offset {offset} is past the local heap's {} bytes", self.data.len()),
            )
        })?;
        let rest = &self.data[start..];
        let rest = &rest[..rest.len().min(MAX_NAME)];
        let end = rest.iter().position(|&b| b == 0).ok_or_else(|| {
            Error::invalid(Rule::Truncated, format!("name at local heap offset {offset} has no terminating NUL"))
        })?;
        String::from_utf8(rest[..end].to_vec())
            .map_err(|_| Error::invalid(Rule::BadUtf8, format!("name at local heap offset {offset} is not UTF-8")))
    }
}

/// The links of an old-style group: every entry of every symbol table node its B-tree
/// reaches.
pub(super) fn links(io: &H5Io, btree: u64, heap: u64) -> Result<Vec<Link>> {
    let heap = LocalHeap::read(io, heap)?;
    let mut out = Vec::new();
    for node in leaves(io, btree)? {
        symbol_node(io, &heap, node, &mut out)?;
    }
    Ok(out)
}

/// The symbol table nodes a group B-tree points to, in key order, each node visited once and
/// each child one level below its parent.
fn leaves(io: &H5Io, root: u64) -> Result<Vec<u64>> {
    let (o, l) = (u64::from(io.offset_size()), u64::from(io.length_size()));
    let mut seen = HashSet::new();
    let mut stack = vec![(root, None::<u8>)];
    let mut out = Vec::new();
    while let Some((addr, want_level)) = stack.pop() {
        if !seen.insert(addr) || seen.len() > MAX_NODES {
            return Err(Error::invalid(
                Rule::Overlap,
                format!("group B-tree node at {addr} is reached twice (or the tree has over {MAX_NODES} nodes)"),
            ));
        }
        let head = io.read_what(addr, 8 + 2 * o, "group B-tree node")?;
        let mut c = Cursor::new(&head);
        if c.take(4, "signature")? != b"TREE" {
            return Err(Error::invalid(
                Rule::BadMagic,
                format!("group B-tree node at {addr} does not start with TREE"),
            ));
        }
        let node_type = c.u8("node type")?;
        let level = c.u8("node level")?;
        let used = u64::from(c.u16_le("entries used")?);
        if node_type != 0 {
            return Err(Error::invalid(
                Rule::BadField,
                format!("group B-tree node at {addr} has type {node_type}, not 0"),
            ));
        }
        if want_level.is_some_and(|w| w != level) || usize::from(level) > MAX_NESTING {
            return Err(Error::invalid(
                Rule::BadField,
                format!("group B-tree node at {addr} has level {level}, its parent wants {want_level:?}"),
            ));
        }
        // Keys and children alternate: key, child, key, ..., child, key.
        let body_len = checked::add(checked::mul(used, l + o, "B-tree node")?, l, "B-tree node")?;
        let body = io.read_what(checked::add(addr, 8 + 2 * o, "B-tree node")?, body_len, "group B-tree node")?;
        let mut c = Cursor::new(&body);
        let mut children = Vec::new();
        for _ in 0..used {
            io.length(&mut c)?;
            children.push(io.offset(&mut c)?);
        }
        if level == 0 {
            out.extend(children);
        } else {
            stack.extend(children.into_iter().rev().map(|a| (a, Some(level - 1))));
        }
    }
    Ok(out)
}

/// The entries of the symbol table node at `addr`.
fn symbol_node(io: &H5Io, heap: &LocalHeap, addr: u64, out: &mut Vec<Link>) -> Result<()> {
    let head = io.read_what(addr, 8, "symbol table node")?;
    let mut c = Cursor::new(&head);
    if c.take(4, "signature")? != b"SNOD" {
        return Err(Error::invalid(Rule::BadMagic, format!("symbol table node at {addr} does not start with SNOD")));
    }
    let version = c.u8("symbol table node version")?;
    if version != 1 {
        return Err(Error::invalid(Rule::BadField, format!("symbol table node at {addr}: version {version}")));
    }
    c.skip(1, "reserved")?;
    let count = u64::from(c.u16_le("number of symbols")?);
    let entry = 2 * u64::from(io.offset_size()) + 24;
    let body =
        io.read_what(checked::add(addr, 8, "symbol table node")?, checked::mul(count, entry, "symbols")?, "symbols")?;
    let mut c = Cursor::new(&body);
    for _ in 0..count {
        let name = heap.name(io.offset(&mut c)?)?;
        let header = io.offset(&mut c)?;
        let cache_type = c.u32_le("cache type")?;
        c.skip(4, "reserved")?;
        let scratch = c.take(16, "scratch pad")?;
        let target = if cache_type == 2 {
            let at = crate::cursor::u32_le_at(scratch, 0, "soft link value offset")?;
            Target::Soft(heap.name(u64::from(at))?)
        } else {
            Target::Hard(header)
        };
        out.push(Link { name, target });
        if out.len() > MAX_LINKS {
            return Err(super::links::too_many());
        }
    }
    Ok(())
}
