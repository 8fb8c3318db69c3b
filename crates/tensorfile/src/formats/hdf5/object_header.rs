//! Object headers: the messages that describe a group, a dataset or a committed datatype.
//!
//! Version 1 headers (a 16-byte prefix, 8-byte aligned messages) and version 2 headers
//! (`OHDR`, checksummed, with `OCHK` continuation blocks) are read; continuation messages are
//! followed with a bound on their number and on the bytes they cover, and a block reached
//! twice is refused. Null messages are dropped. A message stored shared in another object's
//! header (a committed datatype) is replaced by that message; one in the shared-message heap
//! is refused.

use std::collections::HashSet;

use super::checksum;
use super::io::H5Io;
use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::source::Bytes;

/// Message types this reader knows by number.
pub(super) mod kind {
    /// Padding.
    pub const NIL: u16 = 0x00;
    /// The shape of a dataset or an attribute.
    pub const DATASPACE: u16 = 0x01;
    /// Where a new-style group keeps its links.
    pub const LINK_INFO: u16 = 0x02;
    /// The element type of a dataset or an attribute.
    pub const DATATYPE: u16 = 0x03;
    /// The old fill value message.
    pub const FILL_VALUE_OLD: u16 = 0x04;
    /// The fill value message.
    pub const FILL_VALUE: u16 = 0x05;
    /// One link of a new-style group.
    pub const LINK: u16 = 0x06;
    /// Where and how a dataset's elements are stored.
    pub const LAYOUT: u16 = 0x08;
    /// A new-style group's settings.
    pub const GROUP_INFO: u16 = 0x0a;
    /// Filters applied to chunks.
    pub const FILTER_PIPELINE: u16 = 0x0b;
    /// An attribute.
    pub const ATTRIBUTE: u16 = 0x0c;
    /// More header messages elsewhere.
    pub const CONTINUATION: u16 = 0x10;
    /// An old-style group's B-tree and local heap.
    pub const SYMBOL_TABLE: u16 = 0x11;
    /// Where attributes are kept densely.
    pub const ATTRIBUTE_INFO: u16 = 0x15;
}

/// The most messages one object header may hold (continuation blocks included).
pub(super) const MAX_MESSAGES: usize = 1 << 16;
/// The most continuation blocks one object header may have.
pub(super) const MAX_CONTINUATIONS: usize = 1024;

/// Bit of a message's flags: the message is shared (stored elsewhere).
const SHARED: u8 = 0x02;

/// One header message: its type, its flags and its bytes.
#[derive(Debug, Clone)]
pub(super) struct Message {
    /// The message type (see [`kind`]).
    pub kind: u16,
    /// The message flags (bit 0 constant, bit 1 shared...).
    pub flags: u8,
    /// The message's bytes.
    pub body: Bytes,
}

/// The messages of the object header at `addr`, null messages left out, continuation
/// messages followed (and left out), shared messages resolved.
pub(super) fn messages(io: &H5Io, addr: u64) -> Result<Vec<Message>> {
    let raw = raw_messages(io, addr)?;
    raw.into_iter().map(|m| if m.flags & SHARED != 0 { resolve_shared(io, m) } else { Ok(m) }).collect()
}

/// The first message of `kind` among `messages`.
pub(super) fn find(messages: &[Message], kind: u16) -> Option<&Message> {
    messages.iter().find(|m| m.kind == kind)
}

/// A header block still to read: where it is and how long.
struct Pending {
    addr: u64,
    len: u64,
}

/// The walk over one object header's blocks.
struct Walk<'a> {
    io: &'a H5Io,
    /// The header's address, for messages.
    addr: u64,
    /// Version 2 (`OHDR`) rather than version 1.
    v2: bool,
    /// The v2 header's flags (bit 2: messages carry a creation order).
    flags: u8,
    out: Vec<Message>,
    pending: Vec<Pending>,
}

/// The messages of the header at `addr` as stored (shared ones not resolved).
fn raw_messages(io: &H5Io, addr: u64) -> Result<Vec<Message>> {
    let head = io.read_up_to(addr, 4, "object header")?;
    let v2 = head.starts_with(b"OHDR");
    let mut walk = Walk { io, addr, v2, flags: 0, out: Vec::new(), pending: Vec::new() };
    if v2 {
        walk.first_chunk_v2()?
    } else {
        walk.first_chunk_v1()?
    }
    let mut seen = HashSet::new();
    seen.insert(addr);
    let mut covered = 0u64;
    let mut blocks = 0usize;
    while let Some(next) = walk.pending.pop() {
        blocks += 1;
        if blocks > MAX_CONTINUATIONS {
            return Err(Error::invalid(
                Rule::HeaderTooLarge,
                format!("object header at {addr} has more than {MAX_CONTINUATIONS} continuation blocks"),
            ));
        }
        if !seen.insert(next.addr) {
            return Err(Error::invalid(
                Rule::Overlap,
                format!("continuation block at {} is already part of the object header at {addr}", next.addr),
            ));
        }
        covered = checked::add(covered, next.len, "continuation blocks")?;
        if covered > io.file_len() {
            return Err(Error::invalid(
                Rule::HeaderTooLarge,
                format!("the continuation blocks of the object header at {addr} cover more bytes than the file holds"),
            ));
        }
        let block = io.read_what(next.addr, next.len, "object header continuation block")?;
        if v2 {
            walk.continuation_v2(&block, next.addr)?;
        } else {
            walk.messages(&block, 0, block.len(), next.addr)?;
        }
    }
    let mut out = walk.out;
    out.retain(|m| m.kind != kind::NIL && m.kind != kind::CONTINUATION);
    Ok(out)
}

