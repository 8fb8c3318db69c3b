//! The fixed array chunk index (layout version 4, index type 3): a header (`FAHD`) and one data
//! block (`FADB`) of chunk entries, numbered row-major over the maximum shape; a data block of
//! more entries than a page holds is split in pages, each with its checksum, after a bitmap of
//! the pages written.

use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::hdf5::checksum;
use crate::formats::hdf5::io::{self, H5Io};

/// One entry of a fixed or extensible array: a chunk's address, and for filtered chunks its
/// stored size and filter mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::formats::hdf5) struct Entry {
    /// The chunk's address (undefined: not written).
    pub addr: u64,
    /// Stored size and filter mask of a filtered chunk.
    pub filtered: Option<(u64, u32)>,
}

/// How entries are stored: their size and whether they are of filtered chunks.
#[derive(Debug, Clone, Copy)]
pub(in crate::formats::hdf5) struct EntryFormat {
    /// Bytes per entry.
    pub size: u64,
    /// Client 1: filtered chunks (address, size, mask); client 0: addresses only.
    pub filtered: bool,
}

impl EntryFormat {
    /// The format of a client id and entry size, checked against the offset width.
    pub(in crate::formats::hdf5) fn new(client: u8, size: u8, offset_size: u8, what: &str) -> Result<EntryFormat> {
        let (size, offset) = (u64::from(size), u64::from(offset_size));
        let ok = match client {
            0 => size == offset,
            1 => size > offset + 4 && size <= offset + 4 + 8,
            _ => false,
        };
        if !ok {
            return Err(Error::invalid(
                Rule::BadField,
                format!("HDF5 {what}: client {client} with entries of {size} bytes"),
            ));
        }
        Ok(EntryFormat { size, filtered: client == 1 })
    }

    /// Decodes one entry.
    pub(in crate::formats::hdf5) fn read(&self, c: &mut Cursor<'_>, offset_size: u8) -> Result<Entry> {
        let addr = io::uint(c, offset_size, "chunk address")?;
        let filtered = if self.filtered {
            let width = (self.size - u64::from(offset_size) - 4) as u8;
            let size = io::uint(c, width, "chunk size")?;
            Some((size, c.u32_le("chunk filter mask")?))
        } else {
            None
        };
        Ok(Entry { addr, filtered })
    }
}

/// The entries of the fixed array at `addr`, each with its number.
pub(in crate::formats::hdf5) fn entries(io: &H5Io, addr: u64) -> Result<Vec<(u64, Entry)>> {
    let o = io.offset_size();
    let head_len = 4 + 4 + u64::from(io.length_size()) + u64::from(o) + 4;
    let head = io.read_what(addr, head_len, "fixed array header")?;
    checksum::verify(&head, "HDF5 fixed array header")?;
    let mut c = Cursor::new(&head);
    if c.take(4, "signature")? != b"FAHD" {
        return Err(Error::invalid(Rule::BadMagic, format!("HDF5 fixed array header at {addr}: no FAHD signature")));
    }
    let version = c.u8("fixed array version")?;
    if version != 0 {
        return Err(Error::invalid(Rule::BadField, format!("HDF5 fixed array version {version}")));
    }
    let client = c.u8("fixed array client")?;
    let format = EntryFormat::new(client, c.u8("fixed array entry size")?, o, "fixed array")?;
    let page_bits = c.u8("fixed array page bits")?;
    let count = io.length(&mut c)?;
    let block = io.offset(&mut c)?;
    if io.is_undefined(block) {
        return Ok(Vec::new());
    }
    if page_bits >= 32 {
        return Err(Error::invalid(Rule::BadField, format!("HDF5 fixed array pages of 2^{page_bits} entries")));
    }
    // Every entry is stored in the file: the count is bounded by its length.
    let all_bytes = checked::mul(count, format.size, "fixed array size")?;
    if all_bytes > io.file_len() {
        return Err(Error::invalid(
            Rule::OutOfBounds,
            format!("HDF5 fixed array of {count} entries is larger than the file"),
        ));
    }
    let page = 1u64 << page_bits;
    let prefix = 4 + 2 + u64::from(o);
    let mut out = Vec::with_capacity(checked::to_usize(count, "fixed array entries")?);
    if count <= page {
        let block_bytes = io.read_what(block, prefix + all_bytes + 4, "fixed array data block")?;
        check_block(&block_bytes, addr, o, b"FADB", "fixed array data block")?;
        let mut c = Cursor::new(&block_bytes[checked::to_usize(prefix, "prefix")?..]);
        for n in 0..count {
            out.push((n, format.read(&mut c, o)?));
        }
        return Ok(out);
    }
    let pages = count.div_ceil(page);
    let bitmap_len = pages.div_ceil(8);
    let head = io.read_what(block, prefix + bitmap_len + 4, "fixed array data block")?;
    check_block(&head, addr, o, b"FADB", "fixed array data block")?;
    let bitmap = &head[checked::to_usize(prefix, "prefix")?..head.len() - 4];
    let mut at = block + head.len() as u64;
    for p in 0..pages {
        let n = page.min(count - p * page);
        let len = n * format.size + 4;
        if bitmap[(p / 8) as usize] & (0x80 >> (p % 8)) != 0 {
            let bytes = io.read_what(at, len, "fixed array data block page")?;
            checksum::verify(&bytes, "HDF5 fixed array data block page")?;
            let mut c = Cursor::new(&bytes);
            for k in 0..n {
                out.push((p * page + k, format.read(&mut c, o)?));
            }
        }
        at = checked::add(at, len, "fixed array page address")?;
    }
    Ok(out)
}

/// Checks a fixed or extensible array block: its checksum, signature, version and that it
/// names the array's header at `header` as its owner (offsets of `offset_size` bytes).
pub(in crate::formats::hdf5) fn check_block(
    block: &[u8],
    header: u64,
    offset_size: u8,
    signature: &[u8],
    what: &str,
) -> Result<()> {
    checksum::verify(block, &format!("HDF5 {what}"))?;
    let mut c = Cursor::new(block);
    if c.take(4, "signature")? != signature {
        return Err(Error::invalid(
            Rule::BadMagic,
            format!("HDF5 {what}: no {} signature", String::from_utf8_lossy(signature)),
        ));
    }
    let version = c.u8("version")?;
    if version != 0 {
        return Err(Error::invalid(Rule::BadField, format!("HDF5 {what}: version {version}")));
    }
    c.skip(1, "client id")?;
    let owner = io::uint(&mut c, offset_size, "header address")?;
    if owner != header {
        return Err(Error::invalid(
            Rule::BadField,
            format!("HDF5 {what} belongs to the header at {owner}, not the one at {header}"),
        ));
    }
    Ok(())
}
