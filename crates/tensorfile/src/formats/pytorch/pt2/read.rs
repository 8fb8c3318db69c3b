//! Opening a `.pt2` archive.

use std::any::Any;

use serde_json::{Value as Json, json};

use super::model::ModelSummary;
use crate::error::{Error, Result, Rule};
use crate::formats::pytorch::View;
use crate::formats::pytorch::pt::{PtReader, PtTensor};
use crate::formats::{Catalog, FileSummary, Format, FormatReader, Structure};
use crate::model::{MetaValue, TensorData};
use crate::source::{Bytes, Source};
use crate::swap;
use crate::zip::{Archive, ZipEntry};

/// Where a tensor's bytes are.
#[derive(Debug, Clone)]
pub enum TensorSource {
    /// A record holding a whole storage; the tensor is a view of it.
    Record {
        /// The archive's record holding the whole storage.
        record: ZipEntry,
        /// The tensor's view of the storage.
        view: View,
    },
    /// Tensor `index` of the `torch.save` file in record `nested` (see `Pt2Reader::nested`),
    /// or, with `view`, that view of the tensor's storage (AOTInductor's on-disk weights).
    Pickled {
        /// Which nested `torch.save` file (an index into `Pt2Reader::nested`).
        nested: usize,
        /// Which tensor of that file (an index into its entries).
        index: usize,
        /// The view of the tensor's storage to read instead of the tensor itself.
        view: Option<View>,
    },
}

/// One tensor of an archive.
#[derive(Debug, Clone)]
pub struct Pt2Tensor {
    /// The archive's model it belongs to (`models/<model>.json`).
    pub model: String,
    /// Its fully qualified name in the model; the entry's name, after `<model>/` in archives of
    /// several models.
    pub fqn: String,
    /// "parameter", "buffer" or "constant".
    pub kind: &'static str,
    /// Where its bytes are.
    pub source: TensorSource,
}

/// A model of the archive.
pub(super) struct Model {
    pub(super) name: String,
    pub(super) summary: Result<ModelSummary, String>,
    pub(super) sample_inputs: Vec<Json>,
    pub(super) artifacts: Vec<Json>,
    /// What AOTInductor compiled the model for (its `*_metadata.json`), if it did.
    pub(super) aoti: Option<Json>,
}

/// An opened `.pt2` archive.
pub struct Pt2Reader {
    pub(super) archive: Archive,
    pub(super) big_endian: bool,
    pub(super) layout: &'static str,
    /// `torch.save` files inside the archive: (record name, reader).
    pub(super) nested: Vec<(String, PtReader)>,
    pub(super) models: Vec<Model>,
    pub(super) catalog: Catalog,
    pub(super) tensors: Vec<Pt2Tensor>,
}

