//! The extensible array chunk index (layout version 4, index type 4), for datasets with one
//! unlimited dimension: a header (`EAHD`), an index block (`EAIB`) holding the first entries,
//! the addresses of the first data blocks and of super blocks (`EASB`), which hold the
//! addresses of further data blocks (`EADB`). Data block sizes double every two super blocks;
//! a data block of more entries than a page holds is split in pages with their own checksums,
//! whose super block says which were written.

use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::hdf5::checksum;
use crate::formats::hdf5::io::H5Io;

use super::farray::{Entry, EntryFormat, check_block};

/// The parameters of an extensible array, from its header.
struct Params {
    format: EntryFormat,
    /// Bytes of a block's offset field.
    offset_width: u64,
    index_entries: u64,
    min_block: u64,
    min_pointers: u64,
    page: u64,
    /// Entries ever set: those at this number or later were never written.
    max_set: u64,
    super_blocks: u64,
}

/// A super block's shape: its data blocks and their size, the number of its first entry.
#[derive(Debug, Clone, Copy)]
struct SuperInfo {
    blocks: u64,
    block_entries: u64,
    first: u64,
}

/// The entries of the extensible array at `addr`, each with its number.
pub(in crate::formats::hdf5) fn entries(io: &H5Io, addr: u64) -> Result<Vec<(u64, Entry)>> {
    let o = io.offset_size();
    let l = u64::from(io.length_size());
    let head = io.read_what(addr, 12 + 6 * l + u64::from(o) + 4, "extensible array header")?;
    checksum::verify(&head, "HDF5 extensible array header")?;
    let mut c = Cursor::new(&head);
    if c.take(4, "signature")? != b"EAHD" {
        return Err(Error::invalid(
            Rule::BadMagic,
            format!("HDF5 extensible array header at {addr}: no EAHD signature"),
        ));
    }
    let version = c.u8("extensible array version")?;
    if version != 0 {
        return Err(Error::invalid(Rule::BadField, format!("HDF5 extensible array version {version}")));
    }
    let client = c.u8("extensible array client")?;
    let format = EntryFormat::new(client, c.u8("extensible array entry size")?, o, "extensible array")?;
    let [max_bits, index_entries, min_block, min_pointers, page_bits] = c.array::<5>("extensible array parameters")?;
    let lengths: Vec<u64> = (0..6).map(|_| io.length(&mut c)).collect::<Result<_>>()?;
    let index = io.offset(&mut c)?;
    let bad = |what: String| Error::invalid(Rule::BadField, format!("HDF5 extensible array: {what}"));
    if !(1..=64).contains(&max_bits) || page_bits >= 32 {
        return Err(bad(format!("2^{max_bits} entries at most, pages of 2^{page_bits}")));
    }
    if !min_block.is_power_of_two()
        || !min_pointers.is_power_of_two()
        || min_pointers < 2
        || min_block.ilog2() >= u32::from(max_bits)
    {
        return Err(bad(format!("data blocks of at least {min_block} entries, super blocks of {min_pointers}")));
    }
    let p = Params {
        format,
        offset_width: u64::from(max_bits).div_ceil(8),
        index_entries: u64::from(index_entries),
        min_block: u64::from(min_block),
        min_pointers: u64::from(min_pointers),
        page: 1 << page_bits,
        max_set: lengths[4],
        super_blocks: 1 + u64::from(max_bits) - u64::from(min_block.ilog2()),
    };
    if io.is_undefined(index) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    read_index_block(io, addr, index, &p, &mut out)?;
    Ok(out)
}

impl Params {
    /// Super block `u`: 2^(u/2) data blocks of 2^((u+1)/2) times the smallest size.
    fn super_info(&self, u: u64) -> Result<SuperInfo> {
        let mut first = self.index_entries;
        for k in 0..=u {
            let blocks = 1u64.checked_shl((k / 2) as u32).unwrap_or(0);
            let scale = 1u64.checked_shl(k.div_ceil(2) as u32).unwrap_or(0);
            let block_entries = checked::mul(scale, self.min_block, "extensible array block size")?;
            if blocks == 0 || block_entries == 0 {
                return Err(Error::invalid(Rule::BadField, "HDF5 extensible array of too many super blocks"));
            }
            if k == u {
                return Ok(SuperInfo { blocks, block_entries, first });
            }
            first = checked::add(
                first,
                checked::mul(blocks, block_entries, "extensible array size")?,
                "extensible array size",
            )?;
        }
        unreachable!("the loop returns at k == u")
    }
}

