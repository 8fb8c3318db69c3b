//! Groups: the links from a group to its members, old-style (a symbol table: B-tree v1 nodes
//! over symbol table nodes, names in a local heap) or new-style (link messages in the header,
//! or, past a few links, in a fractal heap indexed by a B-tree v2).

mod fractal_heap;
mod links;
mod symbol_table;

pub(super) use fractal_heap::FractalHeap;
pub(super) use links::parse_link;

use super::io::H5Io;
use super::object_header::{Message, find, kind};
use crate::error::Result;

/// The most links one group may have.
pub(super) const MAX_LINKS: usize = 1 << 20;

/// Where a link leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// An object in this file: its header's address.
    Hard(u64),
    /// A path in this file.
    Soft(String),
    /// An object in another file: the file and the path.
    External(String, String),
    /// A link type this reader does not follow.
    Other(u8),
}

/// One named link of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Link {
    /// The link's name (one path component).
    pub name: String,
    /// Where it leads.
    pub target: Target,
}

/// Whether the object whose header holds `messages` is a group.
pub(super) fn is_group(messages: &[Message]) -> bool {
    messages.iter().any(|m| matches!(m.kind, kind::SYMBOL_TABLE | kind::LINK_INFO | kind::LINK | kind::GROUP_INFO))
}

/// The links of the group whose header holds `messages`, in no particular order; `cache` is
/// the B-tree and local heap a symbol table entry caches (the root group of superblocks 0 and
/// 1), used when the header has no symbol table message.
pub(super) fn links(io: &H5Io, messages: &[Message], cache: Option<(u64, u64)>) -> Result<Vec<Link>> {
    if let Some(m) = find(messages, kind::SYMBOL_TABLE) {
        let (btree, heap) = symbol_table::message(io, m)?;
        return symbol_table::links(io, btree, heap);
    }
    let mut out = Vec::new();
    for m in messages.iter().filter(|m| m.kind == kind::LINK) {
        out.push(parse_link(io, &m.body)?);
        if out.len() > MAX_LINKS {
            return Err(links::too_many());
        }
    }
    if let Some(info) = find(messages, kind::LINK_INFO) {
        out.extend(links::dense(io, info)?);
    } else if out.is_empty()
        && let Some((btree, heap)) = cache
    {
        return symbol_table::links(io, btree, heap);
    }
    Ok(out)
}
