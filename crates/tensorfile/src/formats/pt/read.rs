//! Opening a `torch.save` file.

use std::any::Any;

use super::flatten::flatten;
use crate::error::{Error, Result, Rule};
use crate::formats::torch::View;
use crate::formats::{FileSummary, Format, FormatReader};
use crate::model::{ByteOrder, Encoding, Entry, Layout, MetaValue, Storage, TensorData, TensorInfo, Unreadable};
use crate::pickle::{self, TensorRef};
use crate::source::Bytes;
use crate::swap;
use crate::zip::{Archive, ZipEntry};

/// The start of a pickle written by `torch.save` before PyTorch 1.6 (not a zip): protocol 2
/// and the magic number 0x1950a86a20f9469cfc6c.
const LEGACY_MAGIC: &[u8] = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";

/// One tensor of the file: its view and the record holding its storage.
#[derive(Debug, Clone)]
pub struct PtTensor {
    pub tensor: TensorRef,
    pub view: View,
    pub record: ZipEntry,
}

/// An opened `torch.save` file.
pub struct PtReader {
    archive: Archive,
    big_endian: bool,
    entries: Vec<Entry>,
    tensors: Vec<PtTensor>,
    unreadable: Vec<Unreadable>,
    metadata: Vec<(String, MetaValue)>,
}

/// Whether `bytes` are a zip with a `data.pkl` record (cheap check on the first entry).
pub fn looks_like(bytes: &[u8]) -> bool {
    bytes.starts_with(LEGACY_MAGIC)
}

impl PtReader {
    pub fn open(bytes: Bytes) -> Result<Self> {
        if bytes.starts_with(LEGACY_MAGIC) {
            return Err(Error::unsupported(
                "a torch.save file in the format before PyTorch 1.6 (not a zip): load and save it again with a current torch",
            ));
        }
        let archive = Archive::open(bytes)?;
        Self::from_archive(archive)
    }

    pub fn from_archive(archive: Archive) -> Result<Self> {
        let pkl = archive
            .record("data.pkl")
            .ok_or_else(|| Error::invalid(Rule::MissingField, "no data.pkl: not a torch.save file"))?;
        let pkl_bytes = archive.read(pkl, true)?;
        let big_endian = match archive.read_text("byteorder")?.as_deref().map(str::trim) {
            None | Some("little") => false,
            Some("big") => true,
            Some(other) => return Err(Error::invalid(Rule::UnknownByteOrder, format!("byteorder {other:?}"))),
        };
        let value = pickle::load(&pkl_bytes)?;
        let flat = flatten(&value, 4 * pkl_bytes.len() + 1024)?;
        let mut reader = PtReader {
            archive,
            big_endian,
            entries: Vec::new(),
            tensors: Vec::new(),
            unreadable: Vec::new(),
            metadata: flat.metadata,
        };
        for name in flat.duplicates {
            let error = Error::invalid(Rule::DuplicateName, "another tensor already has this name");
            reader.unreadable.push(Unreadable { name, dtype: String::new(), shape: Vec::new(), error });
        }
        for (name, t) in flat.tensors {
            match reader.entry(&name, &t) {
                Ok((e, p)) => {
                    reader.entries.push(e);
                    reader.tensors.push(p);
                }
                Err(error) => {
                    reader.unreadable.push(Unreadable {
                        name,
                        dtype: t.dtype.name().into(),
                        shape: t.shape.clone(),
                        error,
                    });
                }
            }
        }
        Ok(reader)
    }

    fn entry(&self, name: &str, t: &TensorRef) -> Result<(Entry, PtTensor)> {
        let key = format!("data/{}", t.storage.key);
        let record = self
            .archive
            .record(&key)
            .ok_or_else(|| Error::invalid(Rule::MissingField, format!("no storage record {key}")))?;
        t.dtype.size().ok_or_else(|| Error::unsupported(format!("dtype {} in a storage", t.dtype)))?;
        let storage_bytes = match t.storage.dtype {
            Some(d) => crate::checked::mul(t.storage.numel, d.size().unwrap_or(1), "storage size")?,
            None => t.storage.numel,
        };
        if record.size < storage_bytes {
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!("storage {key} holds {} bytes, its pickle says {storage_bytes}", record.size),
            ));
        }
        let view = View {
            dtype: t.dtype,
            shape: t.shape.clone(),
            strides: t.strides.clone(),
            storage_offset: t.storage_offset,
        };
        let (start, _) = view.check_within(storage_bytes)?;
        let info = TensorInfo {
            layout: if view.is_contiguous() {
                Layout::Dense
            } else {
                Layout::Strided { strides: view.strides.clone(), storage_offset: view.storage_offset }
            },
            ..TensorInfo::dense(name, t.dtype, t.shape.clone())
        };
        let nbytes = info.nbytes()?;
        let storage = Storage {
            offset: record.data_offset + start,
            len: nbytes,
            encoding: if record.method == 0 { Encoding::Raw } else { Encoding::Deflate },
            byte_order: if self.big_endian { ByteOrder::Big } else { ByteOrder::Little },
            checksum: None,
        };
        Ok((Entry { info, nbytes, storage }, PtTensor { tensor: t.clone(), view, record: record.clone() }))
    }

    /// The tensor behind each entry (same order as `entries`).
    pub fn tensors(&self) -> &[PtTensor] {
        &self.tensors
    }

    pub fn archive(&self) -> &Archive {
        &self.archive
    }

    /// Whether the file's storages are big-endian (its `byteorder` record).
    pub fn big_endian(&self) -> bool {
        self.big_endian
    }

    /// A tensor's bytes: contiguous, row-major, little-endian.
    pub fn tensor_bytes(&self, t: &PtTensor, verify: bool) -> Result<Bytes> {
        let storage = self.archive.read(&t.record, verify)?;
        let nbytes = crate::checked::mul(t.view.shape.iter().product(), t.dtype_size(), "tensor size")?;
        let bytes = if t.view.is_contiguous() {
            let start = t.view.storage_offset * t.dtype_size();
            storage.slice(start, nbytes)?
        } else {
            Bytes::from_vec(t.view.gather(&storage))
        };
        let unit = t.view.dtype.swap_unit();
        Ok(if self.big_endian && unit > 1 { Bytes::from_vec(swap::swapped(&bytes, unit)) } else { bytes })
    }
}

impl PtTensor {
    fn dtype_size(&self) -> u64 {
        self.view.dtype.size().unwrap_or(1)
    }
}

impl FormatReader for PtReader {
    fn format(&self) -> Format {
        Format::Pt
    }

    fn summary(&self) -> FileSummary {
        FileSummary {
            version: self.archive.read_text("version").ok().flatten().map(|v| v.trim().to_string()).unwrap_or_default(),
            metadata: self.metadata.clone(),
            details: vec![
                ("root".into(), MetaValue::Text(self.archive.root().unwrap_or("").to_string())),
                ("records".into(), MetaValue::Int(self.archive.entries().len() as i128)),
                ("byteorder".into(), MetaValue::Text(if self.big_endian { "big" } else { "little" }.into())),
            ],
            structure: None,
        }
    }

    fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn unreadable(&self) -> &[Unreadable] {
        &self.unreadable
    }

    fn read(&self, index: usize, verify: bool) -> Result<TensorData> {
        let t = self.tensors.get(index).ok_or_else(|| Error::usage(format!("entry index {index} out of range")))?;
        Ok(TensorData::Dense(self.tensor_bytes(t, verify)?))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
