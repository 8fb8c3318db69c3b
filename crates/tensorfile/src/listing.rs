//! The rows `tensorfile ls` shows of a file, one per entry, shared by the command line
//! (`ls --json`, and the facts its table shows) and the Python package (`File.entries()`).

use std::path::Path;

use serde_json::{Map, Value as Json, json};

use crate::TensorFile;
use crate::model::{Entry, Unreadable};

/// One entry of a file as `ls` lists it.
#[derive(Debug, Clone, Copy)]
pub enum EntryRow<'f> {
    /// A readable entry; `shard` is the file holding it, for a sharded checkpoint.
    Readable {
        /// The entry as the file's index describes it.
        entry: &'f Entry,
        /// `None` for a single file; for a set of files, the shard holding the entry (`None`
        /// inside when no shard is known for it).
        shard: Option<Option<&'f Path>>,
    },
    /// An entry the file declares but that cannot be read, with why.
    Unreadable(&'f Unreadable),
}

/// Every entry of `file`: the readable ones in file order, then the unreadable ones.
pub fn rows(file: &TensorFile) -> Vec<EntryRow<'_>> {
    let is_set = file.is_set();
    let readable = file
        .entries()
        .iter()
        .enumerate()
        .map(|(i, entry)| EntryRow::Readable { entry, shard: is_set.then(|| file.shard_of(i)) });
    readable.chain(file.unreadable().iter().map(EntryRow::Unreadable)).collect()
}

/// Every entry of `file` as `ls --json` prints it (see [`EntryRow::to_json`]).
pub fn entry_rows(file: &TensorFile) -> Vec<Json> {
    rows(file).iter().map(EntryRow::to_json).collect()
}

impl EntryRow<'_> {
    /// The row as JSON. A readable entry: `source` (where an ExecuTorch or PyTorch program's
    /// tensor comes from, else null), `name`, `kind`, `dtype`, `shape`, `nbytes`, `layout`,
    /// `encoding`, `offset`, `stored_bytes`, `byte_order`, `checksum`, `extra` (its other
    /// fields) and, in a set, `shard`. An unreadable one: `name`, `kind` ("unreadable"),
    /// `dtype` and `shape` as the file gives them, `error`, `rule` and `hint` (ids, or null).
    pub fn to_json(&self) -> Json {
        match *self {
            EntryRow::Readable { entry: e, shard } => {
                let extra: Map<String, Json> = e.info().extra().iter().map(|(k, v)| (k.clone(), v.to_json())).collect();
                let source = extra.get("source").cloned();
                let mut row = json!({
                    "source": source,
                    "name": e.info().name(),
                    "kind": e.info().kind().name(),
                    "dtype": e.info().dtype().name(),
                    "shape": e.info().shape(),
                    "nbytes": e.nbytes(),
                    "layout": e.info().layout().describe(),
                    "encoding": e.storage().encoding().name(),
                    "offset": e.storage().offset(),
                    "stored_bytes": e.storage().len(),
                    "byte_order": e.storage().byte_order().name(),
                    "checksum": e.storage().checksum().map(|c| c.to_string()),
                    "extra": extra,
                });
                if let Some(shard) = shard {
                    row["shard"] = json!(shard.map(|p| p.display().to_string()));
                }
                row
            }
            EntryRow::Unreadable(u) => json!({
                "name": u.name(),
                "kind": "unreadable",
                "dtype": u.dtype(),
                "shape": u.shape(),
                "error": u.error().message(),
                "rule": u.error().rule().map(|r| r.id()),
                "hint": u.error().hint().map(|h| h.id()),
            }),
        }
    }
}

/// Every format the library knows, as `tensorfile formats --json` lists it (and Python's
/// `tensorfile.formats()`): `name`, `title`, `extensions` (without the dot; the first is the
/// usual one), `write` and `update` (whether files can be written, and have tensors
/// replaced), and `caps` (what its files can hold, [`crate::formats::Caps::to_json`]).
pub fn format_rows() -> Vec<Json> {
    crate::Format::ALL
        .iter()
        .map(|f| {
            let unit = f.unit();
            json!({
                "name": unit.name(),
                "title": unit.title(),
                "extensions": unit.extensions(),
                "write": unit.can_write(),
                "update": unit.can_update(),
                "edit_metadata": unit.can_edit_metadata(),
                "caps": unit.caps().to_json(),
            })
        })
        .collect()
}
