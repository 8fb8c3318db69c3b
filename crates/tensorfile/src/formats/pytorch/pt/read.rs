//! Opening a `torch.save` file.

use std::any::Any;

use super::flatten::{Flattened, flatten};
use super::script::{self, ScriptFacts};
use crate::checked;
use crate::cursor::Cursor;
use crate::error::{Error, Result, Rule};
use crate::formats::pytorch::View;
use crate::formats::{Catalog, FileSummary, Format, FormatReader};
use crate::model::DType;
use crate::model::{ByteOrder, Encoding, Entry, Kind, MetaValue, Storage, TensorData, TensorInfo};
use crate::pickle::{self, TensorRef};
use crate::source::{Bytes, Source};
use crate::swap;
use crate::zip::{Archive, Region, ZipEntry};
use std::collections::HashMap;

/// The start of a pickle written by `torch.save` before PyTorch 1.6 (not a zip): protocol 2
/// and the magic number 0x1950a86a20f9469cfc6c.
pub(super) const LEGACY_MAGIC: &[u8] = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";

/// Where a storage's bytes are.
#[derive(Debug, Clone)]
pub enum StorageSource {
    /// A record `data/<key>` of the zip.
    Record(ZipEntry),
    /// A byte range of a file in the format before PyTorch 1.6.
    Raw {
        /// Absolute offset of the storage's first byte.
        offset: u64,
        /// Bytes of the storage.
        len: u64,
    },
}

/// One tensor of the file: its view and where its storage is.
#[derive(Debug, Clone)]
pub struct PtTensor {
    /// The tensor as the pickle rebuilds it: its storage, dtype, shape and strides.
    #[allow(dead_code, reason = "kept whole for Debug and the tests; `view` is what reading uses")]
    pub tensor: TensorRef,
    /// Its view of the storage, checked to lie within it.
    pub view: View,
    /// Where the storage's bytes are.
    pub storage: StorageSource,
}

/// An opened `torch.save` file.
pub struct PtReader {
    /// The zip (`None` for the format before PyTorch 1.6).
    archive: Option<Archive>,
    /// The whole file, for the format before PyTorch 1.6 (`None` for a zip).
    legacy: Option<Bytes>,
    /// Storages of the format before PyTorch 1.6: key → byte range.
    raw_storages: HashMap<String, (u64, u64)>,
    big_endian: bool,
    catalog: Catalog,
    tensors: Vec<PtTensor>,
    metadata: Vec<(String, MetaValue)>,
    /// For a TorchScript archive (`torch.jit.save`): what it holds beyond its state dict.
    script: Option<ScriptFacts>,
}

/// Whether `bytes` are a zip with a `data.pkl` record (cheap check on the first entry).
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes.starts_with(LEGACY_MAGIC)
}

