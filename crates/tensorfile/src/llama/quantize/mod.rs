//! Planning a quantization as llama.cpp's `llama-quantize` does it: for every tensor of a GGUF
//! model, the ggml type it gets (a preset's mixture rules, the options' overrides, the
//! fallbacks for rows that are not whole blocks, requantizing only when allowed), and the
//! output file's key/values, tensor order and layout, so that a writer that quantizes each
//! tensor's rows as ggml does makes llama-quantize's file byte for byte.
//!
//! [`plan`] takes the input's key/values and tensors ([`QuantizeInput`]), a
//! [`QuantizeRequest`] (a [`Preset`] or one ggml type, and llama-quantize's options) and the
//! [`Imatrix`] when the request names one, and returns a [`QuantizePlan`]. Nothing is
//! quantized here. What llama-quantize refuses (an IQ type without an importance matrix, a
//! quantized input without `allow_requantize`, an importance matrix of the wrong size or with
//! values that are not finite...) the plan refuses, naming the tensor.
//!
//! The reference is llama.cpp as the `llama-cpp-python==0.3.36` sdist vendors it
//! (`src/llama-quant.cpp`, `tools/quantize/quantize.cpp`, `common/imatrix-loader.cpp`).
//! `tests/fixtures/gguf-quantize/` records what it wrote for every preset; the tests compare
//! each plan with those records. Not reproduced: llama.cpp's per-architecture checks of the
//! hyperparameters (a model llama.cpp cannot load is planned anyway), and the quantized bytes.

mod hparams;
mod imatrix;
mod metadata;
mod one_type;
mod options;
mod order;
mod overrides;
mod plan;
mod presets;
mod rules;
mod write;

use std::path::PathBuf;

pub use imatrix::{Imatrix, ImatrixEntry};
pub use one_type::{QuantizeSizes, TensorSize};
pub use options::{QuantizeOptions, QuantizePath, read_tensor_type_file};
pub use overrides::{KvOverride, OverrideValue};
pub use plan::plan;
pub use presets::Preset;
pub(crate) use write::{QuantizeSource, quantize_model};
pub use write::{Quantized, quantize_gguf};

pub(crate) use one_type::one_type;
pub(crate) use options::{refuse_on_llama_quantize, refuse_on_one_type};
pub(crate) use rules::fallback;

use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::formats::{Format, gguf};
use crate::model::MetaValue;
use crate::model::quant::GgmlType;

/// What to quantize to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantizeTarget {
    /// One of llama-quantize's presets, its mixture rules included (unless
    /// [`QuantizeRequest::pure`]).
    Preset(Preset),
    /// Every tensor llama.cpp would quantize to this one type (falling back where its rows
    /// are not whole blocks): llama-quantize's `--pure` with the first preset of that type
    /// ([`Preset::for_type`]), whose file type the output gets.
    Type(GgmlType),
}

impl QuantizeTarget {
    /// What a command line names: a llama-quantize preset, as llama-quantize reads it
    /// (`Q4_K_M`, `q8_0`, `Q4_K` its alias of `Q4_K_M`, a file type number), else a ggml type
    /// that no preset names.
    pub fn parse(text: &str) -> Result<QuantizeTarget> {
        if let Some(p) = Preset::parse(text) {
            return Ok(QuantizeTarget::Preset(p));
        }
        match GgmlType::from_name(text) {
            Some(t) => Ok(QuantizeTarget::Type(t)),
            None => {
                let names: Vec<&str> = Preset::all().iter().map(|p| p.name()).collect();
                Err(Error::usage(format!("{text:?} is no preset or ggml type (presets: {})", names.join(", "))))
            }
        }
    }

    /// The one type every quantized tensor gets: the type itself, or the ggml type a preset
    /// is named after (`Q8_0`, `IQ2_S`, `Q4_K`, `F16`: for llama-quantize `IQ2_S` and `Q4_K`
    /// are mixtures, but asked of a file without llama.cpp's tensor names they mean the type);
    /// `None` for a mixture named after no type (`Q4_K_M`) or `COPY`.
    pub fn single_type(self) -> Option<GgmlType> {
        match self {
            QuantizeTarget::Type(t) => Some(t),
            QuantizeTarget::Preset(p) if p.only_copies() => None,
            QuantizeTarget::Preset(p) => GgmlType::from_name(p.name()),
        }
    }
}