fn read_index_block(io: &H5Io, header: u64, at: u64, p: &Params, out: &mut Vec<(u64, Entry)>) -> Result<()> {
    let o = io.offset_size();
    let in_index = 2 * u64::from(p.min_pointers.ilog2());
    let data_blocks = 2 * (p.min_pointers - 1);
    let super_blocks = p.super_blocks.saturating_sub(in_index);
    let len = 6 + u64::from(o) + p.index_entries * p.format.size + (data_blocks + super_blocks) * u64::from(o) + 4;
    let block = io.read_what(at, len, "extensible array index block")?;
    check_block(&block, header, o, b"EAIB", "extensible array index block")?;
    let mut c = Cursor::new(&block);
    c.skip(6 + usize::from(o), "index block prefix")?;
    for n in 0..p.index_entries {
        let e = p.format.read(&mut c, o)?;
        if n < p.max_set {
            out.push((n, e));
        }
    }
    let mut u = 0u64;
    let mut in_super = 0u64;
    for _ in 0..data_blocks {
        let addr = io.offset(&mut c)?;
        let info = p.super_info(u)?;
        let first = info.first + in_super * info.block_entries;
        if !io.is_undefined(addr) {
            if info.block_entries > p.page {
                return Err(Error::invalid(
                    Rule::BadField,
                    "HDF5 extensible array: a paged data block in the index block",
                ));
            }
            read_data_block(io, header, addr, first, info.block_entries, None, p, out)?;
        }
        in_super += 1;
        if in_super == info.blocks {
            (u, in_super) = (u + 1, 0);
        }
    }
    for s in 0..super_blocks {
        let addr = io.offset(&mut c)?;
        if !io.is_undefined(addr) {
            read_super_block(io, header, addr, p.super_info(in_index + s)?, p, out)?;
        }
    }
    Ok(())
}

fn read_super_block(
    io: &H5Io,
    header: u64,
    at: u64,
    info: SuperInfo,
    p: &Params,
    out: &mut Vec<(u64, Entry)>,
) -> Result<()> {
    if info.first >= p.max_set {
        return Ok(());
    }
    let o = u64::from(io.offset_size());
    let pages = if info.block_entries > p.page { info.block_entries / p.page } else { 0 };
    let bitmap = pages.div_ceil(8);
    let bitmaps = checked::mul(bitmap, info.blocks, "extensible array page bitmaps")?;
    let addrs = checked::mul(info.blocks, o, "extensible array super block")?;
    let len = checked::add(6 + o + p.offset_width + 4, checked::add(bitmaps, addrs, "super block")?, "super block")?;
    let block = io.read_what(at, len, "extensible array super block")?;
    check_block(&block, header, io.offset_size(), b"EASB", "extensible array super block")?;
    let mut c = Cursor::new(&block);
    c.skip(checked::to_usize(6 + o + p.offset_width, "super block prefix")?, "super block prefix")?;
    let masks = c.take(checked::to_usize(bitmaps, "page bitmaps")?, "page bitmaps")?;
    for k in 0..info.blocks {
        let addr = io.offset(&mut c)?;
        let first = info.first + k * info.block_entries;
        if io.is_undefined(addr) || first >= p.max_set {
            continue;
        }
        let mask = (pages > 0).then(|| &masks[(k * bitmap) as usize..((k + 1) * bitmap) as usize]);
        read_data_block(io, header, addr, first, info.block_entries, mask, p, out)?;
    }
    Ok(())
}

