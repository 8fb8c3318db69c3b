//! The registry: every format the library knows, one line each. Adding a format is its folder
//! (with its `UNIT`), one line here, its conformance module and its fuzz target (see
//! CONTRIBUTING.md).

use std::fmt;
use std::path::Path;

use super::extent::ZIP_MAGIC;
use super::unit::{FormatUnit, Further, Probe};
use super::{FormatReader, FormatWriter, Output, WriteOptions};
use super::{executorch, gguf, hdf5, keras, numpy, onnx, pytorch, safetensors, ztensor};
use crate::error::{Error, Result, Rule};
use crate::model::TensorInfo;
use crate::source::Source;

/// Declares [`Format`] (one variant per line) and the table of their units, in the order
/// detection tries them.
macro_rules! registry {
    ($($(#[$doc:meta])* $variant:ident => $unit:path,)+) => {
        /// The file formats this library knows.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Format {
            $($(#[$doc])* $variant,)+
        }

        impl Format {
            /// Every format, in the order detection tries them.
            pub const ALL: &'static [Format] = &[$(Format::$variant),+];

            /// The descriptor of this format.
            pub fn unit(self) -> &'static FormatUnit {
                match self {
                    $(Format::$variant => &$unit,)+
                }
            }
        }
    };
}

registry! {
    /// zTensor v0.1 (`ZTEN0001`). First of the units with the extension `zt`, so that a
    /// `.zt` output is written as v0.1.
    Zt => ztensor::v0_1::UNIT,
    /// zTensor 2 (`\x89ZT2\r\n\x1a\n`); `.zt` outputs are v0.1 unless it is asked for.
    Zt2 => ztensor::v2::UNIT,
    /// zTensor 1.x (`ZTEN1000`).
    Zt1 => ztensor::v1::UNIT,
    /// GGUF (`GGUF`), ggml's format.
    Gguf => gguf::UNIT,
    /// A NumPy array (`\x93NUMPY`).
    Npy => numpy::npy::UNIT,
    /// HDF5 (`\x89HDF\r\n\x1a\n`): h5py, Keras and TensorFlow files; read only.
    Hdf5 => hdf5::UNIT,
    /// safetensors.
    Safetensors => safetensors::UNIT,
    /// ExecuTorch named data (`.ptd`).
    Ptd => executorch::ptd::UNIT,
    /// ExecuTorch program (`.pte`).
    Pte => executorch::pte::UNIT,
    /// A NumPy archive: a zip whose entries are all `.npy` members (before the other zips:
    /// no `.pt2` or `torch.save` archive is only that).
    Npz => numpy::npz::UNIT,
    /// A Keras 3 model (`.keras`): a zip holding `config.json`, `metadata.json` and
    /// `model.weights.h5`; read only.
    Keras => keras::UNIT,
    /// A PyTorch archive (`torch.export.save`, AOTInductor packages).
    Pt2 => pytorch::pt2::UNIT,
    /// A `torch.save` file: any other zip archive. Last of the units with the zip's magic, so
    /// that it stands for them when a zip archive cut short cannot tell which it is.
    Pt => pytorch::pt::UNIT,
    /// An ONNX model (protobuf, no magic bytes: recognised last).
    Onnx => onnx::UNIT,
}

impl Format {
    /// The short name (`zt`, `safetensors`, `pte`, `ptd`, `pt`, `pt2`).
    pub fn name(self) -> &'static str {
        self.unit().name
    }

    /// The format's names as plain data, for what an error carries ([`crate::Diagnosis`]).
    pub fn as_name(self) -> crate::error::FormatName {
        crate::error::FormatName { name: self.name(), title: self.unit().title }
    }

    /// The format of a name as [`Format::name`] gives it.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.iter().copied().find(|f| f.name() == name)
    }

    /// What files of this format can hold.
    pub fn caps(self) -> &'static super::Caps {
        &self.unit().caps
    }

    /// Whether files of this format carry file-level metadata (key/value text).
    pub fn holds_file_metadata(self) -> bool {
        self.unit().caps.file_metadata
    }

    /// The usual file extension (without the dot).
    pub fn extension(self) -> &'static str {
        self.unit().extensions[0]
    }

    /// The format an output path asks for, from its extension.
    pub fn from_path(path: &Path) -> Result<Format> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        let found = Format::ALL.iter().copied().find(|f| f.unit().extensions.contains(&ext.as_str()));
        found.ok_or_else(|| {
            let known: Vec<_> = Format::ALL.iter().flat_map(|f| f.unit().extensions).map(|e| format!(".{e}")).collect();
            Error::usage(format!(
                "cannot tell the output format of {}: use one of the extensions {}",
                path.display(),
                known.join(", ")
            ))
        })
    }

    /// The format an output path is written as: the one its extension names, and among the
    /// formats that share that extension, the one whose [`Variant`](super::Variant) label is
    /// `variant` (`zTensor` `0.1` or `2` for `.zt`; the first registered when none is given).
    /// A label no format has, or one given for a path whose format has no variants, is an
    /// error.
    pub fn for_output(path: &Path, variant: Option<&str>) -> Result<Format> {
        if let Some(label) = variant {
            Format::variant_labelled(label)?;
        }
        Format::from_path(path)?.variant_for(variant, &path.display().to_string())
    }

    /// This format, or the one of its family whose [`Variant`](super::Variant) label is
    /// `variant` (`Format::Zt.with_variant(Some("2"))` is zTensor 2).
    pub fn with_variant(self, variant: Option<&str>) -> Result<Format> {
        let title = self.unit().title;
        self.variant_for(variant, &format!("a {title} file"))
    }

    /// Every format with a variant, and its variant.
    fn variants() -> impl Iterator<Item = (Format, super::Variant)> {
        Format::ALL.iter().filter_map(|f| f.unit().variant.map(|v| (*f, v)))
    }

    /// The variant labelled `label`: an error naming the labels there are when none is.
    fn variant_labelled(label: &str) -> Result<super::Variant> {
        Format::variants().map(|(_, v)| v).find(|v| v.label == label).ok_or_else(|| {
            let family = Format::variants().next().map_or("format", |(_, v)| v.family);
            let labels: Vec<_> = Format::variants().map(|(_, v)| v.label).collect();
            Error::usage(format!("unknown {family} version {label:?} (expected {})", labels.join(" or ")))
        })
    }

    /// [`Format::with_variant`], errors naming what the format was asked for (`subject`).
    fn variant_for(self, variant: Option<&str>, subject: &str) -> Result<Format> {
        let Some(label) = variant else { return Ok(self) };
        let asked = Format::variant_labelled(label)?;
        match self.unit().variant {
            Some(v) if v.family == asked.family => Ok(Format::variants()
                .find(|(_, v)| v.family == asked.family && v.label == label)
                .map_or(self, |(f, _)| f)),
            _ => Err(Error::usage(format!(
                "a {} version was given for {subject}, which is written as {}, not {}",
                asked.family,
                self.unit().title(),
                asked.family
            ))),
        }
    }

    /// Recognise a format from a file's leading bytes (never from its name); a zip archive
    /// is told apart by its entry names, so `bytes` should be the whole file then. When no
    /// format recognises the leading bytes, those whose signature may sit further in (HDF5
    /// after a user block) look there.
    pub fn detect(bytes: &[u8]) -> Result<Format> {
        let names = if bytes.starts_with(ZIP_MAGIC) { Some(crate::zip::entry_names(bytes)?) } else { None };
        let probe = |further| Probe { head: bytes, zip_names: names.as_deref(), further };
        Format::recognise(&probe(Further::None)).or_else(|_| Format::recognise(&probe(Further::Bytes(bytes))))
    }

    /// Recognise the format of a file from its first bytes (and, for a zip archive, its entry
    /// names): for a remote file, a read of its first 64 bytes (and of the
    /// archive's central directory). A small read: the format's reader then reads its index
    /// where the format keeps it, at the start or at the end. When no format recognises the
    /// first bytes, those whose signature may sit further in look there (a few small reads).
    pub fn detect_source(src: &Source) -> Result<Format> {
        let head = src.head(super::DETECT_BYTES)?;
        let names = if head.starts_with(ZIP_MAGIC) { Some(crate::zip::entry_names_in(src)?) } else { None };
        let probe = |further| Probe { head: &head, zip_names: names.as_deref(), further };
        Format::recognise(&probe(Further::None)).or_else(|_| Format::recognise(&probe(Further::Source(src))))
    }

    fn recognise(probe: &Probe<'_>) -> Result<Format> {
        Format::ALL
            .iter()
            .copied()
            .find(|f| (f.unit().recognise)(probe))
            .ok_or_else(|| Error::invalid(Rule::UnknownFormat, "not a file format tensorfile recognises"))
    }

    /// Open `src` as this format. A remote source is read by range: the reader fetches its
    /// index when it opens and a tensor's bytes when one is read.
    pub fn open(self, src: impl Into<Source>) -> Result<Box<dyn FormatReader>> {
        (self.unit().open)(src.into())
    }

    /// Whether this format can store `info`; the error says why not.
    pub fn check_supported(self, info: &TensorInfo) -> Result<()> {
        (self.unit().check_supported)(info)
    }

    /// The order in which a writer of this format best stores `plan` (indices into it).
    pub fn write_order(self, plan: &[TensorInfo]) -> Vec<usize> {
        (self.unit().write_order)(plan)
    }

    /// A streaming writer of this format into `out`, which will receive exactly the tensors
    /// of `plan`, in order.
    pub fn writer<'w>(
        self,
        out: Box<dyn Output + 'w>,
        plan: &[TensorInfo],
        options: &WriteOptions,
    ) -> Result<Box<dyn FormatWriter + 'w>> {
        match self.unit().writer {
            Some(writer) => writer(out, plan, options),
            // The format's own words for why it holds no plain tensors.
            None => {
                Err(self.check_supported(plan.first().unwrap_or(&TensorInfo::blob("", 0))).err().unwrap_or_else(|| {
                    Error::unsupported(format!("tensorfile does not write {} files", self.unit().title))
                }))
            }
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
