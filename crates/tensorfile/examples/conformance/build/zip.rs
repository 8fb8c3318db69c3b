//! A small zip writer: local headers, data, central directory, end record (no zip64), every
//! field exposed so cases can lie in any of them.

use super::deflate::deflate;

/// One entry as it will be written.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The name's bytes (not necessarily UTF-8).
    pub name: Vec<u8>,
    /// 0 stored, 8 deflated.
    pub method: u16,
    /// The bytes in the archive (compressed when deflated).
    pub data: Vec<u8>,
    pub crc: u32,
    /// The uncompressed size the headers declare.
    pub size: u32,
    /// The central directory record's extra field.
    pub extra: Vec<u8>,
}

impl Entry {
    pub fn stored(name: &str, data: &[u8]) -> Entry {
        Entry {
            name: name.as_bytes().to_vec(),
            method: 0,
            data: data.to_vec(),
            crc: crc32fast::hash(data),
            size: data.len() as u32,
            extra: Vec::new(),
        }
    }

    pub fn deflated(name: &str, data: &[u8]) -> Entry {
        Entry {
            name: name.as_bytes().to_vec(),
            method: 8,
            data: deflate(data),
            crc: crc32fast::hash(data),
            size: data.len() as u32,
            extra: Vec::new(),
        }
    }
}

/// A written archive and where its parts are, for patching.
pub struct Zip {
    pub bytes: Vec<u8>,
    /// Offset of each entry's local header.
    pub local: Vec<usize>,
    /// Offset of each entry's central directory record.
    pub central: Vec<usize>,
    /// Offset of the end of central directory record.
    pub end: usize,
}

fn u16le(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn u32le(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn build(entries: &[Entry]) -> Zip {
    let mut out = Vec::new();
    let mut local = Vec::new();
    for e in entries {
        local.push(out.len());
        out.extend_from_slice(b"PK\x03\x04");
        u16le(&mut out, 20); // version needed
        u16le(&mut out, 0); // flags
        u16le(&mut out, e.method);
        u16le(&mut out, 0); // time
        u16le(&mut out, 0x21); // date: 1980-01-01
        u32le(&mut out, e.crc);
        u32le(&mut out, e.data.len() as u32);
        u32le(&mut out, e.size);
        u16le(&mut out, e.name.len() as u16);
        u16le(&mut out, 0); // extra length
        out.extend_from_slice(&e.name);
        out.extend_from_slice(&e.data);
    }
    let directory = out.len();
    let mut central = Vec::new();
    for (e, &at) in entries.iter().zip(&local) {
        central.push(out.len());
        out.extend_from_slice(b"PK\x01\x02");
        u16le(&mut out, 20); // version made by
        u16le(&mut out, 20); // version needed
        u16le(&mut out, 0);
        u16le(&mut out, e.method);
        u16le(&mut out, 0);
        u16le(&mut out, 0x21);
        u32le(&mut out, e.crc);
        u32le(&mut out, e.data.len() as u32);
        u32le(&mut out, e.size);
        u16le(&mut out, e.name.len() as u16);
        u16le(&mut out, e.extra.len() as u16);
        u16le(&mut out, 0); // comment
        u16le(&mut out, 0); // disk
        u16le(&mut out, 0); // internal attributes
        u32le(&mut out, 0); // external attributes
        u32le(&mut out, at as u32);
        out.extend_from_slice(&e.name);
        out.extend_from_slice(&e.extra);
    }
    let end = out.len();
    out.extend_from_slice(b"PK\x05\x06");
    u16le(&mut out, 0);
    u16le(&mut out, 0);
    u16le(&mut out, entries.len() as u16);
    u16le(&mut out, entries.len() as u16);
    u32le(&mut out, (end - directory) as u32);
    u32le(&mut out, directory as u32);
    u16le(&mut out, 0); // comment
    Zip { bytes: out, local, central, end }
}

/// Field offsets inside a central directory record.
pub mod central {
    pub const COMPRESSED: usize = 20;
    pub const SIZE: usize = 24;
    pub const LOCAL_OFFSET: usize = 42;
}

/// Field offsets inside the end of central directory record.
pub mod end {
    pub const ENTRIES: usize = 10;
    pub const SIZE: usize = 12;
    pub const OFFSET: usize = 16;
}
