//! Attributes: the attribute messages of an object header (and, past a few, the dense
//! storage an attribute info message names: a fractal heap indexed by a B-tree v2 of type 8),
//! decoded into metadata values: integers and floats (scalars and arrays of any rank), h5py's
//! bools, fixed-length and variable-length strings (the latter in the global heap) and arrays
//! of them. Other datatypes are listed by their class name.

mod value;

#[cfg(test)]
mod tests;

use super::group::FractalHeap;
use super::io::H5Io;
use super::object_header::{Message, find, kind};
use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::model::MetaValue;

/// The most attributes read from one object.
pub(super) const MAX_ATTRIBUTES: usize = 1 << 16;

/// One attribute as read: its name (empty where even that could not be read) and its value,
/// or why it cannot be decoded.
pub(super) type Attribute = (String, Result<MetaValue>);

/// The attributes of the object whose header holds `messages`, in header order then dense
/// storage's name order, each decoded, described, or with the reason it cannot be: one that
/// cannot be decoded loses none of the others.
pub(super) fn attributes(io: &H5Io, messages: &[Message]) -> Vec<Attribute> {
    let mut out = Vec::new();
    for m in messages.iter().filter(|m| m.kind == kind::ATTRIBUTE) {
        out.push(attribute(io, &m.body));
    }
    if let Some(info) = find(messages, kind::ATTRIBUTE_INFO)
        && let Err(e) = dense(io, &info.body, &mut out)
    {
        // The dense storage itself: none of its attributes can be named.
        out.push((String::new(), Err(e)));
    }
    if out.len() > MAX_ATTRIBUTES {
        out.truncate(MAX_ATTRIBUTES);
        let e = Error::invalid(Rule::TooManyEntries, format!("more than {MAX_ATTRIBUTES} attributes on one object"));
        out.push((String::new(), Err(e)));
    }
    out
}

/// The attributes in dense storage (a fractal heap indexed by a B-tree v2 of type 8) that an
/// attribute info message names, appended to `out`.
fn dense(io: &H5Io, info: &[u8], out: &mut Vec<Attribute>) -> Result<()> {
    let mut c = Cursor::new(info);
    let version = c.u8("attribute info version")?;
    if version != 0 {
        return Err(Error::invalid(Rule::BadField, format!("attribute info version {version}")));
    }
    if c.u8("attribute info flags")? & 1 != 0 {
        c.skip(2, "maximum creation index")?;
    }
    let heap = io.offset(&mut c)?;
    let index = io.offset(&mut c)?;
    if io.is_undefined(heap) {
        return Ok(());
    }
    let heap = FractalHeap::open(io, heap)?;
    for record in super::dense::records(io, index, 8)? {
        let id = record.get(..8).ok_or_else(|| Error::invalid(Rule::Truncated, "attribute name record"))?;
        out.push(match heap.object(io, id) {
            Ok(body) => attribute(io, &body),
            Err(e) => (String::new(), Err(e)),
        });
        if out.len() > MAX_ATTRIBUTES {
            break;
        }
    }
    Ok(())
}

/// One attribute message: version 1 (name, datatype and dataspace each padded to 8 bytes),
/// 2 (unpadded) or 3 (unpadded, with the name's character set), then the data.
fn attribute(io: &H5Io, body: &[u8]) -> Attribute {
    let mut c = Cursor::new(body);
    let (header, name) = match name(&mut c) {
        Ok(read) => read,
        Err(e) => return (String::new(), Err(e)),
    };
    let value = value(io, &header, &mut c).map_err(|e| e.for_tensor(&name));
    (name, value)
}

/// The attribute's value: its datatype, dataspace and data, decoded or described.
fn value(io: &H5Io, header: &Header, c: &mut Cursor<'_>) -> Result<MetaValue> {
    if header.flags & 3 != 0 {
        // A shared datatype or dataspace: described, not followed.
        return Ok(MetaValue::Text("<hdf5 attribute with a shared datatype or dataspace>".into()));
    }
    let datatype = c.take(header.pad(header.type_len)?, "attribute datatype")?;
    let dataspace = c.take(header.pad(header.space_len)?, "attribute dataspace")?;
    value::decode(io, datatype, dataspace, c.rest())
}

/// The attribute's version, flags, field sizes and name; the cursor is left at its datatype.
fn name(c: &mut Cursor<'_>) -> Result<(Header, String)> {
    let version = c.u8("attribute version")?;
    let flags = c.u8("attribute flags")?;
    let name_len = c.u16_le("attribute name size")?;
    let type_len = c.u16_le("attribute datatype size")?;
    let space_len = c.u16_le("attribute dataspace size")?;
    match version {
        1 | 2 => {}
        3 => c.skip(1, "attribute name character set")?,
        v => return Err(Error::invalid(Rule::BadField, format!("attribute message version {v}"))),
    }
    let header = Header { version, flags, type_len, space_len };
    let name = c.take(header.pad(name_len)?, "attribute name")?;
    let name = name.get(..usize::from(name_len)).unwrap_or(name);
    let name = name.split(|&b| b == 0).next().unwrap_or_default();
    let name =
        String::from_utf8(name.to_vec()).map_err(|_| Error::invalid(Rule::BadUtf8, "attribute name is not UTF-8"))?;
    Ok((header, name))
}

/// What an attribute message says before its name.
struct Header {
    version: u8,
    flags: u8,
    type_len: u16,
    space_len: u16,
}

impl Header {
    /// The stored size of a field of `n` bytes: padded to 8 in version 1.
    fn pad(&self, n: u16) -> Result<usize> {
        let n = u64::from(n);
        Ok(if self.version == 1 { checked::align_up(n, 8)? as usize } else { n as usize })
    }
}
