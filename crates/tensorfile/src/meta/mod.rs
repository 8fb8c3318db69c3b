//! Editing a file's metadata (`meta`): keys set and deleted, every tensor's bytes copied as
//! they are. The format's unit writes the new file (its `meta_editor`, given the reader and
//! the metadata as it is to be); this writes it atomically, opens it again and verifies it.

mod value;

use std::io::Write;
use std::path::Path;

pub use value::{Assignment, Given, MetaType};

use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::formats::MetaEdits;
use crate::model::MetaValue;
use crate::output::AtomicFile;

/// The edits `meta` makes: keys set (in order; a new key is added after the file's own),
/// keys deleted.
#[derive(Debug, Clone, Default)]
pub struct MetaEdit {
    /// The keys set and their values.
    pub set: Vec<Assignment>,
    /// The keys deleted (each must be in the file).
    pub delete: Vec<String>,
}

impl MetaEdit {
    /// Add `KEY=VALUE` or `KEY:TYPE=VALUE` (see [`Assignment::parse`]).
    pub fn set(mut self, arg: &str) -> Result<Self> {
        self.set.push(Assignment::parse(arg)?);
        Ok(self)
    }

    /// Delete `key`.
    pub fn delete(mut self, key: impl Into<String>) -> Self {
        self.delete.push(key.into());
        self
    }
}

/// One key changed: its value before (none for a new key) and after (none when deleted).
#[derive(Debug, Clone, PartialEq)]
pub struct MetaChange {
    /// The key.
    pub key: String,
    /// The value the file held.
    pub old: Option<MetaValue>,
    /// The value written.
    pub new: Option<MetaValue>,
}

/// What [`edit_metadata`] changed, in the order the edits were given (sets, then deletes).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MetaReport {
    /// Each key set or deleted.
    pub changes: Vec<MetaChange>,
}

impl MetaReport {
    /// The report as JSON (`meta --json`, Python): the output and, per key, its old and new
    /// values and their types.
    pub fn to_json(&self, output: &Path) -> serde_json::Value {
        let value = |v: &Option<MetaValue>| match v {
            Some(v) => serde_json::json!({
                "type": MetaType::of(v).map(|t| t.name()),
                "value": v.to_json(),
            }),
            None => serde_json::Value::Null,
        };
        serde_json::json!({
            "output": output.display().to_string(),
            "changes": self.changes.iter().map(|c| serde_json::json!({
                "key": c.key,
                "action": if c.new.is_some() { "set" } else { "delete" },
                "old": value(&c.old),
                "new": value(&c.new),
            })).collect::<Vec<_>>(),
        })
    }
}

/// Write `dest`: `file` with the metadata edited, everything else as it was (tensor data
/// byte for byte). The output is atomic; `dest` may be the file itself (it is then replaced
/// once the new one is complete). The result is opened again and verified.
pub fn edit_metadata(file: &TensorFile, dest: &Path, edit: &MetaEdit) -> Result<MetaReport> {
    let format = file.format();
    let Some(editor) = format.unit().meta_editor else {
        let editable: Vec<_> =
            crate::Format::ALL.iter().filter(|f| f.unit().meta_editor.is_some()).map(|f| f.name()).collect();
        return Err(Error::usage(format!(
            "meta edits the metadata of {} files, not {format} ones",
            editable.join(", ")
        )));
    };
    let typed = format.unit().caps().typed_metadata();
    let (metadata, changes) = edited(&file.summary().metadata, edit, typed)?;
    let in_dest = |e: Error| if e.path().is_none() { e.in_file(dest) } else { e };
    let mut out = AtomicFile::create(dest)?;
    {
        let mut w = out.writer();
        editor(&MetaEdits { file: file.reader(), metadata: &metadata }, &mut w).map_err(in_dest)?;
        w.flush().map_err(|e| Error::from(e).in_file(dest))?;
    }
    out.commit()?;
    crate::update::reopen_and_verify(file, dest)?;
    Ok(MetaReport { changes })
}

/// Key/values in order.
type Pairs = Vec<(String, MetaValue)>;

/// The metadata with the edits made, and what changed.
fn edited(old: &[(String, MetaValue)], edit: &MetaEdit, typed: bool) -> Result<(Pairs, Vec<MetaChange>)> {
    let mut seen: Vec<&str> =
        edit.set.iter().map(|a| a.key.as_str()).chain(edit.delete.iter().map(String::as_str)).collect();
    seen.sort_unstable();
    if let Some(pair) = seen.windows(2).find(|p| p[0] == p[1]) {
        return Err(Error::usage(format!("the key {:?} is edited twice", pair[0])));
    }
    let mut metadata = old.to_vec();
    let mut changes = Vec::new();
    for a in &edit.set {
        let at = metadata.iter().position(|(k, _)| *k == a.key);
        let value = a.resolve(&a.text()?, at.map(|i| &metadata[i].1), typed)?;
        let previous = match at {
            Some(i) => Some(std::mem::replace(&mut metadata[i].1, value.clone())),
            None => {
                metadata.push((a.key.clone(), value.clone()));
                None
            }
        };
        changes.push(MetaChange { key: a.key.clone(), old: previous, new: Some(value) });
    }
    for key in &edit.delete {
        let at = metadata
            .iter()
            .position(|(k, _)| k == key)
            .ok_or_else(|| Error::usage(format!("--delete {key}: the file has no such key")))?;
        let (_, value) = metadata.remove(at);
        changes.push(MetaChange { key: key.clone(), old: Some(value), new: None });
    }
    Ok((metadata, changes))
}
