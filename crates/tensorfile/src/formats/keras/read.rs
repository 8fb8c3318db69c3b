//! Opening a `.keras` file: the archive's directory, the weights member opened by the HDF5
//! reader (in place when stored, inflated when deflated), `config.json` and `metadata.json`
//! parsed for `info`.

use serde_json::Value as Json;

use super::config::{self, LayerWeights, MAX_JSON_MEMBER, ModelConfig};
use super::{CONFIG_MEMBER, METADATA_MEMBER, NPZ_WEIGHTS_MEMBER, WEIGHTS_MEMBER};
use crate::checked;
use crate::error::{Error, ErrorKind, Result, Rule};
use crate::formats::hdf5::Hdf5Reader;
use crate::formats::{Catalog, FileSummary, Format, FormatReader, Structure};
use crate::model::{Encoding, Entry, MetaValue, Storage, TensorData};
use crate::source::Source;
use crate::zip::{Archive, ZipEntry};

/// An opened `.keras` file.
pub struct KerasReader {
    archive: Archive,
    /// The weights member's zip entry.
    member: ZipEntry,
    /// The weights member, opened as HDF5.
    weights: Hdf5Reader,
    /// The weights' entries, their offsets counted in the `.keras` file.
    catalog: Catalog,
    /// `config.json` as parsed, or why it could not be.
    config: Result<(Json, ModelConfig)>,
    /// `metadata.json`'s keys, or why they could not be read.
    metadata: Result<Vec<(String, MetaValue)>>,
    /// Whether the weights member's bytes match its CRC-32, found on the first read that
    /// verifies (a stored member is read in place, its CRC covering the whole member: the
    /// HDF5 structure and every tensor; a deflated one was checked as it was inflated).
    weights_crc: std::sync::OnceLock<Result<()>>,
}

impl KerasReader {
    /// Open a `.keras` file: the archive's end, directory and local headers, the weights
    /// member's HDF5 structure, `config.json` and `metadata.json`. A tensor's bytes are read
    /// when it is read.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let archive = Archive::open(src)?;
        let member = match archive.entry(WEIGHTS_MEMBER) {
            Some(e) => e.clone(),
            None if archive.entry(NPZ_WEIGHTS_MEMBER).is_some() => {
                return Err(Error::unsupported(format!(
                    "{NPZ_WEIGHTS_MEMBER}: weights saved with weights_format=\"npz\" (tensorfile reads {WEIGHTS_MEMBER})"
                )));
            }
            None => {
                return Err(Error::invalid(
                    Rule::MissingField,
                    format!("no {WEIGHTS_MEMBER} member: a .keras file keeps its weights there"),
                ));
            }
        };
        let weights = Hdf5Reader::open(member_source(&archive, &member)?).map_err(in_weights)?;
        let catalog = catalog_of(&weights, &member);
        let config = json_member(&archive, CONFIG_MEMBER).and_then(|v| {
            let model = config::model(CONFIG_MEMBER, &v)?;
            Ok((v, model))
        });
        let metadata = json_member(&archive, METADATA_MEMBER).and_then(|v| config::metadata(METADATA_MEMBER, &v));
        Ok(KerasReader { archive, member, weights, catalog, config, metadata, weights_crc: Default::default() })
    }

    /// The zip archive.
    #[cfg(any(test, feature = "internals"))]
    pub fn archive(&self) -> &Archive {
        &self.archive
    }

    /// The weights member opened as HDF5 (its entries' offsets counted in the member).
    #[cfg(any(test, feature = "internals"))]
    pub fn weights(&self) -> &Hdf5Reader {
        &self.weights
    }

    /// `config.json` as Keras wrote it, or why it could not be read.
    #[cfg(any(test, feature = "internals"))]
    pub fn config(&self) -> Result<&Json, &Error> {
        self.config.as_ref().map(|(json, _)| json)
    }

    /// `metadata.json`'s keys and values, or why they could not be read.
    #[cfg(any(test, feature = "internals"))]
    pub fn metadata(&self) -> Result<&[(String, MetaValue)], &Error> {
        self.metadata.as_deref()
    }

    /// The Keras version `metadata.json` names.
    fn keras_version(&self) -> Option<&str> {
        let metadata = self.metadata.as_ref().ok()?;
        metadata.iter().find(|(k, _)| k == "keras_version").and_then(|(_, v)| v.as_text())
    }

    /// The weights of the top-level layer named `layer`: the group whose `vars` Keras marked
    /// with that name (`layers/conv2d/vars` has the attribute `name` = the layer's name), and
    /// the tensors under that group.
    fn layer_weights(&self, metadata: &[(String, MetaValue)], layer: &str) -> Option<LayerWeights> {
        let group = metadata.iter().find_map(|(key, value)| {
            let group = key.strip_suffix("/vars/name")?;
            let top = group.strip_prefix("layers/").is_some_and(|g| !g.is_empty() && !g.contains('/'));
            (top && value.as_text() == Some(layer)).then(|| group.to_string())
        })?;
        let (tensors, parameters) = self.tensors_under(&format!("{group}/"));
        Some(LayerWeights { group, tensors, parameters })
    }

    /// How many tensors are named under `prefix`, and their elements.
    fn tensors_under(&self, prefix: &str) -> (u64, u64) {
        self.catalog.entries().iter().filter(|e| e.info().name().starts_with(prefix)).fold((0, 0), |(n, p), e| {
            let elements = checked::numel(e.info().shape()).unwrap_or(0);
            (n + 1, p.saturating_add(elements))
        })
    }
}

