//! llama.cpp's toolchain, as its tools do it, byte for byte: `llama-quantize` (its presets,
//! the mixture rules of `src/llama-quant.cpp`, its options, importance matrices; planned in
//! [`plan`], written by [`quantize_gguf`]) and `llama-gguf-split` (the parts of a split model
//! and the merge, `split.rs`).
//!
//! Its place among the layers: above the opened file, the GGUF unit (`formats::gguf`: the
//! format's facts, its reader and writer) and the conversion machinery (`convert`: any reader
//! into any writer, quantizing with the numerics of `model::quant`), below the jobs that
//! decide when a GGUF model is written as llama.cpp writes it (`ConvertJob`). Outside this
//! module and the GGUF unit, no code names the GGUF format: a job compares its formats with
//! `MODEL_FORMAT` to know whether llama.cpp's tools would read or write them.

pub(crate) mod hf;
mod quantize;
mod split;

use crate::formats::Format;

pub(crate) use hf::is_checkpoint;
pub use hf::{
    CheckpointConverted, CheckpointOptions, OutType, OutputSplit, Tokenizer, Tokenizers, convert_and_quantize,
    convert_checkpoint,
};
pub use quantize::{
    Imatrix, ImatrixEntry, InputTensor, KvOverride, OverrideValue, PlannedFile, PlannedTensor, Preset, QuantizeInput,
    QuantizeOptions, QuantizePath, QuantizePlan, QuantizeRequest, QuantizeSizes, QuantizeTarget, Quantized, TensorSize,
    plan, quantize_gguf, read_tensor_type_file, split_path,
};
pub(crate) use quantize::{QuantizeSource, one_type, quantize_model, refuse_on_llama_quantize, refuse_on_one_type};
pub(crate) use split::{SplitRequest, split_asked, write_gguf};

/// The format llama.cpp's tools read and write: a job writing it goes through this toolchain.
pub(crate) const MODEL_FORMAT: Format = Format::Gguf;
