//! A format as one unit: its descriptor ([`FormatUnit`]) says what it is called, how its files
//! are recognised, what it can hold ([`Caps`]), and which reader, writer and updater serve it.
//! The registry (`registry.rs`) lists one unit per format; nothing else in the library or in
//! the shells knows a format's rules.

use std::any::Any;
use std::path::Path;

use crate::error::{Error, Need, Result};
use crate::formats::{FormatReader, FormatWriter, Output, WriteOptions};
use crate::model::{ByteOrder, ChecksumKind, DType, Entry, LayoutKind, MetaValue, TensorData, TensorInfo};
use crate::source::{Sample, Source};

/// What detection has seen of a file: its first bytes and, for a zip archive, its entry names;
/// and, once no format has recognised those, the rest of the file for a format whose
/// signature may sit further in (HDF5 after a user block).
pub struct Probe<'a> {
    pub(crate) head: &'a [u8],
    pub(crate) zip_names: Option<&'a [String]>,
    pub(crate) further: Further<'a>,
}

/// The bytes of a file beyond its head, as detection may read them.
#[derive(Clone, Copy)]
pub(crate) enum Further<'a> {
    /// Not offered: detection's first look, at the head alone.
    None,
    /// The whole file in memory.
    Bytes(&'a [u8]),
    /// The file read by range.
    Source(&'a Source),
}

impl Probe<'_> {
    /// The file's first bytes (at most 64; fewer for a shorter file).
    pub fn head(&self) -> &[u8] {
        self.head
    }

    /// The names of a zip archive's entries; `None` when the file is not a zip archive.
    pub fn zip_names(&self) -> Option<&[String]> {
        self.zip_names
    }

    /// `len` bytes at `offset`, once detection looks past the head (no format recognised
    /// it); `None` before then, past the file's end, or when the read fails.
    pub fn bytes_at(&self, offset: u64, len: u64) -> Option<std::borrow::Cow<'_, [u8]>> {
        match self.further {
            Further::None => None,
            Further::Bytes(b) => {
                let start = usize::try_from(offset).ok()?;
                let end = start.checked_add(usize::try_from(len).ok()?)?;
                b.get(start..end).map(std::borrow::Cow::Borrowed)
            }
            Further::Source(src) => {
                let end = offset.checked_add(len)?;
                if end > src.len() {
                    return None;
                }
                src.range(offset, len).ok().map(|b| std::borrow::Cow::Owned(b.to_vec()))
            }
        }
    }

    /// The file's length, once detection looks past the head; `None` before.
    pub fn file_len(&self) -> Option<u64> {
        match self.further {
            Further::None => None,
            Further::Bytes(b) => Some(b.len() as u64),
            Further::Source(src) => Some(src.len()),
        }
    }
}

/// Opens a file of the format from its source.
pub(crate) type OpenFn = fn(Source) -> Result<Box<dyn FormatReader>>;
/// Creates a streaming writer that will receive exactly the tensors of the plan, in order.
pub(crate) type WriterFn =
    for<'w> fn(Box<dyn Output + 'w>, &[TensorInfo], &WriteOptions) -> Result<Box<dyn FormatWriter + 'w>>;
/// Rewrites a file with new tensors in place of some of its own, keeping everything else:
/// given the file's reader and the replacements (matched by name already), it writes the new
/// file through `outputs`, and checks that each new tensor fits the place it takes. The
/// operation above it (`update`) makes the outputs atomic and opens the result again to
/// verify it.
pub(crate) type UpdateFn = fn(&Replacements<'_>, &mut dyn UpdateOutputs) -> Result<()>;

/// Rewrites a file with other metadata, keeping every tensor's bytes: given the file's reader
/// and the metadata as it is to be (every key, in order), it writes the new file into the
/// output. The operation above it (`edit_metadata`) makes the output atomic and opens the
/// result again to verify it.
pub(crate) type MetaEditFn = fn(&MetaEdits<'_>, &mut dyn Output) -> Result<()>;

/// What a metadata editor is given: the file, and its metadata as it is to be.
pub struct MetaEdits<'a> {
    /// The file being edited.
    pub file: &'a dyn FormatReader,
    /// Every key/value the new file holds, in order.
    pub metadata: &'a [(String, MetaValue)],
}

impl MetaEdits<'_> {
    /// The file's reader as the format's own type, when it is one.
    pub(crate) fn file_as<R: 'static>(&self) -> Option<&R> {
        self.file.as_any().downcast_ref::<R>()
    }
}

