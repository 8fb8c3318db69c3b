//! Opening a `.pt2` archive.

use std::any::Any;

use serde_json::{Value as Json, json};

use super::config::{self, Payload};
use super::model::{self, ModelSummary};
use crate::error::{Error, Result, Rule};
use crate::formats::pytorch::View;
use crate::formats::pytorch::pt::{PtReader, PtTensor};
use crate::formats::{Catalog, FileSummary, Format, FormatReader, Structure};
use crate::model::{ByteOrder, Encoding, Entry, MetaValue, Storage, TensorData, TensorInfo};
use crate::source::{Bytes, Source};
use crate::swap;
use crate::zip::{Archive, ZipEntry};

/// Where a tensor's bytes are.
#[derive(Debug, Clone)]
pub enum TensorSource {
    /// A record holding a whole storage; the tensor is a view of it.
    Record { record: ZipEntry, view: View },
    /// Tensor `index` of the `torch.save` file in record `nested` (see `Pt2Reader::nested`),
    /// or, with `view`, that view of the tensor's storage (AOTInductor's on-disk weights).
    Pickled { nested: usize, index: usize, view: Option<View> },
}

/// One tensor of an archive.
#[derive(Debug, Clone)]
pub struct Pt2Tensor {
    pub model: String,
    pub fqn: String,
    /// "parameter", "buffer" or "constant".
    pub kind: &'static str,
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

fn storage(offset: u64, len: u64, method: u16, big_endian: bool) -> Storage {
    Storage {
        offset,
        len,
        encoding: if method == 0 { Encoding::Raw } else { Encoding::Deflate },
        byte_order: if big_endian { ByteOrder::Big } else { ByteOrder::Little },
        checksum: None,
    }
}

impl Pt2Reader {
    /// Open a `.pt2` archive, read by range: its directory and its small records (model
    /// definitions, configs, `byteorder`, the pickles of nested `torch.save` files) now, a
    /// tensor's storage when the tensor is read.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let archive = Archive::open(src)?;
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

    fn add_model(&mut self, name: &str, legacy: bool, prefixed: bool) -> Result<()> {
        let definition =
            if legacy { "serialized_exported_program.json".to_string() } else { format!("models/{name}.json") };
        let summary = match self.archive.read_text(&definition)? {
            Some(text) => model::summarize(name, &text).map_err(|e| e.message()),
            None => Err(format!("no {definition}")),
        };
        let kinds = summary.as_ref().map(|s| s.kinds.clone()).unwrap_or_default();
        let prefix = if prefixed { format!("{name}/") } else { String::new() };
        for (folder, default_kind, config_names, legacy_file) in [
            ("data/weights/", "parameter", ["weights_config", "model_param_config"], "serialized_state_dict.pt"),
            ("data/constants/", "constant", ["constants_config", "model_constants_config"], "serialized_constants.pt"),
        ] {
            let config = config_names
                .iter()
                .map(|c| format!("{folder}{name}_{c}.json"))
                .find(|c| self.archive.record(c).is_some());
            let pickled = if legacy { legacy_file.to_string() } else { format!("{folder}{name}.pt") };
            if let Some(config) = config {
                let text = self.archive.read_text(&config)?.unwrap_or_default();
                for payload in config::parse(&text)? {
                    match payload {
                        Ok(p) => self.add_payload(name, &prefix, folder, default_kind, &kinds, p),
                        Err((fqn, error)) => self.unreadable(format!("{prefix}{fqn}"), error),
                    }
                }
            } else if self.archive.record(&pickled).is_some() {
                let nested = self.open_nested(&pickled)?;
                let reader = &self.nested[nested].1;
                let found: Vec<(String, Entry)> =
                    reader.entries().iter().map(|e| (e.info.name.clone(), e.clone())).collect();
                for (index, (fqn, e)) in found.into_iter().enumerate() {
                    let kind = kinds.get(&fqn).copied().unwrap_or(default_kind);
                    let t = Pt2Tensor {
                        model: name.into(),
                        fqn: fqn.clone(),
                        kind,
                        source: TensorSource::Pickled { nested, index, view: None },
                    };
                    self.push(&prefix, t, e);
                }
            }
        }
        let aoti_config = format!("data/aotinductor/{name}/weights_config.json");
        if let Some(text) = self.archive.read_text(&aoti_config)? {
            self.add_aoti_weights(name, &prefix, &text)?;
        }
        let sample_inputs = self.sample_inputs(name);
        let aoti = self.aoti_metadata(name);
        let artifacts = self
            .archive
            .records_under(&format!("data/aotinductor/{name}/"))
            .into_iter()
            .map(|r| {
                let size = self.archive.record(&r).map_or(0, |e| e.size);
                json!({ "name": r, "bytes": size })
            })
            .collect();
        self.models.push(Model { name: name.into(), summary, sample_inputs, artifacts, aoti });
        Ok(())
    }