/// A quantization as llama-quantize's command line states it.
#[derive(Debug, Clone)]
pub struct QuantizeRequest {
    /// The preset or the type.
    pub target: QuantizeTarget,
    /// `--imatrix FILE`: the importance matrix, read by the caller ([`Imatrix::read`]) and
    /// given to [`plan`]; the path as given is what the output's `quantize.imatrix.file` says
    /// (its first 127 bytes).
    pub imatrix: Option<PathBuf>,
    /// `--include-weights NAME` (repeatable): use only the importance matrix entries whose
    /// name contains one of these.
    pub imatrix_include: Vec<String>,
    /// `--exclude-weights NAME` (repeatable): drop the entries whose name contains one of
    /// these. Not together with `imatrix_include`.
    pub imatrix_exclude: Vec<String>,
    /// `--tensor-type REGEX=TYPE` (repeatable, in order): a tensor whose name the regex finds
    /// (the first that does) gets the type instead of its mixture's. The regex is lowered to
    /// ASCII lower case, as llama-quantize lowers it; only presets of quantized types use
    /// these.
    pub tensor_types: Vec<(String, GgmlType)>,
    /// `--output-tensor-type TYPE`: `output.weight`'s type (and the token embeddings', when
    /// the model ties them to the output).
    pub output_tensor_type: Option<GgmlType>,
    /// `--token-embedding-type TYPE`: the token embeddings' type.
    pub token_embedding_type: Option<GgmlType>,
    /// `--leave-output-tensor`: `output.weight` keeps its type.
    pub leave_output_tensor: bool,
    /// `--pure`: no mixture rules, every quantizable tensor the preset's type.
    pub pure: bool,
    /// `--override-kv KEY=TYPE:VALUE` (repeatable): keys set in the output after all others
    /// (and read by the rules in place of the input's).
    pub override_kv: Vec<KvOverride>,
    /// `--allow-requantize`: quantize tensors that are quantized already (dequantized first;
    /// llama.cpp warns that this can lose much quality).
    pub allow_requantize: bool,
    /// `--keep-split`: tensors in the input's file order and split, one output per input
    /// split (named as [`split_path`] names them).
    pub keep_split: bool,
    /// `--prune-layers`: the layers left out (the others renumbered from 0, the block count
    /// set to what is left).
    pub prune_layers: Vec<u32>,
    /// Globs (as [`crate::convert::Selection`] reads them) of the tensors that may be quantized; empty:
    /// every tensor. Not an option of llama-quantize: what it leaves out keeps its type.
    pub include: Vec<String>,
    /// Globs of tensors that keep their type.
    pub exclude: Vec<String>,
}

impl QuantizeRequest {
    /// A request for `target` with llama-quantize's defaults for every option.
    pub fn new(target: QuantizeTarget) -> QuantizeRequest {
        QuantizeRequest {
            target,
            imatrix: None,
            imatrix_include: Vec::new(),
            imatrix_exclude: Vec::new(),
            tensor_types: Vec::new(),
            output_tensor_type: None,
            token_embedding_type: None,
            leave_output_tensor: false,
            pure: false,
            override_kv: Vec::new(),
            allow_requantize: false,
            keep_split: false,
            prune_layers: Vec::new(),
            include: Vec::new(),
            exclude: Vec::new(),
        }
    }

    /// A `--tensor-type` argument, `REGEX=TYPE`, as llama-quantize reads it: split at the
    /// first `=`, the type named in any case.
    pub fn parse_tensor_type(text: &str) -> Result<(String, GgmlType)> {
        let bad = |why: &str| Error::usage(format!("bad tensor type {text:?}: {why} (write it REGEX=TYPE)"));
        let (pattern, name) = text.split_once('=').ok_or_else(|| bad("no '='"))?;
        if pattern.is_empty() {
            return Err(bad("no tensor name"));
        }
        if name.is_empty() {
            return Err(bad("no type"));
        }
        let t = GgmlType::from_name(name).ok_or_else(|| bad("not a ggml type"))?;
        Ok((pattern.to_string(), t))
    }
}

/// One tensor of the input.
#[derive(Debug, Clone, PartialEq)]
pub struct InputTensor {
    /// Its name.
    pub name: String,
    /// Its ggml type.
    pub ggml_type: GgmlType,
    /// ggml's `ne` (the fastest dimension first), as the file states it.
    pub ne: Vec<u64>,
    /// Which file of a split model holds it (0 for one file).
    pub split: u16,
    /// Where its data starts in that file (the order `keep_split` writes).
    pub offset: u64,
}

/// What the planner needs of the input model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuantizeInput {
    /// Its key/values, in file order (of the first file of a split model).
    pub metadata: Vec<(String, MetaValue)>,
    /// Its tensors, in any order.
    pub tensors: Vec<InputTensor>,
}

