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

/// The attributes of the object whose header holds `messages`, in name order, each decoded or,
/// where it cannot be, described.
pub(super) fn attributes(io: &H5Io, messages: &[Message]) -> Result<Vec<(String, MetaValue)>> {
    let mut out = Vec::new();
    for m in messages.iter().filter(|m| m.kind == kind::ATTRIBUTE) {
        out.push(attribute(io, &m.body)?);
    }
    if let Some(info) = find(messages, kind::ATTRIBUTE_INFO) {
        let mut c = Cursor::new(&info.body);
        let version = c.u8("attribute info version")?;
        if version != 0 {
            return Err(Error::invalid(Rule::BadField, format!("attribute info version {version}")));
        }
        if c.u8("attribute info flags")? & 1 != 0 {
            c.skip(2, "maximum creation index")?;
        }
        let heap = io.offset(&mut c)?;
        let index = io.offset(&mut c)?;
        if !io.is_undefined(heap) {
            let heap = FractalHeap::open(io, heap)?;
            for record in super::dense::records(io, index, 8)? {
                let id = record.get(..8).ok_or_else(|| Error::invalid(Rule::Truncated, "attribute name record"))?;
                out.push(attribute(io, &heap.object(io, id)?)?);
                if out.len() > MAX_ATTRIBUTES {
                    break;
                }
            }
        }
    }
    if out.len() > MAX_ATTRIBUTES {
        return Err(Error::invalid(
            Rule::TooManyEntries,
            format!("more than {MAX_ATTRIBUTES} attributes on one object"),
        ));
    }
    Ok(out)
}

/// One attribute message: version 1 (name, datatype and dataspace each padded to 8 bytes),
/// 2 (unpadded) or 3 (unpadded, with the name's character set), then the data.
fn attribute(io: &H5Io, body: &[u8]) -> Result<(String, MetaValue)> {
    let mut c = Cursor::new(body);
    let version = c.u8("attribute version")?;
    let flags = c.u8("attribute flags")?;
    let name_len = c.u16_le("attribute name size")?;
    let type_len = c.u16_le("attribute datatype size")?;
    let space_len = c.u16_le("attribute dataspace size")?;
    let pad = |n: u16| -> Result<usize> {
        let n = u64::from(n);
        Ok(if version == 1 { checked::align_up(n, 8)? as usize } else { n as usize })
    };
    match version {
        1 | 2 => {}
        3 => c.skip(1, "attribute name character set")?,
        v => return Err(Error::invalid(Rule::BadField, format!("attribute message version {v}"))),
    }
    let name = c.take(pad(name_len)?, "attribute name")?;
    let name = name.get(..usize::from(name_len)).unwrap_or(name);
    let name = name.split(|&b| b == 0).next().unwrap_or_default();
    let name =
        String::from_utf8(name.to_vec()).map_err(|_| Error::invalid(Rule::BadUtf8, "attribute name is not UTF-8"))?;
    if flags & 3 != 0 {
        // A shared datatype or dataspace: described, not followed.
        return Ok((name, MetaValue::Text("<hdf5 attribute with a shared datatype or dataspace>".into())));
    }
    let datatype = c.take(pad(type_len)?, "attribute datatype")?;
    let dataspace = c.take(pad(space_len)?, "attribute dataspace")?;
    let data = c.rest();
    let decoded = value::decode(io, datatype, dataspace, data).map_err(|e| e.for_tensor(&name))?;
    Ok((name, decoded))
}
