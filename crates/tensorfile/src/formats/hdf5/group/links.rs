//! New-style groups: link messages (in the group's header, or as objects of a fractal heap
//! indexed by name with a B-tree v2 of type 5) and the link info message that says which.

use super::{FractalHeap, Link, MAX_LINKS, Target};
use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::hdf5::io::{H5Io, uint};
use crate::formats::hdf5::object_header::Message;

/// The error for a group of more links than [`MAX_LINKS`].
pub(super) fn too_many() -> Error {
    Error::invalid(Rule::TooManyEntries, format!("a group of more than {MAX_LINKS} links"))
}

/// A link message: version 1, flags, the link type, creation order and character set when
/// the flags say so, the name's length (1, 2, 4 or 8 bytes) and the name, then where the link
/// leads (an address; a soft link's path; an external link's file and path).
pub(in crate::formats::hdf5) fn parse_link(io: &H5Io, body: &[u8]) -> Result<Link> {
    let mut c = Cursor::new(body);
    let version = c.u8("link message version")?;
    if version != 1 {
        return Err(Error::invalid(Rule::BadField, format!("link message version {version}")));
    }
    let flags = c.u8("link flags")?;
    let link_type = if flags & 0x08 != 0 { c.u8("link type")? } else { 0 };
    if flags & 0x04 != 0 {
        c.skip(8, "creation order")?;
    }
    if flags & 0x10 != 0 {
        c.skip(1, "name character set")?;
    }
    let name_len = uint(&mut c, 1 << (flags & 3), "link name length")?;
    let name = c.take(checked::to_usize(name_len, "link name length")?, "link name")?;
    let name = String::from_utf8(name.to_vec()).map_err(|_| Error::invalid(Rule::BadUtf8, "link name is not UTF-8"))?;
    if name.is_empty() || name.contains('/') {
        return Err(Error::invalid(Rule::BadField, format!("link name {name:?} (empty, or with a '/')")));
    }
    let target = match link_type {
        0 => Target::Hard(io.offset(&mut c)?),
        1 => {
            let n = c.u16_le("soft link length")?;
            Target::Soft(String::from_utf8_lossy(c.take(usize::from(n), "soft link value")?).into_owned())
        }
        64 => {
            let n = c.u16_le("external link length")?;
            let value = c.take(usize::from(n), "external link value")?;
            // A version and flags byte, then the file name and the path, each NUL-terminated.
            let mut parts = value.get(1..).unwrap_or_default().split(|&b| b == 0);
            let file = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
            let path = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
            Target::External(file, path)
        }
        t => Target::Other(t),
    };
    Ok(Link { name, target })
}

/// The links a link info message keeps densely: every record of its name index (B-tree v2
/// of type 5: the name's hash, then a heap ID) names a link message in its fractal heap.
/// None when the heap's address is undefined (the links are in the header).
pub(super) fn dense(io: &H5Io, info: &Message) -> Result<Vec<Link>> {
    let mut c = Cursor::new(&info.body);
    let version = c.u8("link info version")?;
    if version != 0 {
        return Err(Error::invalid(Rule::BadField, format!("link info version {version}")));
    }
    let flags = c.u8("link info flags")?;
    if flags & 1 != 0 {
        c.skip(8, "maximum creation index")?;
    }
    let heap = io.offset(&mut c)?;
    let index = io.offset(&mut c)?;
    if io.is_undefined(heap) {
        return Ok(Vec::new());
    }
    let heap = FractalHeap::open(io, heap)?;
    let mut out = Vec::new();
    for record in crate::formats::hdf5::dense::records(io, index, 5)? {
        let id = record.get(4..4 + heap.id_len()).ok_or_else(|| {
            Error::invalid(
                Rule::Truncated,
                format!("name index record of {} bytes, heap IDs of {}", record.len(), heap.id_len()),
            )
        })?;
        out.push(parse_link(io, &heap.object(io, id)?)?);
        if out.len() > MAX_LINKS {
            return Err(too_many());
        }
    }
    Ok(out)
}
