//! The superblock: where an HDF5 file starts (after its user block, if any), the widths of
//! its offsets and lengths, its base address and its root group.
//!
//! Versions 0 and 1 (the root group as a symbol table entry, which may carry the group's
//! B-tree and local heap in its scratch pad) and versions 2 and 3 (the root group's object
//! header address, checksummed) are read; others are refused.

use super::checksum;
use super::io::{H5Io, uint};
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::source::Source;

/// The eight bytes an HDF5 superblock starts with.
pub(super) const SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// How far into a file (user block sizes 512, 1024, 2048... bytes) the signature is looked
/// for.
pub(super) const MAX_USER_BLOCK: u64 = 1 << 30;

/// What the superblock says.
#[derive(Debug, Clone)]
pub(super) struct Superblock {
    /// The superblock version (0 to 3).
    pub version: u8,
    /// Where the superblock is: the size of the user block before it.
    pub at: u64,
    /// The width of offsets (2, 4 or 8).
    pub offset_size: u8,
    /// The width of lengths (2, 4 or 8).
    pub length_size: u8,
    /// The address other addresses are relative to.
    pub base: u64,
    /// The end-of-file address the superblock records (relative to the base).
    pub eof: u64,
    /// The root group's object header.
    pub root: u64,
    /// For versions 0 and 1: the root group's B-tree and local heap addresses, when its symbol
    /// table entry caches them.
    pub root_cache: Option<(u64, u64)>,
}

/// Where the signature is: at 0, or after a user block of 512, 1024, 2048... bytes.
pub(super) fn find(src: &Source) -> Result<u64> {
    let mut at = 0u64;
    while at.saturating_add(8) <= src.len() && at <= MAX_USER_BLOCK {
        if &*src.range(at, 8)? == SIGNATURE {
            return Ok(at);
        }
        at = if at == 0 { 512 } else { at * 2 };
    }
    Err(Error::invalid(Rule::BadMagic, "no HDF5 signature at offset 0 or after a user block of 512·2^k bytes"))
}

/// Read the superblock of `src` and the addressed view of the file it defines.
pub(super) fn read(src: Source) -> Result<(Superblock, H5Io)> {
    let at = find(&src)?;
    let head = src.range(at, (src.len() - at).min(8 + 16 + 4 * 8 + 24 + 4 * 8))?;
    let mut c = Cursor::with_base(&head, at);
    c.skip(8, "signature")?;
    let version = c.u8("superblock version")?;
    let sb = match version {
        0 | 1 => old(&mut c, version, at)?,
        2 | 3 => new(&mut c, &head, version, at)?,
        v => return Err(Error::invalid(Rule::BadField, format!("superblock version {v}: this library reads 0 to 3"))),
    };
    let io = H5Io::new(src, sb.offset_size, sb.length_size, sb.base)?;
    // The HDF5 library records the end of file counting the user block (the file's length).
    if sb.eof > io.file_len() && !io.is_undefined(sb.eof) {
        return Err(Error::invalid(
            Rule::Truncated,
            format!("the superblock says the file ends at {}, but it has {} bytes", sb.eof, io.file_len()),
        ));
    }
    Ok((sb, io))
}

fn sizes(c: &mut Cursor<'_>) -> Result<(u8, u8)> {
    let o = c.u8("size of offsets")?;
    let l = c.u8("size of lengths")?;
    for (what, s) in [("size of offsets", o), ("size of lengths", l)] {
        if !matches!(s, 2 | 4 | 8) {
            return Err(Error::invalid(Rule::BadField, format!("{what} {s}: this library reads 2, 4 or 8")));
        }
    }
    Ok((o, l))
}

/// Versions 0 and 1.
fn old(c: &mut Cursor<'_>, version: u8, at: u64) -> Result<Superblock> {
    // Versions of the free-space storage, the root symbol table entry, reserved, the shared
    // header message format.
    c.skip(4, "component versions")?;
    let (offset_size, length_size) = sizes(c)?;
    // Reserved, group leaf and internal node K, consistency flags.
    c.skip(1 + 2 + 2 + 4, "group node sizes and flags")?;
    if version == 1 {
        c.skip(4, "indexed storage node size")?;
    }
    let base = uint(c, offset_size, "base address")?;
    let _free_space = uint(c, offset_size, "free-space address")?;
    let eof = uint(c, offset_size, "end of file address")?;
    let _driver = uint(c, offset_size, "driver information address")?;
    // The root group's symbol table entry.
    let _name = uint(c, offset_size, "root link name offset")?;
    let root = uint(c, offset_size, "root object header address")?;
    let cache_type = c.u32_le("root cache type")?;
    c.skip(4, "reserved")?;
    let root_cache = if cache_type == 1 {
        Some((uint(c, offset_size, "root B-tree address")?, uint(c, offset_size, "root local heap address")?))
    } else {
        None
    };
    Ok(Superblock { version, at, offset_size, length_size, base, eof, root, root_cache })
}

/// Versions 2 and 3.
fn new(c: &mut Cursor<'_>, head: &[u8], version: u8, at: u64) -> Result<Superblock> {
    let (offset_size, length_size) = sizes(c)?;
    c.skip(1, "consistency flags")?;
    let base = uint(c, offset_size, "base address")?;
    let _extension = uint(c, offset_size, "superblock extension address")?;
    let eof = uint(c, offset_size, "end of file address")?;
    let root = uint(c, offset_size, "root object header address")?;
    let end = c.position() + 4;
    let block = head.get(..end).ok_or_else(|| Error::invalid(Rule::Truncated, "superblock cut short"))?;
    checksum::verify(block, "superblock")?;
    Ok(Superblock { version, at, offset_size, length_size, base, eof, root, root_cache: None })
}