    pub(super) fn unreadable(&mut self, name: String, error: Error) {
        self.catalog.push_unreadable(name, String::new(), Vec::new(), error);
    }

    pub(super) fn push(&mut self, prefix: &str, t: Pt2Tensor, mut e: Entry) {
        e.info.name = format!("{prefix}{}", t.fqn);
        e.info.extra =
            vec![("source".into(), MetaValue::from(t.kind)), ("model".into(), MetaValue::from(t.model.as_str()))];
        self.catalog.push(e);
        self.tensors.push(t);
    }

    pub(super) fn open_nested(&mut self, record: &str) -> Result<usize> {
        if let Some(i) = self.nested.iter().position(|(r, _)| r == record) {
            return Ok(i);
        }
        let e = self
            .archive
            .record(record)
            .ok_or_else(|| Error::invalid(Rule::MissingField, format!("no record {record}")))?;
        // A `torch.save` file inside the archive (torch 2.8's `data/weights/<m>.pt`, sample
        // inputs, AOTInductor's on-disk weights) is an archive of its own: stored (as PyTorch
        // writes it), it is opened in place and read by range like the outer one (only its
        // directory and `data.pkl` now, its storages when a tensor is read); deflated (an
        // archive rewritten by Python's `zipfile`), it is inflated whole now.
        let region = self.archive.entry_region(e)?;
        let reader = PtReader::open_region(region).map_err(|err| {
            Error::invalid(err.rule().unwrap_or(Rule::BadField), format!("{record}: {}", err.detail()))
        })?;
        self.nested.push((record.to_string(), reader));
        Ok(self.nested.len() - 1)
    }

    fn add_payload(
        &mut self,
        model: &str,
        prefix: &str,
        folder: &str,
        default_kind: &'static str,
        kinds: &std::collections::HashMap<String, &'static str>,
        p: Payload,
    ) {
        let kind = kinds.get(&p.fqn).copied().unwrap_or(if p.is_param { "parameter" } else { default_kind });
        let record_name = format!("{folder}{}", p.path_name);
        let result =
            (|| -> Result<(Pt2Tensor, Entry)> {
                if p.use_pickle {
                    let nested = self.open_nested(&record_name)?;
                    let e =
                        self.nested[nested].1.entries().first().cloned().ok_or_else(|| {
                            Error::invalid(Rule::MissingField, format!("{record_name} holds no tensor"))
                        })?;
                    let t = Pt2Tensor {
                        model: model.into(),
                        fqn: p.fqn.clone(),
                        kind,
                        source: TensorSource::Pickled { nested, index: 0, view: None },
                    };
                    return Ok((t, e));
                }
                let view = p.view.clone().ok_or_else(|| Error::invalid(Rule::MissingField, "no tensor_meta"))?;
                let record = self
                    .archive
                    .record(&record_name)
                    .cloned()
                    .ok_or_else(|| Error::invalid(Rule::MissingField, format!("no record {record_name}")))?;
                let elem = view.dtype.size().ok_or_else(|| Error::unsupported(format!("dtype {}", view.dtype)))?;
                if record.size % elem != 0 {
                    return Err(Error::invalid(
                        Rule::SizeMismatch,
                        format!("{record_name}: {} bytes is not a whole number of {}", record.size, view.dtype),
                    ));
                }
                let (start, _) = view.check_within(record.size)?;
                let info = TensorInfo {
                    layout: view.layout(),
                    ..TensorInfo::dense(p.fqn.clone(), view.dtype, view.shape.clone())
                };
                let nbytes = info.nbytes()?;
                let e = Entry {
                    info,
                    nbytes,
                    storage: storage(record.data_offset + start, nbytes, record.method, self.big_endian),
                };
                Ok((
                    Pt2Tensor {
                        model: model.into(),
                        fqn: p.fqn.clone(),
                        kind,
                        source: TensorSource::Record { record, view },
                    },
                    e,
                ))
            })();
        match result {
            Ok((t, e)) => self.push(prefix, t, e),
            Err(error) => {
                // What the config says the tensor is, even when its bytes cannot be had.
                let (dtype, shape) = p.view.map(|v| (v.dtype.name().to_string(), v.shape)).unwrap_or_default();
                let error = if p.use_pickle && error.rule() == Some(Rule::ForbiddenGlobal) {
                    Error::invalid(
                        Rule::ForbiddenGlobal,
                        format!(
                            "{} (a tensor subclass: only torch can rebuild it, by running its code)",
                            error.detail()
                        ),
                    )
                } else {
                    error
                };
                self.catalog.push_unreadable(format!("{prefix}{}", p.fqn), dtype, shape, error);
            }
        }
    }

