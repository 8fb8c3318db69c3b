//! The entries' local headers, where their data starts, and the spans they take.

use super::central::{bad, central, directory};
use super::entry::ZipEntry;
use super::region::{Fetched, Region};
use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::source::Bytes;

/// Check each entry's local header and set where its data starts (after the header, its name
/// and its extra field). The headers not inside what was already fetched are fetched in one
/// `ranges` call: 30 bytes and the entry's name each, all that is needed (the extra field's
/// length is in the 30 bytes; its content is not read). Entries are checked in order, each
/// against the central directory at `dir_offset` (its data must end before it).
fn locate(r: &Region, have: &Fetched, entries: &mut [ZipEntry], dir_offset: u64) -> Result<()> {
    let len = r.len();
    let mut headers: Vec<Option<Bytes>> = vec![None; entries.len()];
    let mut wanted = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if e.header_offset.checked_add(30).is_none_or(|end| end > len) {
            continue; // Refused below, in its turn.
        }
        let n = (30 + e.name.len() as u64).min(len - e.header_offset);
        match have.get(e.header_offset, n) {
            Some(b) => headers[i] = Some(b),
            None => wanted.push((i, e.header_offset, n)),
        }
    }
    let ranges: Vec<(u64, u64)> = wanted.iter().map(|&(_, offset, n)| (offset, n)).collect();
    for (&(i, ..), b) in wanted.iter().zip(r.ranges(&ranges)?) {
        headers[i] = Some(b);
    }
    for (e, head) in entries.iter_mut().zip(headers) {
        let name = &e.name;
        let head = head.ok_or_else(|| {
            Error::invalid(
                Rule::OutOfBounds,
                format!("zip entry {name:?}: local header at {} past the end", e.header_offset),
            )
        })?;
        let mut c = Cursor::with_base(&head, e.header_offset);
        if c.array::<4>("local header")? != *b"PK\x03\x04" {
            return Err(bad(format!("zip entry {name:?}: no local header at {}", e.header_offset)));
        }
        c.skip(22, "local header")?; // versions, flags, method, time, CRC and sizes
        let name_len = usize::from(c.u16_le("local header")?);
        let extra_len = u64::from(c.u16_le("local header")?);
        if c.rest().get(..name_len) != Some(name.as_bytes()) {
            return Err(bad(format!("zip entry {name:?}: local header names another entry")));
        }
        let data_offset = checked::add(e.header_offset, 30 + name_len as u64 + extra_len, "zip entry")?;
        let data_end = checked::add(data_offset, e.compressed_size, "zip entry")?;
        if data_end > dir_offset {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!(
                    "zip entry {name:?}: data {data_offset}..{data_end} runs into the central directory at {dir_offset}"
                ),
            ));
        }
        e.data_offset = data_offset;
    }
    Ok(())
}

/// The entries of the archive in `r`, checked against it, in the order the checks were always
/// made: each entry's central record, local header and data span in turn, then overlaps.
pub(super) fn checked_entries(r: &Region) -> Result<Vec<ZipEntry>> {
    let (d, have) = directory(r)?;
    let (mut entries, broken) = central(r, &d, &have)?;
    locate(r, &have, &mut entries, d.offset)?;
    if let Some(err) = broken {
        return Err(err);
    }
    check_no_overlap(&entries)?;
    Ok(entries)
}

/// Entries must not share bytes (overlapping entries are how some zip bombs multiply).
fn check_no_overlap(entries: &[ZipEntry]) -> Result<()> {
    let mut spans: Vec<(u64, u64, &str)> =
        entries.iter().map(|e| (e.header_offset, e.data_offset + e.compressed_size, e.name.as_str())).collect();
    spans.sort_unstable();
    for w in spans.windows(2) {
        if w[1].0 < w[0].1 {
            return Err(Error::invalid(Rule::Overlap, format!("zip entries {:?} and {:?} overlap", w[0].2, w[1].2)));
        }
    }
    Ok(())
}