impl Pt2Reader {
    /// Open a `.pt2` archive, read by range: its directory and its small records (model
    /// definitions, configs, `byteorder`, the pickles of nested `torch.save` files) now, a
    /// tensor's storage when the tensor is read.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let archive = Archive::open(src)?;
        // Every record but the tensors' storages and AOTInductor's binaries: its CRC.
        crate::formats::pytorch::check_small_records(&archive, &["data/weights/", "data/constants/", "data/aotinductor/"])?;
        let big_endian = match archive.read_text("byteorder")?.as_deref().map(str::trim) {
            None | Some("little") => false,
            Some("big") => true,
            Some(other) => return Err(Error::invalid(Rule::UnknownByteOrder, format!("byteorder {other:?}"))),
        };
        let mut names: Vec<String> = archive
            .records_under("models/")
            .iter()
            .filter_map(|r| r.strip_prefix("models/")?.strip_suffix(".json").map(str::to_string))
            .collect();
        let legacy = names.is_empty() && archive.record("serialized_exported_program.json").is_some();
        if legacy {
            names.push("model".into());
        }
        if names.is_empty() {
            // AOTInductor packages without model definitions: one model per artifact folder.
            for r in archive.records_under("data/aotinductor/") {
                if let Some((m, _)) = r.trim_start_matches("data/aotinductor/").split_once('/') {
                    if !names.iter().any(|n| n == m) {
                        names.push(m.to_string());
                    }
                }
            }
        }
        if names.is_empty() {
            return Err(Error::invalid(
                Rule::MissingField,
                "no models in the archive (no models/, data/aotinductor/ or serialized_exported_program.json)",
            ));
        }
        let has_aoti = !archive.records_under("data/aotinductor/").is_empty();
        let layout = if legacy {
            "torch 2.3-2.7"
        } else if archive.record(&format!("data/weights/{}.pt", names[0])).is_some() {
            "torch 2.8"
        } else if has_aoti {
            "aotinductor"
        } else {
            "torch >= 2.9"
        };
        let mut r = Pt2Reader {
            archive,
            big_endian,
            layout,
            nested: Vec::new(),
            models: Vec::new(),
            catalog: Catalog::default(),
            tensors: Vec::new(),
        };
        let prefixed = names.len() > 1;
        for name in names {
            r.add_model(&name, legacy, prefixed)?;
        }
        Ok(r)
    }

    /// The `.pt2` zip archive, for its records.
    pub fn archive(&self) -> &Archive {
        &self.archive
    }

    /// Whether the archive's storages are big-endian (its `byteorder` record).
    pub fn summary_big_endian(&self) -> bool {
        self.big_endian
    }

    /// The tensor behind each entry (same order as `entries`).
    pub fn tensors(&self) -> &[Pt2Tensor] {
        &self.tensors
    }

    /// The `torch.save` files inside the archive, by record name.
    pub fn nested(&self) -> &[(String, PtReader)] {
        &self.nested
    }

    fn structure(&self) -> Structure {
        let models: Vec<Json> = self
            .models
            .iter()
            .map(|m| {
                let mut j = match (&m.summary, &m.aoti) {
                    (Ok(s), _) => s.json.clone(),
                    // A compiled package need not carry the exported program.
                    (Err(_), Some(_)) => json!({ "name": m.name }),
                    (Err(e), None) => json!({ "name": m.name, "error": e }),
                };
                if let Some(a) = &m.aoti {
                    j["aotinductor"] = a.clone();
                }
                j["sample_inputs"] = json!(m.sample_inputs);
                if !m.artifacts.is_empty() {
                    j["artifacts"] = json!(m.artifacts);
                }
                j
            })
            .collect();
        let json = json!({ "layout": self.layout, "models": models });
        Structure { text: super::summary::render(&json), json }
    }
}

impl FormatReader for Pt2Reader {
    fn format(&self) -> Format {
        Format::Pt2
    }

    fn summary(&self) -> FileSummary {
        let text = |r: &str| self.archive.read_text(r).ok().flatten().map(|t| t.trim().to_string()).unwrap_or_default();
        FileSummary {
            version: text("archive_version"),
            metadata: Vec::new(),
            details: vec![
                ("root".into(), MetaValue::Text(self.archive.root().unwrap_or("").to_string())),
                ("records".into(), MetaValue::Int(self.archive.entries().len() as i128)),
                ("models".into(), MetaValue::Int(self.models.len() as i128)),
            ],
            structure: Some(self.structure()),
        }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The CRC-32 of every record of the archive, and of every record of the `torch.save`
    /// files inside it.
    fn verify_checksums(&self) -> (Vec<Error>, usize) {
        let (mut problems, mut checked) = crate::zip::verify_records(&self.archive);
        for (_, nested) in &self.nested {
            let (p, c) = nested.verify_checksums();
            problems.extend(p);
            checked += c;
        }
        (problems, checked)
    }

    fn read(&self, index: usize, verify: bool) -> Result<TensorData> {
        let t = self.tensors.get(index).ok_or_else(|| Error::usage(format!("entry index {index} out of range")))?;
        match &t.source {
            TensorSource::Pickled { nested, index, view: None } => self.nested[*nested].1.read(*index, verify),
            TensorSource::Pickled { nested, index, view: Some(view) } => {
                let reader = &self.nested[*nested].1;
                let t = PtTensor { view: view.clone(), ..reader.tensors()[*index].clone() };
                Ok(TensorData::dense(reader.tensor_bytes(&t, verify)?))
            }
            TensorSource::Record { record, view } => {
                let storage = self.archive.read(record, verify)?;
                let bytes = view.bytes_of(&storage)?;
                let unit = view.dtype.swap_unit();
                Ok(TensorData::dense(if self.big_endian && unit > 1 {
                    Bytes::from_vec(swap::swapped(&bytes, unit))
                } else {
                    bytes
                }))
            }
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