/// One tensor of the file being updated and the tensor of the weights that takes its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replacement {
    /// The entry of the weights that is the new tensor.
    pub source: usize,
    /// The entry of the file that it replaces.
    pub target: usize,
}

/// What an updater is given: the file being updated, the weights, and the pairs matched by
/// name (in the weights' order).
pub struct Replacements<'a> {
    /// The file being updated.
    pub file: &'a dyn FormatReader,
    /// The file holding the new tensors.
    pub weights: &'a dyn FormatReader,
    /// Which entry of `weights` replaces which entry of `file`.
    pub pairs: &'a [Replacement],
}

impl Replacements<'_> {
    /// The file's reader as the format's own type, when it is one.
    pub(crate) fn file_as<R: 'static>(&self) -> Option<&R> {
        self.file.as_any().downcast_ref::<R>()
    }

    /// The new tensor of a pair.
    pub(crate) fn new_entry(&self, r: &Replacement) -> &Entry {
        &self.weights.entries()[r.source]
    }

    /// The entry a pair replaces.
    pub(crate) fn old_entry(&self, r: &Replacement) -> &Entry {
        &self.file.entries()[r.target]
    }

    /// The new tensor's data, its stored checksum verified.
    pub(crate) fn read_new(&self, r: &Replacement) -> Result<TensorData> {
        let name = self.new_entry(r).info().name();
        self.weights.read(r.source, true).map_err(|e| if e.tensor().is_none() { e.for_tensor(name) } else { e })
    }
}

/// Why a new tensor cannot take the place of an old one: its dtype or shape differs.
pub(crate) fn mismatch(new: &TensorInfo, old: &TensorInfo) -> Error {
    Error::usage(format!(
        "new {} {:?} does not match the file's {} {:?}",
        new.dtype(),
        new.shape(),
        old.dtype(),
        old.shape()
    ))
    .for_tensor(new.name())
}

/// Where an updater writes: the new file, and files beside it that it refers to (an ONNX
/// model's external data), each given whole to `fill`. Nothing appears at its destination
/// until every file is written.
pub trait UpdateOutputs {
    /// The folder the new file is written in (files beside it are named relative to it).
    fn folder(&self) -> &Path;
    /// Write the new file.
    fn write_main(&mut self, fill: &mut dyn FnMut(&mut dyn Output) -> Result<()>) -> Result<()>;
    /// Write a file beside the new one, at `path` (inside [`UpdateOutputs::folder`]).
    fn write_beside(&mut self, path: &Path, fill: &mut dyn FnMut(&mut dyn Output) -> Result<()>) -> Result<()>;
}

/// The descriptor of one format.
pub struct FormatUnit {
    /// The short name users see and type (`zt`, `safetensors`...).
    pub(crate) name: &'static str,
    /// What the format is, in a few words (`zTensor v0.1`, `ExecuTorch program`...).
    pub(crate) title: &'static str,
    /// File extensions (without the dot) that ask for this format as an output; the first is
    /// the usual one.
    pub(crate) extensions: &'static [&'static str],
    /// Whether a file is of this format, from its first bytes (and a zip's entry names).
    pub(crate) recognise: fn(&Probe<'_>) -> bool,
    pub(crate) open: OpenFn,
    pub(crate) writer: Option<WriterFn>,
    pub(crate) updater: Option<UpdateFn>,
    /// Rewrites a file's metadata (`meta`), when the format can.
    pub(crate) meta_editor: Option<MetaEditFn>,
    /// Whether a tensor can be stored in a file of this format; the error says why not.
    pub(crate) check_supported: fn(&TensorInfo) -> Result<()>,
    /// The order in which its writer best stores a plan (indices into it).
    pub(crate) write_order: fn(&[TensorInfo]) -> Vec<usize>,
    /// Which of the formats that share an output extension this one is (zTensor `0.1` or
    /// `2`); `None` for a format alone with its extensions.
    pub(crate) variant: Option<Variant>,
    /// The file its files are opened with, when they keep data in another (a `.pte`
    /// program's external tensors in a `.ptd`).
    pub(crate) companion: Option<Companion>,
    pub(crate) caps: Caps,
    /// How a file of the format that does not open is told and measured (`diagnose`).
    pub(crate) extent: Extent,
}