impl Walk<'_> {
    fn too_many(&self) -> Error {
        Error::invalid(
            Rule::HeaderTooLarge,
            format!("object header at {} holds more than {MAX_MESSAGES} messages", self.addr),
        )
    }

    /// Version 1: a 16-byte prefix (version, reserved, message count, reference count, size
    /// of the first chunk, padding), then 8-byte aligned messages.
    fn first_chunk_v1(&mut self) -> Result<()> {
        let addr = self.addr;
        let prefix = self.io.read_what(addr, 16, "object header")?;
        let mut c = Cursor::new(&prefix);
        let version = c.u8("object header version")?;
        if version != 1 {
            return Err(Error::invalid(
                Rule::BadField,
                format!(
                    "object header at {addr}: version {version} (this library reads 1, and 2 after an OHDR signature)"
                ),
            ));
        }
        // Reserved, the message count (which includes the continuation blocks' messages:
        // the blocks themselves say how many there are), the reference count.
        c.skip(1 + 2 + 4, "object header prefix")?;
        let size = c.u32_le("object header size")?;
        let start = checked::add(addr, 16, "object header")?;
        let block = self.io.read_what(start, u64::from(size), "object header")?;
        self.messages(&block, 0, block.len(), start)
    }

    /// Version 2: `OHDR`, version 2, flags, optional times and attribute phase change
    /// values, the size of the first chunk (1, 2, 4 or 8 bytes), messages, a gap, a checksum.
    fn first_chunk_v2(&mut self) -> Result<()> {
        let addr = self.addr;
        let head = self.io.read_up_to(addr, 4 + 2 + 16 + 4 + 8, "object header")?;
        let mut c = Cursor::new(&head);
        c.skip(4, "signature")?;
        let version = c.u8("object header version")?;
        if version != 2 {
            return Err(Error::invalid(
                Rule::BadField,
                format!("object header at {addr}: OHDR version {version} (this library reads 2)"),
            ));
        }
        self.flags = c.u8("object header flags")?;
        if self.flags & 0x20 != 0 {
            c.skip(16, "object times")?;
        }
        if self.flags & 0x10 != 0 {
            c.skip(4, "attribute phase change values")?;
        }
        let size = super::io::uint(&mut c, 1 << (self.flags & 3), "size of the first chunk")?;
        let prefix = c.position();
        let total = checked::add(checked::add(prefix as u64, size, "object header")?, 4, "object header")?;
        let block = self.io.read_what(addr, total, "object header")?;
        checksum::verify(&block, &format!("object header at {addr}"))?;
        self.messages(&block, prefix, block.len() - 4, addr)
    }

    /// A version 2 continuation block: `OCHK`, messages, a gap, a checksum.
    fn continuation_v2(&mut self, block: &Bytes, addr: u64) -> Result<()> {
        if !block.starts_with(b"OCHK") {
            return Err(Error::invalid(
                Rule::BadMagic,
                format!("continuation block at {addr} does not start with OCHK"),
            ));
        }
        checksum::verify(block, &format!("object header continuation block at {addr}"))?;
        self.messages(block, 4, block.len() - 4, addr)
    }

    /// The messages of `block[from..to]` (which lies at `addr`): version 1 messages are type
    /// (2), size (2), flags (1), reserved (3), body; version 2 messages type (1), size (2),
    /// flags (1), creation order (2, when the header tracks it), body, and what is left
    /// shorter than a message's prefix is the gap. Continuation messages found are queued.
    fn messages(&mut self, block: &Bytes, from: usize, to: usize, addr: u64) -> Result<()> {
        let area = &block[..to];
        let mut c = Cursor::with_base(area, addr);
        c.skip(from, "object header prefix")?;
        let prefix_len = if !self.v2 {
            8
        } else if self.flags & 0x04 != 0 {
            6
        } else {
            4
        };
        let mut found = Vec::new();
        while c.remaining() >= prefix_len {
            let (kind, size, flags) = if self.v2 {
                let kind = u16::from(c.u8("message type")?);
                let size = c.u16_le("message size")?;
                let flags = c.u8("message flags")?;
                c.skip(prefix_len - 4, "creation order")?;
                (kind, size, flags)
            } else {
                let kind = c.u16_le("message type")?;
                let size = c.u16_le("message size")?;
                let flags = c.u8("message flags")?;
                c.skip(3, "reserved")?;
                (kind, size, flags)
            };
            let at = c.position();
            c.skip(usize::from(size), "message body")?;
            let body = block.slice(at as u64, u64::from(size))?;
            if kind == kind::CONTINUATION {
                let mut b = Cursor::new(&body);
                let next = Pending { addr: self.io.offset(&mut b)?, len: self.io.length(&mut b)? };
                found.push(next);
            }
            self.out.push(Message { kind, flags, body });
            if self.out.len() > MAX_MESSAGES {
                return Err(self.too_many());
            }
        }
        // Followed in the order they appear.
        found.reverse();
        self.pending.extend(found);
        Ok(())
    }
}

