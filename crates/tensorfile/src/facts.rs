//! The facts `tensorfile info` shows of a file, shared by the command line and the Python
//! package (`File.info()`).

use std::collections::BTreeMap;

use serde_json::{Map, Value as Json, json};

use crate::formats::Structure;
use crate::model::MetaValue;
use crate::parameters::Parameters;
use crate::units::{size_exact, thousands};
use crate::{DType, Kind, TensorFile};

/// What `info` shows of a file: format, version, sizes, counts, dtypes, metadata and the
/// format's own description.
pub struct FileFacts {
    /// The format's short name (`zt`, `safetensors`...).
    pub format: &'static str,
    /// The format's version as the file states it (`0.1` from `ZTEN0001`).
    pub version: String,
    /// Size of the file in bytes (of every shard, for a set of files).
    pub file_bytes: u64,
    /// Readable entries that are tensors.
    pub tensors: usize,
    /// Readable entries that are blobs (untyped bytes).
    pub blobs: usize,
    /// Entries the file declares that cannot be read.
    pub unreadable: usize,
    /// Decoded bytes of every readable entry.
    pub data_bytes: u64,
    /// Stored (possibly compressed) bytes of every readable entry.
    pub stored_bytes: u64,
    /// Tensors per dtype (its name), or for a quantized tensor per quantization scheme
    /// (`ggml.q4_k`...), as [`Parameters::by_dtype`] names them; in the order of the dtypes,
    /// a dtype's quantized tensors after its plain ones.
    pub dtypes: Vec<(String, usize)>,
    /// File-level metadata written by the file's producer (safetensors `__metadata__`...).
    pub metadata: Vec<(String, MetaValue)>,
    /// Facts about the file's structure, as its format gives them (index or header size...).
    pub details: Vec<(String, MetaValue)>,
    /// The format's own description (an ExecuTorch program's methods...).
    pub structure: Option<Structure>,
    /// Parameters by dtype, and the size at other widths.
    pub parameters: Parameters,
}

impl FileFacts {
    /// The facts of an opened file, from its index and summary: no tensor data is read.
    pub fn of(file: &TensorFile) -> FileFacts {
        let summary = file.summary();
        let entries = file.entries();
        let (tensors, blobs) = file.kind_counts();
        let mut dtypes: BTreeMap<(DType, Option<String>), usize> = BTreeMap::new();
        for e in entries.iter().filter(|e| e.info().kind() == Kind::Tensor) {
            let quantization = e.info().layout().quant().map(|_| e.info().layout().describe());
            *dtypes.entry((e.info().dtype(), quantization)).or_insert(0) += 1;
        }
        let dtypes = dtypes
            .into_iter()
            .map(|((dtype, quantization), n)| (quantization.unwrap_or_else(|| dtype.name().to_string()), n))
            .collect();
        FileFacts {
            format: file.format().name(),
            version: summary.version,
            file_bytes: file.size(),
            tensors,
            blobs,
            unreadable: file.unreadable().len(),
            // Saturating: a sparse tensor's decoded size is not bounded by the file's.
            data_bytes: entries.iter().fold(0u64, |t, e| t.saturating_add(e.nbytes())),
            stored_bytes: entries.iter().fold(0u64, |t, e| t.saturating_add(e.storage().len())),
            dtypes,
            metadata: summary.metadata,
            details: summary.details,
            structure: summary.structure,
            parameters: Parameters::of(file),
        }
    }

    /// What `tensorfile info --json` prints; `path` is the file as the user named it.
    pub fn to_json(&self, path: &str) -> Json {
        let object = |pairs: &[(String, MetaValue)]| -> Map<String, Json> {
            pairs.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()
        };
        let dtypes: Map<String, Json> = self.dtypes.iter().map(|(d, n)| (d.clone(), json!(n))).collect();
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
            "parameters": self.parameters.to_json(),
        })
    }

    /// The facts as `info` prints them, one `(key, value)` line each: file, format, version,
    /// sizes, counts, dtypes, parameters and the size at other widths, then the format's
    /// details. Text from the file is as it is: a terminal's printer escapes it.
    pub fn lines(&self, path: &str) -> Vec<(String, String)> {
        let dtypes: Vec<String> = self.dtypes.iter().map(|(d, n)| format!("{d} x{n}")).collect();
        let mut lines = vec![
            ("file".to_string(), path.to_string()),
            ("format".into(), self.format.into()),
            ("version".into(), if self.version.is_empty() { "-".into() } else { self.version.clone() }),
            ("size".into(), size_exact(self.file_bytes)),
            ("tensors".into(), self.tensors.to_string()),
            ("blobs".into(), self.blobs.to_string()),
            ("unreadable".into(), self.unreadable.to_string()),
            ("data".into(), size_exact(self.data_bytes)),
            ("stored".into(), size_exact(self.stored_bytes)),
            ("dtypes".into(), if dtypes.is_empty() { "-".into() } else { dtypes.join(", ") }),
        ];
        lines.extend(parameter_lines(&self.parameters));
        lines.extend(self.details.iter().map(|(k, v)| (k.clone(), meta_text(v))));
        lines
    }

    /// The file's metadata, one `(key, value)` line each (see [`meta_text`]).
    pub fn metadata_lines(&self) -> Vec<(String, String)> {
        self.metadata.iter().map(|(k, v)| (k.clone(), meta_text(v))).collect()
    }
}

/// `parameters  1,235,814,400 (bfloat16 1,235,814,400)`, then the size at each width of
/// [`crate::parameters::WIDTHS`] (`at float16/bfloat16  2.3 GiB (2471628800 bytes)`).
fn parameter_lines(p: &Parameters) -> Vec<(String, String)> {
    let by: Vec<String> = p.by_dtype.iter().map(|(d, n)| format!("{d} {}", thousands(*n))).collect();
    let by = if by.is_empty() { String::new() } else { format!(" ({})", by.join(", ")) };
    let mut lines = vec![("parameters".to_string(), format!("{}{by}", thousands(p.total)))];
    for (width, bytes) in &p.size_at {
        let width = if *width == "float16" { "float16/bfloat16" } else { width };
        lines.push((format!("at {width}"), size_exact(*bytes)));
    }
    lines
}

/// Arrays longer than this show their length, element type and first elements only.
const LONG_ARRAY: usize = 8;
/// How many elements of a long array are shown.
const SHOWN: usize = 3;

/// A metadata value on one line: text as is, a long typed array summarised
/// (`[151936 × string: "!", "\"", "#", …]`), anything else as JSON.
pub fn meta_text(value: &MetaValue) -> String {
    match value {
        MetaValue::Text(s) => s.clone(),
        MetaValue::TypedArray(a) if a.len() > LONG_ARRAY => {
            let first: Vec<String> = (0..SHOWN).filter_map(|i| a.get(i)).map(|v| item_text(&v)).collect();
            format!("[{} × {}: {}, …]", a.len(), a.element_name(), first.join(", "))
        }
        other => other.to_json().to_string(),
    }
}

/// An element of a long array: as JSON (text quoted), or summarised when it is an array.
fn item_text(value: &MetaValue) -> String {
    match value {
        MetaValue::TypedArray(_) => meta_text(value),
        other => other.to_json().to_string(),
    }
}