/// A data block of `count` entries numbered from `first`; `pages` is the bitmap of its written
/// pages when it is paged.
#[allow(clippy::too_many_arguments)]
fn read_data_block(
    io: &H5Io,
    header: u64,
    at: u64,
    first: u64,
    count: u64,
    pages: Option<&[u8]>,
    p: &Params,
    out: &mut Vec<(u64, Entry)>,
) -> Result<()> {
    let o = io.offset_size();
    let prefix = 6 + u64::from(o) + p.offset_width;
    let body = if pages.is_some() { 0 } else { checked::mul(count, p.format.size, "data block size")? };
    let block = io.read_what(at, checked::add(prefix + 4, body, "data block size")?, "extensible array data block")?;
    check_block(&block, header, o, b"EADB", "extensible array data block")?;
    // The block's own "block offset" field is not checked: for data blocks of the index
    // block HDF5 writes the super block's first entry plus the data block's index among all
    // data blocks times its size, which is not where the block's entries start.
    let mut take = |c: &mut Cursor<'_>, from: u64, n: u64| -> Result<()> {
        for k in 0..n {
            let e = p.format.read(c, o)?;
            if from + k < p.max_set {
                out.push((from + k, e));
            }
        }
        Ok(())
    };
    let Some(bitmap) = pages else {
        let mut c = Cursor::new(&block[prefix as usize..]);
        return take(&mut c, first, count);
    };
    let page_len = checked::add(checked::mul(p.page, p.format.size, "page size")?, 4, "page size")?;
    let mut addr = checked::add(at, prefix + 4, "page address")?;
    for page in 0..count / p.page {
        if bitmap[(page / 8) as usize] & (0x80 >> (page % 8)) != 0 {
            let bytes = io.read_what(addr, page_len, "extensible array data block page")?;
            checksum::verify(&bytes, "HDF5 extensible array data block page")?;
            take(&mut Cursor::new(&bytes), first + page * p.page, p.page)?;
        }
        addr = checked::add(addr, page_len, "page address")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::{Bytes, Source};

    fn sealed(mut b: Vec<u8>) -> Vec<u8> {
        let sum = checksum::lookup3(&b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    }

    fn block(signature: &[u8], header: u64, rest: &[u8]) -> Vec<u8> {
        [signature, &[0, 0], &header.to_le_bytes()[..], rest].concat()
    }

    /// An array with no entries in its index block, data blocks of at least one entry, super
    /// blocks of at least two, pages of two entries: super block 3 holds two data blocks of four
    /// entries (numbers 7..11 and 11..15), each in two pages.
    #[test]
    fn paged_data_blocks_read_only_their_written_pages() {
        const UNDEF: u64 = u64::MAX;
        let (header, index, sup, data) = (0u64, 100u64, 300u64, 400u64);
        let mut h = b"EAHD\x00\x00".to_vec();
        h.extend_from_slice(&[8, 8, 0, 1, 2, 1]);
        for v in [0u64, 0, 0, 0, 100, 100, index] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        let h = sealed(h);
        // Index block: no entries, data blocks of super blocks 0 and 1 (not written), then
        // the seven super block addresses (super blocks 2 to 8): only 3 written.
        let mut addrs = vec![UNDEF, UNDEF, UNDEF, sup];
        addrs.extend([UNDEF; 5]);
        let ib = sealed(block(b"EAIB", header, &addrs.iter().flat_map(|a| a.to_le_bytes()).collect::<Vec<_>>()));
        // Super block 3: block offset (one byte), page bitmaps (one byte per data block: the
        // first block's second page only), data block addresses.
        let mut sb = vec![7, 0b0100_0000, 0];
        sb.extend_from_slice(&data.to_le_bytes());
        sb.extend_from_slice(&UNDEF.to_le_bytes());
        let sb = sealed(block(b"EASB", header, &sb));
        // Data block: its prefix and checksum, then two pages of two entries and a checksum.
        let db = sealed(block(b"EADB", header, &[7]));
        let page = |a: u64, b: u64| sealed([a.to_le_bytes(), b.to_le_bytes()].concat());
        let pages = [page(0xdead, 0xbeef), page(1000, 2000)].concat();
        let mut file = vec![0u8; 600];
        for (at, bytes) in [(header, &h), (index, &ib), (sup, &sb), (data, &[db, pages].concat())] {
            file[at as usize..at as usize + bytes.len()].copy_from_slice(bytes);
        }
        let io = H5Io::new(Source::local(Bytes::from_vec(file.clone())), 8, 8, 0).unwrap();
        let got = entries(&io, header).unwrap();
        let addr = |a| Entry { addr: a, filtered: None };
        assert_eq!(got, [(9, addr(1000)), (10, addr(2000))]);
        // A page whose checksum fails.
        let at = data as usize + 14 + 4 + 20 + 3;
        file[at] ^= 1;
        let io = H5Io::new(Source::local(Bytes::from_vec(file)), 8, 8, 0).unwrap();
        assert_eq!(entries(&io, header).unwrap_err().rule(), Some(Rule::ChecksumMismatch));
    }
}