impl QuantizeInput {
    /// The key/values and tensors of an opened GGUF model (one file, or a split model read
    /// as one).
    pub fn from_file(file: &TensorFile) -> Result<QuantizeInput> {
        if file.format() != Format::Gguf {
            return Err(Error::usage(format!("llama-quantize reads GGUF models, not {}", file.format())));
        }
        if let Some(u) = file.unreadable().first() {
            let rule = u.error().rule().unwrap_or(crate::error::Rule::Unsupported);
            return Err(Error::invalid(rule, u.error().detail()).for_tensor(u.name()));
        }
        let mut shards: Vec<PathBuf> = Vec::new();
        let mut tensors = Vec::with_capacity(file.entries().len());
        for (i, e) in file.entries().iter().enumerate() {
            let split = match file.shard_of(i) {
                Some(p) => match shards.iter().position(|s| s == p) {
                    Some(n) => n,
                    None => {
                        shards.push(p.to_path_buf());
                        shards.len() - 1
                    }
                },
                None => 0,
            };
            let split = u16::try_from(split).map_err(|_| Error::unsupported("more than 65535 splits"))?;
            let info = e.info();
            tensors.push(InputTensor {
                name: info.name().to_string(),
                ggml_type: gguf::ggml_type(info).map_err(|err| err.for_tensor(info.name()))?,
                ne: info.shape().iter().rev().copied().collect(),
                split,
                offset: e.storage().offset(),
            });
        }
        Ok(QuantizeInput { metadata: file.summary().metadata, tensors })
    }
}

/// One tensor of the output.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedTensor {
    /// Its name in the output (renumbered when layers are pruned).
    pub name: String,
    /// Its index in [`QuantizeInput::tensors`].
    pub source: usize,
    /// Its type in the input.
    pub from: GgmlType,
    /// Its type in the output (`from`: copied as it is).
    pub to: GgmlType,
    /// ggml's `ne` as written (trailing dimensions of 1 dropped, as ggml counts dimensions).
    pub ne: Vec<u64>,
    /// Where its data starts, from the start of the data region.
    pub offset: u64,
    /// Its bytes in the output.
    pub nbytes: u64,
    /// The type the rules chose before the fallback for rows that are not whole blocks
    /// replaced it.
    pub fell_back_from: Option<GgmlType>,
    /// The importance matrix entry whose weights quantize it (by name).
    pub imatrix_entry: Option<Vec<u8>>,
}

impl PlannedTensor {
    /// Whether its rows are quantized (or converted), not copied.
    pub fn quantized(&self) -> bool {
        self.from != self.to
    }
}

/// One output file.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedFile {
    /// Its key/values, in the order written.
    pub metadata: Vec<(String, MetaValue)>,
    /// Its tensors, in the order written.
    pub tensors: Vec<PlannedTensor>,
    /// Where the data region starts (the header padded to the alignment).
    pub data_offset: u64,
    /// The alignment of the data region and of every tensor: the file's `general.alignment`
    /// (a power of two), else 32, ggml's default.
    pub alignment: u64,
    /// `(split number from 0, split count)` of a split output.
    pub split: Option<(u16, u16)>,
}

impl PlannedFile {
    /// The bytes before the data: GGUF version 3's header, the key/values, the tensor infos,
    /// and zeros up to [`PlannedFile::data_offset`].
    pub fn header(&self) -> Result<Vec<u8>> {
        let infos: Vec<gguf::IndexTensor<'_>> = self
            .tensors
            .iter()
            .map(|t| gguf::IndexTensor { name: &t.name, ne: &t.ne, ggml_type: t.to.id(), offset: t.offset })
            .collect();
        gguf::encode_padded_index(&self.metadata, &infos, self.alignment)
    }

    /// The file's size: its data offset and every tensor, each padded to the alignment.
    pub fn size(&self) -> u64 {
        self.tensors
            .last()
            .map_or(self.data_offset, |t| self.data_offset + t.offset + t.nbytes.next_multiple_of(self.alignment))
    }
}

/// What llama-quantize would write.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantizePlan {
    /// The output files: one, or one per input split with `keep_split`.
    pub files: Vec<PlannedFile>,
    /// `general.file_type` as written (before `--override-kv`).
    pub file_type: u32,
}

/// The name of split `no` (from 0) of `count` made from `prefix`, as llama.cpp names them:
/// `<prefix>-00001-of-00003.gguf`.
pub fn split_path(prefix: &str, no: u16, count: u16) -> String {
    crate::formats::gguf::split::part_name(prefix, no, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensor_types_parse_as_llama_quantize_reads_them() {
        let parsed = QuantizeRequest::parse_tensor_type("ATTN_V=q8_0").unwrap();
        assert_eq!(parsed, ("ATTN_V".to_string(), GgmlType::Q8_0));
        assert_eq!(QuantizeRequest::parse_tensor_type(r"a=b=Q4_K").unwrap_err().rule(), None);
        for bad in ["attn_v", "=q8_0", "attn_v=", "attn_v=q9_0"] {
            assert!(QuantizeRequest::parse_tensor_type(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn splits_are_named_as_llama_cpp_names_them() {
        assert_eq!(split_path("out/m", 0, 3), "out/m-00001-of-00003.gguf");
    }
}
