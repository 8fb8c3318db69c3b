//! `tensorfile info FILE`: what a file is, at a glance.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use serde_json::{Map, Value as Json, json};
use tensorfile::formats::Structure;
use tensorfile::model::MetaValue;
use tensorfile::{DType, Kind, TensorFile};

use super::Outcome;
use crate::render;

/// Show a file's format, version, size, entry counts, dtypes and metadata.
#[derive(clap::Args)]
pub struct Args {
    /// The tensor file.
    file: PathBuf,
    /// The `.ptd` file holding an ExecuTorch program's external tensors.
    #[arg(long, value_name = "FILE.ptd")]
    data: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// The facts `info` shows.
struct Facts {
    format: &'static str,
    version: String,
    file_bytes: u64,
    tensors: usize,
    blobs: usize,
    unreadable: usize,
    /// Decoded bytes of every readable entry.
    data_bytes: u64,
    /// Stored (possibly compressed) bytes of every readable entry.
    stored_bytes: u64,
    /// Tensors per dtype.
    dtypes: BTreeMap<DType, usize>,
    metadata: Vec<(String, MetaValue)>,
    details: Vec<(String, MetaValue)>,
    /// The format's own description (an ExecuTorch program's methods...).
    structure: Option<Structure>,
}

impl Facts {
    fn of(file: &TensorFile) -> Facts {
        let summary = file.summary();
        let entries = file.entries();
        let mut dtypes = BTreeMap::new();
        for e in entries.iter().filter(|e| e.info.kind == Kind::Tensor) {
            *dtypes.entry(e.info.dtype).or_insert(0) += 1;
        }
        Facts {
            format: file.format().name(),
            version: summary.version,
            file_bytes: file.size(),
            tensors: entries.iter().filter(|e| e.info.kind == Kind::Tensor).count(),
            blobs: entries.iter().filter(|e| e.info.kind == Kind::Blob).count(),
            unreadable: file.unreadable().len(),
            data_bytes: entries.iter().map(|e| e.nbytes).sum(),
            stored_bytes: entries.iter().map(|e| e.storage.len).sum(),
            dtypes,
            metadata: summary.metadata,
            details: summary.details,
            structure: summary.structure,
        }
    }

    fn to_json(&self, path: &str) -> Json {
        let object = |pairs: &[(String, MetaValue)]| -> Map<String, Json> {
            pairs.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()
        };
        let dtypes: Map<String, Json> = self.dtypes.iter().map(|(d, n)| (d.name().to_string(), json!(n))).collect();
        json!({
            "file": path,
            "format": self.format,
            "version": (!self.version.is_empty()).then_some(&self.version),
            "file_bytes": self.file_bytes,
            "tensors": self.tensors,
            "blobs": self.blobs,
            "unreadable": self.unreadable,
            "data_bytes": self.data_bytes,
            "stored_bytes": self.stored_bytes,
            "dtypes": dtypes,
            "metadata": object(&self.metadata),
            "details": object(&self.details),
            "structure": self.structure.as_ref().map(|s| &s.json),
        })
    }

    fn write_text(&self, path: &str, out: &mut dyn Write) -> std::io::Result<()> {
        let dtypes: Vec<String> = self.dtypes.iter().map(|(d, n)| format!("{d} x{n}")).collect();
        let mut pairs = vec![
            ("file".to_string(), render::printable(path).into_owned()),
            ("format".into(), self.format.into()),
            ("version".into(), if self.version.is_empty() { "-".into() } else { self.version.clone() }),
            ("size".into(), render::size_exact(self.file_bytes)),
            ("tensors".into(), self.tensors.to_string()),
            ("blobs".into(), self.blobs.to_string()),
            ("unreadable".into(), self.unreadable.to_string()),
            ("data".into(), render::size_exact(self.data_bytes)),
            ("stored".into(), render::size_exact(self.stored_bytes)),
            ("dtypes".into(), if dtypes.is_empty() { "-".into() } else { dtypes.join(", ") }),
        ];
        pairs.extend(self.details.iter().map(|(k, v)| (render::printable(k).into_owned(), meta_text(v))));
        render::key_values(out, "", &pairs)?;
        if !self.metadata.is_empty() {
            writeln!(out, "metadata:")?;
            let pairs: Vec<(String, String)> =
                self.metadata.iter().map(|(k, v)| (render::printable(k).into_owned(), meta_text(v))).collect();
            render::key_values(out, "  ", &pairs)?;
        }
        if let Some(s) = &self.structure {
            out.write_all(s.text.as_bytes())?;
        }
        Ok(())
    }
}

/// A metadata value on one line: text as is, anything else as JSON.
fn meta_text(value: &MetaValue) -> String {
    match value {
        MetaValue::Text(s) => render::printable(s).into_owned(),
        other => other.to_json().to_string(),
    }
}

pub fn run(args: Args, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let file = TensorFile::open_with_data(&args.file, args.data.as_deref())?;
    let facts = Facts::of(&file);
    let path = args.file.display().to_string();
    if args.json {
        render::json(out, &facts.to_json(&path))?;
    } else {
        facts.write_text(&path, out)?;
    }
    Ok(Outcome::Success)
}