/// A shared message replaced by the message it points to: one of the same type in the
/// object header at the address it gives (versions 1 and 2, and version 3 of type 2); a
/// message in the file's shared-message heap (version 3, type 1) is refused.
fn resolve_shared(io: &H5Io, m: Message) -> Result<Message> {
    let mut c = Cursor::new(&m.body);
    let version = c.u8("shared message version")?;
    let shared_type = c.u8("shared message type")?;
    let addr = match version {
        1 => {
            c.skip(6, "reserved")?;
            io.offset(&mut c)?
        }
        2 => io.offset(&mut c)?,
        3 if shared_type == 2 => io.offset(&mut c)?,
        3 => {
            return Err(Error::unsupported(format!(
                "a header message of type {} stored in the shared-message heap (shared type {shared_type})",
                m.kind
            )));
        }
        v => return Err(Error::invalid(Rule::BadField, format!("shared message version {v}"))),
    };
    let target = raw_messages(io, addr)?;
    let found = target.into_iter().find(|t| t.kind == m.kind).ok_or_else(|| {
        Error::invalid(Rule::MissingField, format!("shared message of type {}: the object at {addr} has none", m.kind))
    })?;
    if found.flags & SHARED != 0 {
        return Err(Error::invalid(
            Rule::BadField,
            format!("shared message of type {} points to another shared one", m.kind),
        ));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;

    fn io(bytes: Vec<u8>) -> H5Io {
        H5Io::new(Source::local(Bytes::from_vec(bytes)), 8, 8, 0).unwrap()
    }

    /// A version 1 header at 0 holding `messages` (type, flags, body).
    fn v1(messages: &[(u16, u8, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        for (kind, flags, b) in messages {
            body.extend_from_slice(&kind.to_le_bytes());
            body.extend_from_slice(&(b.len() as u16).to_le_bytes());
            body.extend_from_slice(&[*flags, 0, 0, 0]);
            body.extend_from_slice(b);
        }
        let mut h = vec![1, 0];
        h.extend_from_slice(&(messages.len() as u16).to_le_bytes());
        h.extend_from_slice(&1u32.to_le_bytes());
        h.extend_from_slice(&(body.len() as u32).to_le_bytes());
        h.extend_from_slice(&[0; 4]);
        h.extend_from_slice(&body);
        h
    }

    #[test]
    fn version_1_messages_are_read_and_null_ones_dropped() {
        let f = io(v1(&[(kind::NIL, 0, &[0; 8]), (kind::DATASPACE, 1, &[1, 2, 3, 4, 5, 6, 7, 8])]));
        let m = messages(&f, 0).unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].kind, m[0].flags, &m[0].body[..]), (kind::DATASPACE, 1, &[1, 2, 3, 4, 5, 6, 7, 8][..]));
    }

    #[test]
    fn a_header_of_too_many_messages_is_refused() {
        let nil: Vec<(u16, u8, &[u8])> = vec![(kind::NIL, 0, &[]); MAX_MESSAGES + 1];
        let err = messages(&io(v1(&nil)), 0).unwrap_err();
        assert_eq!(err.rule(), Some(Rule::HeaderTooLarge));
    }

    #[test]
    fn a_message_longer_than_its_block_and_a_bad_version_are_refused() {
        let mut h = v1(&[(kind::DATASPACE, 0, &[0; 8])]);
        h[16 + 2] = 200;
        assert_eq!(messages(&io(h), 0).unwrap_err().rule(), Some(Rule::Truncated));
        let mut h = v1(&[]);
        h[0] = 3;
        assert_eq!(messages(&io(h), 0).unwrap_err().rule(), Some(Rule::BadField));
    }

    #[test]
    fn a_continuation_back_to_its_own_block_is_refused() {
        // The header's only message continues at its own first chunk (address 16).
        let mut cont = 16u64.to_le_bytes().to_vec();
        cont.extend_from_slice(&24u64.to_le_bytes());
        let h = v1(&[(kind::CONTINUATION, 0, &cont)]);
        let err = messages(&io(h), 0).unwrap_err();
        assert!(matches!(err.rule(), Some(Rule::Overlap) | Some(Rule::HeaderTooLarge)), "{err}");
    }
}