impl PtReader {
    /// Open a `torch.save` file. A zip is read by range: its directory and small records
    /// (`data.pkl`, `byteorder`) now, a storage record when a tensor of it is read.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        Self::open_region(Region::whole_of(src))
    }

    /// Open the `torch.save` file in `region` (a whole file, or a record of a `.pt2` archive).
    pub fn open_region(region: Region) -> Result<Self> {
        if region.head(LEGACY_MAGIC.len() as u64)?.starts_with(LEGACY_MAGIC) {
            // The format before PyTorch 1.6 is a sequence of pickles with no index: where the
            // storages start is only known once every pickle before them has been parsed, and
            // the storages follow each other with nothing to skip by, so the whole file is
            // read (for a remote file, downloaded) at once.
            let base = region.base();
            return Self::open_legacy(region.whole()?).map(|r| r.based_at(base));
        }
        let base = region.base();
        let archive = Archive::open_region(region)?;
        let pkl = archive.record("data.pkl").ok_or_else(|| {
            if archive.record("model.json").is_some() {
                Error::unsupported("a TorchScript archive of PyTorch before 1.4 (model.json, no data.pkl)")
            } else {
                Error::invalid(Rule::MissingField, "no data.pkl: not a torch.save file")
            }
        })?;
        let pkl_bytes = archive.read(pkl, true)?;
        // Every record but the storages (`data/`, TorchScript's `constants/`): its CRC.
        crate::formats::pytorch::check_small_records(&archive, &["data/", "constants/"])?;
        let big_endian = match archive.read_text("byteorder")?.as_deref().map(str::trim) {
            None | Some("little") => false,
            Some("big") => true,
            Some(other) => return Err(Error::invalid(Rule::UnknownByteOrder, format!("byteorder {other:?}"))),
        };
        let budget = 4 * pkl_bytes.len() + 1024;
        if script::is_script(&archive) {
            // A TorchScript archive: its module's state dict, named from its code.
            let value = pickle::load_torchscript(&pkl_bytes).map_err(|e| in_data_pkl(e, "TorchScript"))?;
            let state = script::state_dict(&archive, &value, budget)?;
            let mut reader =
                Self::build(Some(archive), None, HashMap::new(), big_endian, state.flat, state.unreadable)?;
            reader.script = Some(state.facts);
            return Ok(reader.based_at(base));
        }
        let value = pickle::load(&pkl_bytes)?;
        let flat = flatten(&value, budget)?;
        Ok(Self::build(Some(archive), None, HashMap::new(), big_endian, flat, Vec::new())?.based_at(base))
    }

    /// The same reader, its entries' offsets counted from the start of the file this one is
    /// nested in at `base` (a `torch.save` file inside a `.pt2` archive), so that an entry's
    /// offset always says where its bytes are in the file that was opened.
    fn based_at(mut self, base: u64) -> Self {
        for entry in self.catalog.entries_mut() {
            entry.shift_offset(base);
        }
        self
    }

    /// The format before PyTorch 1.6: pickles of the magic number, the protocol version and
    /// system information, then the object, then the list of storage keys, then each storage
    /// as an element count (8 bytes) and its elements.
    fn open_legacy(bytes: Bytes) -> Result<Self> {
        let mut c = Cursor::new(&bytes);
        // A refused global is named as in a zip's `data.pkl`, without the pickle's place.
        let mut next = |what: &str| -> Result<pickle::Loaded> {
            let l = pickle::load_prefix(c.rest()).map_err(|e| match e.rule() {
                Some(Rule::ForbiddenGlobal) => e,
                _ => e.within(what, Rule::BadPickle),
            })?;
            c.skip(l.consumed, what)?;
            Ok(l)
        };
        next("magic number")?;
        let protocol = next("protocol version")?.value.root.as_int();
        if protocol != Some(1001) {
            return Err(Error::unsupported(format!("legacy torch.save protocol {protocol:?} (tensorfile reads 1001)")));
        }
        let info = next("system information")?.value;
        let little = info
            .pairs(&info.root)
            .and_then(|pairs| pairs.iter().find(|(k, _)| k.as_str() == Some("little_endian")))
            .map(|(_, v)| v.as_int() != Some(0));
        let object = next("the saved object")?;
        let keys = next("storage keys")?.value;
        let keys: Vec<String> =
            keys.items(&keys.root).unwrap_or_default().iter().filter_map(|k| k.as_str().map(str::to_string)).collect();
        let elem_of: HashMap<&str, u64> =
            object.storages.iter().map(|s| (s.key.as_str(), s.dtype.and_then(DType::size).unwrap_or(1))).collect();
        let mut raw = HashMap::new();
        for key in keys {
            let count = c.u64_le(&format!("element count of storage {key}"))?;
            let len = checked::mul(count, elem_of.get(key.as_str()).copied().unwrap_or(1), "storage size")?;
            let start = c.position() as u64;
            c.skip(checked::to_usize(len, "storage size")?, &format!("storage {key} of {len} bytes"))?;
            raw.insert(key, (start, len));
        }
        let flat = flatten(&object.value, 4 * object.consumed + 1024)?;
        Self::build(None, Some(bytes), raw, little == Some(false), flat, Vec::new())
    }

    /// The reader of the tensors `flat` names (and of `unreadable`, named tensors that cannot
    /// be read, with why).
    fn build(
        archive: Option<Archive>,
        legacy: Option<Bytes>,
        raw_storages: HashMap<String, (u64, u64)>,
        big_endian: bool,
        flat: Flattened,
        unreadable: Vec<(String, Error)>,
    ) -> Result<Self> {
        let mut reader = PtReader {
            archive,
            legacy,
            raw_storages,
            big_endian,
            catalog: Catalog::default(),
            tensors: Vec::new(),
            metadata: flat.metadata,
            script: None,
        };
        for (name, error) in unreadable {
            reader.catalog.push_unreadable(name, String::new(), Vec::new(), error);
        }
        for name in flat.duplicates {
            let error = Error::invalid(Rule::DuplicateName, "another tensor already has this name");
            reader.catalog.push_unreadable(name, String::new(), Vec::new(), error);
        }
        for (name, t) in flat.tensors {
            match reader.entry(&name, &t) {
                Ok((e, p)) => {
                    reader.catalog.push(e);
                    reader.tensors.push(p);
                }
                Err(error) => {
                    reader.catalog.push_unreadable(name, t.dtype.name().into(), t.shape.clone(), error);
                }
            }
        }
        Ok(reader)
    }

    /// Where storage `key` is: (source, bytes available, absolute offset, deflated).
    fn storage_of(&self, key: &str) -> Result<(StorageSource, u64, u64, bool)> {
        match &self.archive {
            Some(a) => {
                let name = format!("data/{key}");
                let r = a
                    .record(&name)
                    .ok_or_else(|| Error::invalid(Rule::MissingField, format!("no storage record {name}")))?;
                Ok((StorageSource::Record(r.clone()), r.size, r.data_offset, r.method != 0))
            }
            None => {
                let &(offset, len) = self
                    .raw_storages
                    .get(key)
                    .ok_or_else(|| Error::invalid(Rule::MissingField, format!("no storage {key}")))?;
                Ok((StorageSource::Raw { offset, len }, len, offset, false))
            }
        }
    }

    fn entry(&self, name: &str, t: &TensorRef) -> Result<(Entry, PtTensor)> {
        let key = &t.storage.key;
        let (source, available, data_offset, deflated) = self.storage_of(key)?;
        t.dtype.size().ok_or_else(|| Error::unsupported(format!("dtype {} in a storage", t.dtype)))?;
        let storage_bytes = match t.storage.dtype {
            Some(d) => crate::checked::mul(t.storage.numel, d.size().unwrap_or(1), "storage size")?,
            None => t.storage.numel,
        };
        if available < storage_bytes {
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!("storage {key} holds {available} bytes, its pickle says {storage_bytes}"),
            ));
        }
        let view = View {
            dtype: t.dtype,
            shape: t.shape.clone(),
            strides: t.strides.clone(),
            storage_offset: t.storage_offset,
        };
        let (start, _) = view.check_within(storage_bytes)?;
        let info = TensorInfo::new(name, Kind::Tensor, t.dtype, t.shape.clone(), view.layout())?;
        let nbytes = info.nbytes()?;
        let storage = Storage::new(data_offset + start, nbytes)
            .with_encoding(if deflated { Encoding::Deflate } else { Encoding::Raw })
            .with_byte_order(if self.big_endian { ByteOrder::Big } else { ByteOrder::Little });
        Ok((Entry::new(info, storage)?, PtTensor { tensor: t.clone(), view, storage: source }))
    }

    /// The tensor behind each entry (same order as `entries`).
    pub fn tensors(&self) -> &[PtTensor] {
        &self.tensors
    }

    /// The zip (`None` for files in the format before PyTorch 1.6).
    pub fn archive(&self) -> Option<&Archive> {
        self.archive.as_ref()
    }

    /// Whether the file's storages are big-endian (its `byteorder` record).
    pub fn big_endian(&self) -> bool {
        self.big_endian
    }

    /// A tensor's bytes: contiguous, row-major, little-endian.
    pub fn tensor_bytes(&self, t: &PtTensor, verify: bool) -> Result<Bytes> {
        let storage = match (&t.storage, &self.archive) {
            (StorageSource::Record(r), Some(a)) => a.read(r, verify)?,
            (StorageSource::Raw { offset, len }, _) => match &self.legacy {
                Some(bytes) => bytes.slice(*offset, *len)?,
                None => return Err(Error::usage("a raw storage in a zip torch.save file")),
            },
            (StorageSource::Record(_), None) => return Err(Error::usage("zip record in a file without a zip")),
        };
        let bytes = t.view.bytes_of(&storage)?;
        let unit = t.view.dtype.swap_unit();
        Ok(if self.big_endian && unit > 1 { Bytes::from_vec(swap::swapped(&bytes, unit)) } else { bytes })
    }
}

