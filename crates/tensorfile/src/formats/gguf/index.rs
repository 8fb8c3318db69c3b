//! The index of a GGUF file: the header, the key/values and the tensor infos, parsed from the
//! file's first bytes. A local file is parsed from its map; a remote one from a first read of
//! its start, read again longer until the index fits (the index has no length field).

use super::header::{self, Header, Stop, Walk};
use super::metadata;
use crate::error::{Error, Result, Rule};
use crate::formats::Catalog;
use crate::limits::MAX_RANK;
use crate::model::MetaValue;
use crate::source::{SPECULATIVE_READ, Source};

/// The fewest bytes one tensor info takes: a name length, a dimension count, a type, an offset.
const LEAST_INFO: u64 = 8 + 4 + 4 + 8;

/// A tensor info as the file states it.
#[derive(Debug, Clone)]
pub(crate) struct Declared {
    pub name: String,
    /// ggml's `ne`: the fastest-varying dimension first.
    pub ne: Vec<u64>,
    pub ggml_type: u32,
    /// Where its data starts, from the start of the data region.
    pub offset: u64,
}

impl Declared {
    /// The shape, outermost dimension first (`ne` reversed, as numpy and gguf-py give it).
    pub fn shape(&self) -> Vec<u64> {
        self.ne.iter().rev().copied().collect()
    }
}

/// What the index holds.
#[derive(Debug)]
pub(crate) struct Index {
    pub header: Header,
    pub metadata: Vec<(String, MetaValue)>,
    pub infos: Vec<Declared>,
    /// Where the tensor infos end: the data region starts at the next multiple of the
    /// alignment.
    pub end: u64,
}

/// The index of the file in `src`: parsed from the whole map, or from a growing prefix of a
/// remote file (doubling, or as long as the parse asks for).
pub(crate) fn read(src: &Source) -> Result<Index> {
    let len = src.len();
    if let Some(all) = src.as_local() {
        return parse(all, len).map_err(|s| match s {
            Stop::Invalid(e) => e,
            Stop::More(n) => Error::invalid(Rule::Truncated, format!("the index runs past the end, to byte {n}")),
        });
    }
    let mut want = SPECULATIVE_READ.min(len);
    loop {
        let head = src.head(want)?;
        match parse(&head, len) {
            Ok(index) => return Ok(index),
            Err(Stop::Invalid(e)) => return Err(e),
            // `n` is past what was read and within the file: each round reads more.
            Err(Stop::More(n)) => want = n.max(want.saturating_mul(2)).min(len),
        }
    }
}

/// Parse the index from `bytes`, the first bytes of a file of `file_len` bytes.
pub(crate) fn parse(bytes: &[u8], file_len: u64) -> Result<Index, Stop> {
    let mut w = Walk::new(bytes, file_len);
    let header = header::header(&mut w)?;
    Catalog::check_count(header.tensor_count)?;
    let metadata = metadata::read_all(&mut w, header.kv_count)?;
    w.expect(header.tensor_count, LEAST_INFO, "tensor infos")?;
    let room = usize::try_from(header.tensor_count).unwrap_or(usize::MAX).min(w.left_in_bytes() / LEAST_INFO as usize);
    let mut infos = Vec::with_capacity(room);
    for _ in 0..header.tensor_count {
        infos.push(info(&mut w)?);
    }
    let mut order: Vec<usize> = (0..infos.len()).collect();
    order.sort_unstable_by(|&a, &b| infos[a].name.cmp(&infos[b].name));
    if let Some(pair) = order.windows(2).find(|p| infos[p[0]].name == infos[p[1]].name) {
        let name = &infos[pair[0]].name;
        let e = Error::invalid(Rule::DuplicateName, format!("two tensors are named {name:?}")).for_tensor(name);
        return Err(Stop::Invalid(e));
    }
    Ok(Index { header, metadata, infos, end: w.offset() })
}

/// One tensor info: name, dimension count, `ne`, ggml type, offset.
fn info(w: &mut Walk<'_>) -> Result<Declared, Stop> {
    let name = w.string("tensor name")?;
    let named = |s: Stop| match s {
        Stop::Invalid(e) => Stop::Invalid(e.for_tensor(&name)),
        more => more,
    };
    let rank = w.u32("dimension count").map_err(named)?;
    if rank as usize > MAX_RANK {
        let e = Error::invalid(Rule::BadField, format!("{rank} dimensions (limit {MAX_RANK})"));
        return Err(named(Stop::Invalid(e)));
    }
    let mut ne = Vec::with_capacity(rank as usize);
    for _ in 0..rank {
        ne.push(w.u64("dimension").map_err(named)?);
    }
    let ggml_type = w.u32("ggml type").map_err(named)?;
    let offset = w.u64("tensor offset").map_err(named)?;
    Ok(Declared { name, ne, ggml_type, offset })
}