    fn sample_inputs(&mut self, name: &str) -> Vec<Json> {
        let record = format!("data/sample_inputs/{name}.pt");
        if self.archive.record(&record).is_none() {
            return Vec::new();
        }
        match self.open_nested(&record) {
            Ok(i) => self.nested[i]
                .1
                .entries()
                .iter()
                .map(|e| json!({ "name": e.info.name, "dtype": e.info.dtype.name(), "shape": e.info.shape }))
                .collect(),
            Err(e) => vec![json!({ "error": e.message() })],
        }
    }

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

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::formats::pytorch::pt::StorageSource;
    use crate::source::SPECULATIVE_READ;

    fn fixtures() -> Vec<PathBuf> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pytorch");
        let mut files = Vec::new();
        for dir in ["", "torch28", "zip", "hostile"] {
            for f in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = f.unwrap().path();
                if matches!(p.extension().and_then(|e| e.to_str()), Some("pt" | "pt2")) {
                    files.push(p);
                }
            }
        }
        files.sort();
        assert!(files.len() >= 20, "{files:?}");
        files
    }

    /// Which storage tensor `i` of `r` reads, and how many bytes reading it fetches from a
    /// counted source: its storage record's compressed bytes, or nothing when its file was
    /// read whole at open (a legacy `torch.save` file, a deflated nested one).
    fn pt_storage(r: &PtReader, i: usize, key: &str) -> (String, u64) {
        match &r.tensors()[i].storage {
            StorageSource::Record(e) if r.archive().is_some_and(|a| a.region().source().is_remote()) => {
                (format!("{key}/{}", e.name), e.compressed_size)
            }
            _ => (String::new(), 0),
        }
    }

    fn storage_of(r: &dyn FormatReader, i: usize) -> (String, u64) {
        if let Some(pt2) = r.as_any().downcast_ref::<Pt2Reader>() {
            match &pt2.tensors()[i].source {
                TensorSource::Record { record, .. } => (record.name.clone(), record.compressed_size),
                TensorSource::Pickled { nested, index, .. } => {
                    let (name, reader) = &pt2.nested()[*nested];
                    pt_storage(reader, *index, name)
                }
            }
        } else {
            let pt = r.as_any().downcast_ref::<PtReader>().unwrap();
            pt_storage(pt, i, "")
        }
    }

    /// Nested `torch.save` files read in place (each costs a tail read of its own).
    fn in_place(r: &dyn FormatReader) -> u64 {
        r.as_any().downcast_ref::<Pt2Reader>().map_or(0, |p| {
            p.nested().iter().filter(|(_, n)| n.archive().is_some_and(|a| a.region().source().is_remote())).count()
                as u64
        })
    }

    #[test]
    fn fixtures_read_by_range_fetch_their_index_at_open_and_a_storage_per_tensor() {
        for path in fixtures() {
            let bytes = Bytes::read_file(&path).unwrap();
            let len = bytes.len() as u64;
            let Ok(format) = Format::detect(&bytes) else { continue };
            let what = path.display();
            let local = format.open(bytes.clone());
            let src = Source::counted_exact(bytes.clone());
            let counted = format.open(src.clone());
            let (local, counted) = match (local, counted) {
                (Ok(l), Ok(c)) => (l, c),
                (Err(l), Err(c)) => {
                    assert_eq!(l.rule(), c.rule(), "{what}");
                    continue;
                }
                (l, c) => panic!("{what}: local {:?}, counted {:?}", l.err(), c.err()),
            };
            let opened = src.bytes_fetched();
            assert_eq!(format!("{:?}", local.entries()), format!("{:?}", counted.entries()), "{what}");
            assert_eq!(format!("{:?}", local.unreadable()), format!("{:?}", counted.unreadable()), "{what}");

            let mut storages = HashSet::new();
            let mut storage_total = 0;
            for i in 0..local.entries().len() {
                let (key, want) = storage_of(counted.as_ref(), i);
                if want > 0 && storages.insert(key) {
                    storage_total += want;
                }
                let before = src.bytes_fetched();
                let got = counted.read(i, true).unwrap();
                assert_eq!(src.bytes_fetched() - before, want, "{what}: tensor {i}");
                let expected = local.read(i, true).unwrap();
                assert_eq!(got.as_dense().unwrap(), expected.as_dense().unwrap(), "{what}: tensor {i}");
            }
            // Opening fetched the end of the archive (of each archive read in place), and
            // what is not a storage (directory, local headers, records) at most once more.
            let bound = (1 + in_place(counted.as_ref())) * (SPECULATIVE_READ + 14) + (len - storage_total);
            assert!(opened <= bound, "{what}: {opened} fetched at open, bound {bound}");
            if len > 1 << 20 {
                // mobilenet_v2.pt2: its model definition (466 KiB of JSON) and weights config
                // are most of what is fetched; aoti_cpu.pt2: its shared library is not.
                assert!(opened * 2 < len, "{what}: {opened} of {len} fetched at open");
            }
            eprintln!("{what}: {len} bytes, {opened} at open, storages {storage_total}");
            assert_eq!(format!("{:?}", local.summary()), format!("{:?}", counted.summary()), "{what}");
        }
    }

    /// A `torch.save` file of one large tensor and a few small ones, as PtWriter writes it.
    fn big_pt() -> Vec<u8> {
        use crate::formats::{WriteOptions, write_to_vec};
        use crate::model::DType;
        let big: Vec<u8> = (0..4 << 20).map(|i: u32| (i % 253) as u8).collect();
        let tensors = vec![
            (TensorInfo::dense("small", DType::Float32, vec![4]), TensorData::dense(Bytes::from_vec(vec![1; 16]))),
            (TensorInfo::dense("big", DType::Float32, vec![1 << 20]), TensorData::dense(Bytes::from_vec(big))),
            (TensorInfo::dense("last", DType::Int64, vec![2]), TensorData::dense(Bytes::from_vec(vec![2; 16]))),
        ];
        write_to_vec(Format::Pt, &tensors, &WriteOptions::default()).unwrap()
    }

    /// Open `bytes` as `format` from a counted source: what opening fetched, and check that
    /// reading each tensor fetches exactly its storage and gives what a local read gives.
    fn open_and_read_all(bytes: &[u8], format: Format) -> u64 {
        let bytes = Bytes::from_vec(bytes.to_vec());
        let src = Source::counted_exact(bytes.clone());
        let counted = format.open(src.clone()).unwrap();
        let opened = src.bytes_fetched();
        let local = format.open(bytes).unwrap();
        assert_eq!(counted.entries().len(), 3);
        for i in 0..3 {
            let before = src.bytes_fetched();
            let got = counted.read(i, true).unwrap();
            assert_eq!(src.bytes_fetched() - before, storage_of(counted.as_ref(), i).1);
            assert_eq!(got.as_dense().unwrap(), local.read(i, true).unwrap().as_dense().unwrap());
        }
        let big = counted.entries().iter().position(|e| e.info.name.ends_with("big")).unwrap();
        let before = src.bytes_fetched();
        counted.read(big, false).unwrap();
        assert_eq!(src.bytes_fetched() - before, 4 << 20);
        opened
    }

    #[test]
    fn a_large_torch_save_file_opens_without_its_storages() {
        let pt = big_pt();
        let opened = open_and_read_all(&pt, Format::Pt);
        eprintln!("torch.save file of {} bytes: {opened} fetched at open", pt.len());
        assert!(opened < SPECULATIVE_READ + 2048, "{opened} of {}", pt.len());
    }

    #[test]
    fn a_torch_save_file_inside_an_archive_is_read_in_place() {
        // The torch 2.8 layout: the weights are a `torch.save` file stored in the archive.
        let mut w = crate::zip::ZipWriter::new(Vec::new(), "archive");
        w.add("archive_format", b"pt2").unwrap();
        w.add("models/model.json", b"{}").unwrap();
        w.add("data/weights/model.pt", &big_pt()).unwrap();
        w.add("byteorder", b"little").unwrap();
        let pt2 = w.finish().unwrap();
        let opened = open_and_read_all(&pt2, Format::Pt2);
        // Two tail reads (the archive's, the nested file's), headers and small records.
        eprintln!("torch 2.8 archive of {} bytes: {opened} fetched at open", pt2.len());
        assert!(opened < 2 * SPECULATIVE_READ + 4096, "{opened} of {}", pt2.len());
    }
}