/// What `diagnose` knows of a format's files when one does not open: the bytes they start
/// with, and how long one should be. `diagnose` names no format: it asks every unit this.
#[derive(Clone, Copy)]
pub(crate) struct Extent {
    /// The bytes a file of the format starts with, any of them (torch.save: a zip archive or
    /// the legacy pickle). Empty when nothing at the start tells the format: then only a
    /// file's extension can. Formats that share a magic (every zip-based format has the zip's)
    /// are told apart by their content when the file is whole, else by the extension, else
    /// the last registered of them stands for them: the one detection falls back to (torch.save
    /// takes any zip the others do not). A file of one of them cut short inside a magic is
    /// measured by the magics of the one standing for them.
    pub(crate) magics: &'static [&'static [u8]],
    /// Whether the first bytes hold the format's signature where detection, which looks at
    /// the start, does not (an HDF5 superblock after a user block).
    pub(crate) found_further: Option<fn(&[u8]) -> bool>,
    /// For a format detection falls back to (torch.save, any zip the others do not take):
    /// whether a file detection gave it is one indeed. One that is not is no file of ours,
    /// and is named for what it is (a zip archive of no tensor format).
    pub(crate) confirm: Option<fn(&Sample) -> bool>,
    /// How many bytes the file needs as far as its own fields tell, read leniently from the
    /// sample (bounded by it, no allocation sized by the file); `None` when they tell nothing
    /// (a field that makes no sense, or no more to say). The reader refuses the file with its
    /// own rule; this only measures it.
    pub(crate) measure: fn(&Sample) -> Option<Need>,
}

/// One of several formats written under one extension, told apart by a label the user gives
/// (`convert --zt-version 2`); the first registered of them is written when none is given.
#[derive(Debug, Clone, Copy)]
pub struct Variant {
    /// What the formats are together (`zTensor`): the label is "its version".
    pub(crate) family: &'static str,
    /// This format's label among them (`0.1`, `2`).
    pub(crate) label: &'static str,
}

impl Variant {
    /// What the formats are together (`zTensor`).
    pub fn family(&self) -> &'static str {
        self.family
    }

    /// This format's label among them (`0.1`, `2`).
    pub fn label(&self) -> &'static str {
        self.label
    }
}

/// A companion file as its format's unit opened it, for the same unit to open the file with.
pub(crate) type OpenedData = Box<dyn Any + Send + Sync>;

/// A second file that a file of the format is opened with (an ExecuTorch program's `.ptd`).
#[derive(Clone, Copy)]
pub struct Companion {
    /// What the second file is, in a few words (`a .ptd of external tensors`).
    pub(crate) what: &'static str,
    /// Opens the second file.
    pub(crate) open_data: fn(Source) -> Result<OpenedData>,
    /// Opens the file with the second file as `open_data` opened it.
    pub(crate) open: fn(Source, OpenedData) -> Result<Box<dyn FormatReader>>,
}

impl Companion {
    /// What the second file is, in a few words.
    pub fn what(&self) -> &'static str {
        self.what
    }

    /// Open the file from `src` with the second file from `data`; errors name the file
    /// (`path`, or `data_path`) they are about.
    pub(crate) fn open_with(
        &self,
        src: Source,
        data: Source,
        path: &Path,
        data_path: &Path,
    ) -> Result<Box<dyn FormatReader>> {
        let opened = (self.open_data)(data).map_err(|e| e.in_file(data_path))?;
        (self.open)(src, opened).map_err(|e| e.in_file(path))
    }
}

impl FormatUnit {
    /// The short name (`zt`, `safetensors`, `pte`, `ptd`, `pt`, `pt2`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What the format is, in a few words.
    pub fn title(&self) -> &'static str {
        self.title
    }

    /// Extensions (without the dot) that name this format as an output; the first is usual.
    pub fn extensions(&self) -> &'static [&'static str] {
        self.extensions
    }

    /// What files of this format can hold.
    pub fn caps(&self) -> &Caps {
        &self.caps
    }

    /// Whether tensors can be written into a new file of this format.
    pub fn can_write(&self) -> bool {
        self.writer.is_some()
    }

    /// Which of the formats sharing its output extension this one is, when several do.
    pub fn variant(&self) -> Option<&Variant> {
        self.variant.as_ref()
    }

    /// The second file a file of this format can be opened with, when there is one.
    pub fn companion(&self) -> Option<&Companion> {
        self.companion.as_ref()
    }

    /// Whether an existing file of this format can have tensors replaced (`update`).
    pub fn can_update(&self) -> bool {
        self.updater.is_some()
    }

    /// Whether an existing file of this format can have its metadata edited (`meta`).
    pub fn can_edit_metadata(&self) -> bool {
        self.meta_editor.is_some()
    }
}