/// An error of a TorchScript archive's `data.pkl`, saying which pickle it is about.
fn in_data_pkl(e: Error, kind: &str) -> Error {
    e.within(format!("data.pkl of a {kind} archive"), Rule::BadPickle)
}

impl FormatReader for PtReader {
    fn format(&self) -> Format {
        Format::Pt
    }

    fn summary(&self) -> FileSummary {
        let mut details =
            vec![("byteorder".into(), MetaValue::Text(if self.big_endian { "big" } else { "little" }.into()))];
        let version = match &self.archive {
            Some(a) => {
                details.push(("root".into(), MetaValue::Text(a.root().unwrap_or("").to_string())));
                details.push(("records".into(), MetaValue::Int(a.entries().len() as i128)));
                a.read_text("version").ok().flatten().map(|v| v.trim().to_string()).unwrap_or_default()
            }
            None => "legacy (before PyTorch 1.6)".to_string(),
        };
        if let Some(facts) = &self.script {
            details.insert(0, ("kind".into(), MetaValue::Text("TorchScript archive (torch.jit.save)".into())));
            details.push(("code".into(), MetaValue::Array(facts.code.iter().cloned().map(MetaValue::Text).collect())));
            details.push(("constants".into(), MetaValue::Int(facts.constants as i128)));
            let others = facts.other_tensors.iter().cloned().map(MetaValue::Text).collect();
            details.push(("tensors not in the state dict".into(), MetaValue::Array(others)));
        }
        FileSummary { version, metadata: self.metadata.clone(), details, structure: None }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The CRC-32 of every record of the zip (the format before PyTorch 1.6 has none).
    fn verify_checksums(&self) -> (Vec<Error>, usize) {
        self.archive.as_ref().map_or((Vec::new(), 0), crate::zip::verify_records)
    }

    fn read(&self, index: usize, verify: bool) -> Result<TensorData> {
        let t = self.tensors.get(index).ok_or_else(|| Error::usage(format!("entry index {index} out of range")))?;
        Ok(TensorData::dense(self.tensor_bytes(t, verify)?))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
