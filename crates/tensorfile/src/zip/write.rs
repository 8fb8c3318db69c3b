//! Writing zip archives the way PyTorch's writer does: stored entries under one root
//! folder, each entry's data at a multiple of 64 bytes (padded by an `FB` extra field), zip64
//! end records always present.

use std::io::{SeekFrom, Write};

use super::ALIGNMENT;
use crate::error::{Error, Result};
use crate::output::{Output, write_hashing};
use crate::model::Chunks;

struct Central {
    name: Vec<u8>,
    crc32: u32,
    size: u64,
    header_offset: u64,
}

/// A zip writer; entries are written whole, one after another.
pub struct ZipWriter<W: Write> {
    out: W,
    pos: u64,
    root: String,
    central: Vec<Central>,
    /// Whether the zip64 end records are written when nothing needs them (PyTorch's writer
    /// always writes them).
    zip64_always: bool,
}

const WIDE: u64 = 0xFFFF_FFFF;

impl<W: Write> ZipWriter<W> {
    /// A writer whose records all go under `root/` (or, with an empty root, at the top).
    pub fn new(out: W, root: &str) -> ZipWriter<W> {
        ZipWriter { out, pos: 0, root: root.to_string(), central: Vec::new(), zip64_always: true }
    }

    /// A writer of records at the top of the archive whose zip64 end records are written only
    /// when a count, size or offset needs them, as Python's `zipfile` writes archives (an
    /// empty archive then starts with the end record, which NumPy's `load` looks for).
    pub fn plain(out: W) -> ZipWriter<W> {
        ZipWriter { zip64_always: false, ..ZipWriter::new(out, "") }
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Add record `name` (under the root) holding `data`, stored.
    pub fn add(&mut self, name: &str, data: &[u8]) -> Result<()> {
        let crc32 = crc32fast::hash(data);
        let (full, head) = self.local_header(name, data.len() as u64, crc32)?;
        let header_offset = self.pos;
        self.put(&head)?;
        debug_assert_eq!(self.pos % ALIGNMENT, 0);
        self.put(data)?;
        self.central.push(Central { name: full, crc32, size: data.len() as u64, header_offset });
        Ok(())
    }

    /// Offset of the CRC-32 in a local header.
    const LOCAL_CRC_AT: u64 = 14;

    /// The full name and the local header of a stored record of `size` bytes, padded so
    /// that its data starts at a multiple of the alignment.
    fn local_header(&self, name: &str, size: u64, crc32: u32) -> Result<(Vec<u8>, Vec<u8>)> {
        let full =
            if self.root.is_empty() { name.as_bytes().to_vec() } else { format!("{}/{name}", self.root).into_bytes() };
        let name_len =
            u16::try_from(full.len()).map_err(|_| Error::usage(format!("zip entry name too long: {name}")))?;
        let wide = size >= WIDE;
        // zip64 sizes in the local header when needed, then padding to the alignment.
        let zip64_len = if wide { 20 } else { 0 };
        let before_pad = self.pos + 30 + u64::from(name_len) + zip64_len + 4;
        let pad = (ALIGNMENT - before_pad % ALIGNMENT) % ALIGNMENT;
        let extra_len = u16::try_from(zip64_len + 4 + pad).unwrap_or(u16::MAX);
        let mut head = Vec::with_capacity(30 + full.len() + usize::from(extra_len));
        head.extend_from_slice(b"PK\x03\x04");
        head.extend_from_slice(&45u16.to_le_bytes()); // version needed: zip64
        head.extend_from_slice(&0x0800u16.to_le_bytes()); // UTF-8 names
        head.extend_from_slice(&0u16.to_le_bytes()); // stored
        head.extend_from_slice(&[0; 4]); // time, date
        debug_assert_eq!(head.len() as u64, Self::LOCAL_CRC_AT);
        head.extend_from_slice(&crc32.to_le_bytes());
        let small = if wide { WIDE as u32 } else { size as u32 };
        head.extend_from_slice(&small.to_le_bytes());
        head.extend_from_slice(&small.to_le_bytes());
        head.extend_from_slice(&name_len.to_le_bytes());
        head.extend_from_slice(&extra_len.to_le_bytes());
        head.extend_from_slice(&full);
        if wide {
            head.extend_from_slice(&1u16.to_le_bytes());
            head.extend_from_slice(&16u16.to_le_bytes());
            head.extend_from_slice(&size.to_le_bytes());
            head.extend_from_slice(&size.to_le_bytes());
        }
        head.extend_from_slice(b"FB");
        head.extend_from_slice(&(pad as u16).to_le_bytes());
        head.resize(head.len() + pad as usize, b'Z');
        Ok((full, head))
    }

    /// The zip64 end of central directory record and its locator.
    fn zip64_end(count: u64, dir_size: u64, dir_offset: u64, zip64_end: u64) -> Vec<u8> {
        let mut r = Vec::with_capacity(56 + 20);
        r.extend_from_slice(b"PK\x06\x06");
        r.extend_from_slice(&44u64.to_le_bytes());
        r.extend_from_slice(&45u16.to_le_bytes());
        r.extend_from_slice(&45u16.to_le_bytes());
        r.extend_from_slice(&[0; 8]); // this disk, directory disk
        r.extend_from_slice(&count.to_le_bytes());
        r.extend_from_slice(&count.to_le_bytes());
        r.extend_from_slice(&dir_size.to_le_bytes());
        r.extend_from_slice(&dir_offset.to_le_bytes());
        r.extend_from_slice(b"PK\x06\x07");
        r.extend_from_slice(&0u32.to_le_bytes());
        r.extend_from_slice(&zip64_end.to_le_bytes());
        r.extend_from_slice(&1u32.to_le_bytes());
        r
    }

    /// Write the central directory and end records; return the output.
    pub fn finish(mut self) -> Result<W> {
        let dir_offset = self.pos;
        let central = std::mem::take(&mut self.central);
        for c in &central {
            let wide_size = c.size >= WIDE;
            let wide_offset = c.header_offset >= WIDE;
            let mut zip64 = Vec::new();
            if wide_size {
                zip64.extend_from_slice(&c.size.to_le_bytes());
                zip64.extend_from_slice(&c.size.to_le_bytes());
            }
            if wide_offset {
                zip64.extend_from_slice(&c.header_offset.to_le_bytes());
            }
            let mut e = Vec::with_capacity(46 + c.name.len() + 4 + zip64.len());
            e.extend_from_slice(b"PK\x01\x02");
            e.extend_from_slice(&45u16.to_le_bytes()); // made by
            e.extend_from_slice(&45u16.to_le_bytes()); // needed
            e.extend_from_slice(&0x0800u16.to_le_bytes());
            e.extend_from_slice(&0u16.to_le_bytes());
            e.extend_from_slice(&[0; 4]);
            e.extend_from_slice(&c.crc32.to_le_bytes());
            let size = if wide_size { WIDE as u32 } else { c.size as u32 };
            e.extend_from_slice(&size.to_le_bytes());
            e.extend_from_slice(&size.to_le_bytes());
            e.extend_from_slice(&(c.name.len() as u16).to_le_bytes());
            let extra_len = if zip64.is_empty() { 0 } else { 4 + zip64.len() as u16 };
            e.extend_from_slice(&extra_len.to_le_bytes());
            e.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
            e.extend_from_slice(&[0; 4]); // external attributes
            let offset = if wide_offset { WIDE as u32 } else { c.header_offset as u32 };
            e.extend_from_slice(&offset.to_le_bytes());
            e.extend_from_slice(&c.name);
            if !zip64.is_empty() {
                e.extend_from_slice(&1u16.to_le_bytes());
                e.extend_from_slice(&(zip64.len() as u16).to_le_bytes());
                e.extend_from_slice(&zip64);
            }
            self.put(&e)?;
        }
        let dir_size = self.pos - dir_offset;
        let count = central.len() as u64;
        let zip64_end = self.pos;
        let mut r = Vec::with_capacity(56 + 20 + 22);
        let zip64 = self.zip64_always || count >= 0xFFFF || dir_size >= WIDE || dir_offset >= WIDE;
        if zip64 {
            r.extend_from_slice(&Self::zip64_end(count, dir_size, dir_offset, zip64_end));
        }
        r.extend_from_slice(b"PK\x05\x06");
        r.extend_from_slice(&[0; 4]);
        let small = |v: u64, max: u64| v.min(max);
        r.extend_from_slice(&(small(count, 0xFFFF) as u16).to_le_bytes());
        r.extend_from_slice(&(small(count, 0xFFFF) as u16).to_le_bytes());
        r.extend_from_slice(&(small(dir_size, WIDE) as u32).to_le_bytes());
        r.extend_from_slice(&(small(dir_offset, WIDE) as u32).to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        self.put(&r)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Output> ZipWriter<W> {
    /// Add record `name` holding `size` bytes that arrive in pieces, stored: the data is
    /// written as it comes and the CRC-32 filled into the local header afterwards, so the
    /// record never sits whole in memory. Errors if the pieces add up to another size.
    pub fn add_streamed(&mut self, name: &str, size: u64, pieces: Chunks<'_>) -> Result<()> {
        let (full, head) = self.local_header(name, size, 0)?;
        let header_offset = self.pos;
        self.put(&head)?;
        let mut crc = crc32fast::Hasher::new();
        let mut written = 0u64;
        for piece in pieces {
            let piece = piece?;
            written += piece.len() as u64;
            if written > size {
                break;
            }
            write_hashing(&mut self.out, &piece, |b| crc.update(b))?;
            self.pos += piece.len() as u64;
        }
        if written != size {
            return Err(Error::usage(format!("zip record {name}: {written} bytes given, {size} declared")));
        }
        let crc32 = crc.finalize();
        self.out.seek(SeekFrom::Start(header_offset + Self::LOCAL_CRC_AT))?;
        self.out.write_all(&crc32.to_le_bytes())?;
        self.out.seek(SeekFrom::Start(self.pos))?;
        self.central.push(Central { name: full, crc32, size, header_offset });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::read::{Archive, is_safe_name};
    use super::*;
    use crate::source::Bytes;

    #[test]
    fn written_archives_read_back_aligned() {
        let mut out = Vec::new();
        let mut w = ZipWriter::new(&mut out, "archive");
        w.add("a", b"hello").unwrap();
        w.add("data/b", &[7u8; 1000]).unwrap();
        w.add("empty", b"").unwrap();
        w.finish().unwrap();
        let z = Archive::open(Bytes::from_vec(out)).unwrap();
        assert_eq!(z.root(), Some("archive"));
        let e = z.record("data/b").unwrap();
        assert_eq!(e.data_offset % ALIGNMENT, 0);
        assert_eq!(&*z.read(e, true).unwrap(), &[7u8; 1000][..]);
        assert_eq!(&*z.read(z.record("a").unwrap(), true).unwrap(), b"hello");
        assert_eq!(z.records_under("data/"), ["data/b"]);
    }

    #[test]
    fn streamed_records_get_their_crc_afterwards() {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut w = ZipWriter::new(&mut out, "archive");
        let pieces: Vec<Result<Bytes>> = vec![Ok(Bytes::from_vec(vec![1; 100])), Ok(Bytes::from_vec(vec![2; 50]))];
        w.add_streamed("data/0", 150, Box::new(pieces.into_iter())).unwrap();
        w.add("after", b"tail").unwrap();
        let short: Vec<Result<Bytes>> = vec![Ok(Bytes::from_vec(vec![3; 10]))];
        assert!(w.add_streamed("data/1", 11, Box::new(short.into_iter())).is_err(), "fewer bytes than declared");
        let long: Vec<Result<Bytes>> = vec![Ok(Bytes::from_vec(vec![3; 12]))];
        assert!(w.add_streamed("data/1", 11, Box::new(long.into_iter())).is_err(), "more bytes than declared");

        let mut out = std::io::Cursor::new(Vec::new());
        let mut w = ZipWriter::new(&mut out, "archive");
        let pieces: Vec<Result<Bytes>> = vec![Ok(Bytes::from_vec(vec![1; 100])), Ok(Bytes::from_vec(vec![2; 50]))];
        w.add_streamed("data/0", 150, Box::new(pieces.into_iter())).unwrap();
        w.add("after", b"tail").unwrap();
        w.finish().unwrap();
        let bytes = out.into_inner();
        let mut want = vec![1u8; 100];
        want.extend_from_slice(&[2; 50]);
        // The first record's local header starts the file: its CRC was filled in.
        assert_eq!(bytes[14..18], crc32fast::hash(&want).to_le_bytes());
        let z = Archive::open(Bytes::from_vec(bytes)).unwrap();
        // `read(.., true)` checks the central directory's CRC.
        assert_eq!(&*z.read(z.record("data/0").unwrap(), true).unwrap(), &want[..]);
        assert_eq!(&*z.read(z.record("after").unwrap(), true).unwrap(), b"tail");
    }

    #[test]
    fn plain_archives_have_zip64_end_records_only_when_needed() {
        let empty = ZipWriter::plain(Vec::new()).finish().unwrap();
        assert_eq!((empty.len(), &empty[..4]), (22, &b"PK\x05\x06"[..]));
        let mut w = ZipWriter::plain(Vec::new());
        w.add("a.npy", b"hello").unwrap();
        let out = w.finish().unwrap();
        assert!(!out.windows(4).any(|w| w == b"PK\x06\x06"));
        let z = Archive::open(Bytes::from_vec(out)).unwrap();
        assert_eq!((z.root(), &*z.read(z.entry("a.npy").unwrap(), true).unwrap()), (None, &b"hello"[..]));
    }

    #[test]
    fn unsafe_names() {
        for bad in ["/etc/passwd", "a/../../b", "..", "C:\\x", "\\\\server\\x"] {
            assert!(!is_safe_name(bad), "{bad}");
        }
        assert!(is_safe_name("archive/data/0"));
    }
}