/// The order of a plan as it is: most formats store tensors in the order given.
pub(crate) fn plan_order(plan: &[TensorInfo]) -> Vec<usize> {
    (0..plan.len()).collect()
}

/// What a format can hold, for the shells to ask instead of knowing: which dtypes and layouts
/// it stores, whether it keeps blobs, file metadata, per-tensor fields, checksums, compressed
/// data and which byte orders.
#[derive(Debug, Clone, Copy)]
pub struct Caps {
    pub(crate) holds_dtype: fn(DType) -> bool,
    pub(crate) layouts: &'static [LayoutKind],
    pub(crate) blobs: bool,
    pub(crate) file_metadata: bool,
    pub(crate) typed_metadata: bool,
    pub(crate) tensor_fields: bool,
    pub(crate) checksums: &'static [ChecksumKind],
    pub(crate) compression: bool,
    pub(crate) byte_orders: &'static [ByteOrder],
}

impl Caps {
    /// Whether tensors of `dtype` can be stored.
    pub fn holds_dtype(&self, dtype: DType) -> bool {
        (self.holds_dtype)(dtype)
    }

    /// Every dtype that can be stored, in [`DType::ALL`] order.
    pub fn dtypes(&self) -> Vec<DType> {
        DType::ALL.into_iter().filter(|&d| self.holds_dtype(d)).collect()
    }

    /// The layouts files of this format store tensors in.
    pub fn layouts(&self) -> &'static [LayoutKind] {
        self.layouts
    }

    /// Whether tensors of `layout` can be stored as they are (other layouts are decoded to
    /// dense first, where the format holds the dtype).
    pub fn holds_layout(&self, layout: LayoutKind) -> bool {
        self.layouts.contains(&layout)
    }

    /// Whether opaque blobs (bytes with a key and no tensor meaning) can be stored.
    pub fn blobs(&self) -> bool {
        self.blobs
    }

    /// Whether files carry file-level metadata (key/value text).
    pub fn file_metadata(&self) -> bool {
        self.file_metadata
    }

    /// Whether file metadata keeps typed values (numbers of a width, arrays, maps) rather
    /// than text only.
    pub fn typed_metadata(&self) -> bool {
        self.typed_metadata
    }

    /// Whether entries carry fields of their own beside dtype and shape.
    pub fn tensor_fields(&self) -> bool {
        self.tensor_fields
    }

    /// The checksums a writer of this format can store (empty: none).
    pub fn checksums(&self) -> &'static [ChecksumKind] {
        self.checksums
    }

    /// Whether stored data can be compressed.
    pub fn compression(&self) -> bool {
        self.compression
    }

    /// The byte orders stored data can have.
    pub fn byte_orders(&self) -> &'static [ByteOrder] {
        self.byte_orders
    }

    /// The facts as JSON, for `tensorfile formats --json` and Python.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "dtypes": self.dtypes().iter().map(|d| d.name()).collect::<Vec<_>>(),
            "layouts": self.layouts.iter().map(|l| l.name()).collect::<Vec<_>>(),
            "blobs": self.blobs,
            "file_metadata": self.file_metadata,
            "typed_metadata": self.typed_metadata,
            "tensor_fields": self.tensor_fields,
            "checksums": self.checksums.iter().map(|c| c.name()).collect::<Vec<_>>(),
            "compression": self.compression,
            "byte_orders": self.byte_orders.iter().map(|b| b.name()).collect::<Vec<_>>(),
        })
    }
}

/// Only little-endian data.
const LITTLE_ENDIAN: &[ByteOrder] = &[ByteOrder::Little];

impl Caps {
    /// What a plain format holds, for units to start from (`Caps { holds_dtype, ..Caps::PLAIN }`):
    /// dense little-endian tensors, without blobs, metadata, fields, checksums or compression,
    /// and (until it says) no dtype.
    pub(crate) const PLAIN: Caps = Caps {
        holds_dtype: |_| false,
        layouts: DENSE,
        blobs: false,
        file_metadata: false,
        typed_metadata: false,
        tensor_fields: false,
        checksums: &[],
        compression: false,
        byte_orders: LITTLE_ENDIAN,
    };
}
/// Dense tensors only.
const DENSE: &[LayoutKind] = &[LayoutKind::Dense];