impl KerasReader {
    /// The CRC-32s of the members a read depends on, for a read that verifies: `config.json`
    /// and `metadata.json` (read at open) and the weights member (checked whole once, by the
    /// first read that verifies).
    fn check_members(&self) -> Result<()> {
        for problem in [self.config.as_ref().err(), self.metadata.as_ref().err()].into_iter().flatten() {
            if unsound(problem) {
                return Err(problem.clone());
            }
        }
        let whole = || match self.member.method {
            0 => self.archive.read(&self.member, true).map(|_| ()),
            _ => Ok(()),
        };
        self.weights_crc.get_or_init(whole).clone()
    }
}

/// The weights member as a file of its own: for a stored member, its range of the `.keras`
/// file (of a local file, a window of its map, so that every tensor read from it is a slice
/// of the map; of a remote one, ranges fetched as the HDF5 reader asks for them, not the
/// member whole); a deflated member inflated into exactly its declared size (refused past
/// what deflate can produce), its CRC checked.
fn member_source(archive: &Archive, member: &ZipEntry) -> Result<Source> {
    archive.entry_region(member)?.to_source()
}

/// An error of the weights member's HDF5 structure, naming the member (its rule kept).
fn in_weights(e: Error) -> Error {
    let named = match e.kind() {
        ErrorKind::Invalid { rule, .. } => Error::invalid(*rule, format!("{WEIGHTS_MEMBER}: {}", e.detail())),
        ErrorKind::Unsupported(what) => Error::unsupported(format!("{WEIGHTS_MEMBER}: {what}")),
        _ => return e,
    };
    match e.tensor() {
        Some(t) => named.for_tensor(t),
        None => named,
    }
}

/// The HDF5 reader's entries, their storage said in the `.keras` file's terms: a stored
/// member's bytes lie in the file, so offsets move by where the member's data starts; a
/// deflated member's are inside its compressed data (at the member, deflate-encoded).
fn catalog_of(weights: &Hdf5Reader, member: &ZipEntry) -> Catalog {
    let mut catalog = Catalog::default();
    for entry in weights.entries() {
        let mut entry = entry.clone();
        if member.method == 0 {
            // Both lie within the file: the member checked against it at open, the dataset
            // against the member.
            entry.shift_offset(member.data_offset);
        } else {
            let inner = entry.storage();
            let storage = Storage::new(member.data_offset, inner.len())
                .with_encoding(Encoding::Deflate)
                .with_byte_order(inner.byte_order());
            entry = Entry::checked(entry.info().clone(), entry.nbytes(), storage);
        }
        catalog.push(entry);
    }
    for u in weights.unreadable() {
        catalog.push_unreadable(u.name().to_string(), u.dtype().to_string(), u.shape().to_vec(), u.error().clone());
    }
    catalog
}

/// A JSON member, parsed; missing, too large, not UTF-8 or not JSON is an error naming it.
fn json_member(archive: &Archive, member: &str) -> Result<Json> {
    let e = archive.entry(member).ok_or_else(|| Error::invalid(Rule::MissingField, format!("no {member} member")))?;
    if e.size > MAX_JSON_MEMBER {
        return Err(Error::invalid(
            Rule::HeaderTooLarge,
            format!("{member} of {} bytes (limit {MAX_JSON_MEMBER})", e.size),
        ));
    }
    let bytes = archive.read(e, true)?;
    config::parse_json(member, &bytes)
}

/// Whether `e`, the error of a JSON member, says its bytes are not those written (its CRC-32
/// fails, or it does not inflate), rather than that it was written malformed.
fn unsound(e: &Error) -> bool {
    matches!(e.rule(), Some(Rule::ChecksumMismatch | Rule::BadCompressedData | Rule::DecompressedSizeMismatch))
}

impl FormatReader for KerasReader {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn format(&self) -> Format {
        Format::Keras
    }

    fn summary(&self) -> FileSummary {
        let inner = self.weights.summary();
        let int = |v: u64| MetaValue::Int(i128::from(v));
        let text = |s: &str| MetaValue::Text(s.to_string());
        let compression = if self.member.method == 0 { "stored" } else { "deflated" };
        let mut details = vec![
            ("members".into(), int(self.archive.entries().len() as u64)),
            ("weights_member".into(), text(WEIGHTS_MEMBER)),
            ("weights_bytes".into(), int(self.member.size)),
            ("weights_compression".into(), text(compression)),
        ];
        let assets = self.archive.entries().iter().filter(|e| e.name.starts_with("assets/")).count();
        if assets > 0 {
            details.push(("assets".into(), int(assets as u64)));
        }
        details.extend(inner.details.into_iter().map(|(k, v)| (format!("hdf5_{k}"), v)));
        for (key, problem) in
            [("config_error", self.config.as_ref().err()), ("metadata_error", self.metadata.as_ref().err())]
        {
            if let Some(e) = problem {
                details.push((key.into(), text(&e.message())));
            }
        }
        let mut metadata = self.metadata.clone().unwrap_or_default();
        metadata.extend(inner.metadata.iter().cloned());
        let structure = self.config.as_ref().ok().map(|(_, model)| {
            let (optimizer_tensors, _) = self.tensors_under("optimizer/");
            let (json, text) = model.describe(
                self.keras_version(),
                |layer| self.layer_weights(&inner.metadata, layer),
                optimizer_tensors,
            );
            Structure { json, text }
        });
        FileSummary { version: self.keras_version().unwrap_or_default().to_string(), metadata, details, structure }
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, verify: bool) -> Result<TensorData> {
        if verify {
            self.check_members()?;
        }
        self.weights.read(index, verify)
    }

    fn check(&self) -> Vec<Error> {
        let mut problems = self.weights.check();
        problems.extend(self.config.as_ref().err().cloned());
        problems.extend(self.metadata.as_ref().err().cloned());
        problems
    }

    fn verify_checksums(&self) -> (Vec<Error>, usize) {
        crate::zip::verify_records(&self.archive)
    }
}
