//! A quantization as the shells are given it: llama-quantize's options as plain values
//! ([`QuantizeOptions`]), made into a [`QuantizeRequest`] once, here, for the command line and
//! Python alike; and which of them apply on which path ([`QuantizePath`]), a refusal naming
//! the option ([`Hint::Drop`]) for each that does not.

use std::path::{Path, PathBuf};

use super::{KvOverride, QuantizeRequest, QuantizeTarget};
use crate::error::{Error, Hint, JobOption, Result};
use crate::model::quant::GgmlType;

/// llama-quantize's options as given, each a plain value (names, paths, texts), with the
/// defaults of llama-quantize.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QuantizeOptions {
    /// The preset or ggml type (`Q4_K_M`, `Q8_0`, `q4_k`, a file type number).
    pub target: String,
    /// The importance matrix file.
    pub imatrix: Option<PathBuf>,
    /// Importance matrix entries used: those whose name contains one of these.
    pub include_weights: Vec<String>,
    /// Importance matrix entries dropped: those whose name contains one of these.
    pub exclude_weights: Vec<String>,
    /// `REGEX=TYPE` texts, in order (the first whose regex finds a tensor's name gives its
    /// type).
    pub tensor_types: Vec<String>,
    /// A file of `REGEX=TYPE` words separated by white space, read as llama-quantize reads
    /// its `--tensor-type-file`; its entries come after `tensor_types`.
    pub tensor_type_file: Option<PathBuf>,
    /// The output tensor's type (a ggml type name).
    pub output_tensor_type: Option<String>,
    /// The token embeddings' type (a ggml type name).
    pub token_embedding_type: Option<String>,
    /// The output tensor keeps its type.
    pub leave_output_tensor: bool,
    /// No mixture rules.
    pub pure: bool,
    /// `KEY=TYPE:VALUE` texts: keys set in the output.
    pub override_kv: Vec<String>,
    /// Quantize tensors that are quantized already.
    pub allow_requantize: bool,
    /// One output per split of the input.
    pub keep_split: bool,
    /// Layers left out.
    pub prune_layers: Vec<u32>,
    /// Sizes only, nothing written ([`crate::ConvertJob::dry_run`]).
    pub dry_run: bool,
}

impl QuantizeOptions {
    /// Options for `target`, every other one at llama-quantize's default.
    pub fn new(target: impl Into<String>) -> QuantizeOptions {
        QuantizeOptions { target: target.into(), ..QuantizeOptions::default() }
    }

    /// The request these options make, with `include` and `exclude` (globs) picking the
    /// tensors quantized: with a quantization, the selection picks what is quantized, every
    /// tensor is written.
    pub fn request(&self, include: &[String], exclude: &[String]) -> Result<QuantizeRequest> {
        let mut r = QuantizeRequest::new(QuantizeTarget::parse(&self.target)?);
        if self.imatrix.is_none() {
            let given = [
                (JobOption::IncludeWeights, !self.include_weights.is_empty()),
                (JobOption::ExcludeWeights, !self.exclude_weights.is_empty()),
            ];
            if let Some((option, _)) = given.iter().find(|(_, given)| *given) {
                return Err(Error::usage(
                    "importance matrix entries are picked from an importance matrix: none is given",
                )
                .with_hint(Hint::Drop(*option)));
            }
        }
        if !self.include_weights.is_empty() && !self.exclude_weights.is_empty() {
            return Err(Error::usage("importance matrix entries can be included or excluded, not both")
                .with_hint(Hint::Drop(JobOption::ExcludeWeights)));
        }
        r.imatrix = self.imatrix.clone();
        r.imatrix_include = self.include_weights.clone();
        r.imatrix_exclude = self.exclude_weights.clone();
        r.tensor_types =
            self.tensor_types.iter().map(|t| QuantizeRequest::parse_tensor_type(t)).collect::<Result<_>>()?;
        if let Some(path) = &self.tensor_type_file {
            r.tensor_types.extend(read_tensor_type_file(path)?);
        }
        r.output_tensor_type = self.output_tensor_type.as_deref().map(ggml_type).transpose()?;
        r.token_embedding_type = self.token_embedding_type.as_deref().map(ggml_type).transpose()?;
        r.leave_output_tensor = self.leave_output_tensor;
        r.pure = self.pure;
        r.override_kv = self.override_kv.iter().map(|o| KvOverride::parse(o)).collect::<Result<_>>()?;
        r.allow_requantize = self.allow_requantize;
        r.keep_split = self.keep_split;
        r.prune_layers = self.prune_layers.clone();
        r.include = include.to_vec();
        r.exclude = exclude.to_vec();
        Ok(r)
    }
}

/// The entries of a tensor type file as llama-quantize reads them: words separated by white
/// space, each `REGEX=TYPE` (no comments: every word is an entry).
pub fn read_tensor_type_file(path: &Path) -> Result<Vec<(String, GgmlType)>> {
    let text = std::fs::read(path).map_err(|e| Error::from(e).in_file(path))?;
    let text =
        String::from_utf8(text).map_err(|_| Error::usage("a tensor type file that is not UTF-8").in_file(path))?;
    text.split_whitespace().map(|w| QuantizeRequest::parse_tensor_type(w).map_err(|e| e.in_file(path))).collect()
}

fn ggml_type(name: &str) -> Result<GgmlType> {
    GgmlType::from_name(name).ok_or_else(|| Error::usage(format!("{name:?} is not a ggml type")))
}

/// The way a quantization is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantizePath {
    /// A GGUF model into a `.gguf` file, byte for byte as llama-quantize writes it.
    LlamaQuantize,
    /// Any other input or output: one type for every floating tensor of two or more
    /// dimensions (what llama-quantize's `pure` does), the request's tensor types and
    /// importance matrix applied by name.
    OneType,
}

/// What the one-type path cannot honour: the options that need llama.cpp's tensor names and
/// key/values, or its output file.
pub(crate) fn refuse_on_one_type(request: &QuantizeRequest, what: &str) -> Result<()> {
    let given = [
        (JobOption::OutputTensorType, request.output_tensor_type.is_some(), "the output tensor's type"),
        (JobOption::TokenEmbeddingType, request.token_embedding_type.is_some(), "the token embeddings' type"),
        (JobOption::LeaveOutputTensor, request.leave_output_tensor, "leaving the output tensor as it is"),
        (JobOption::OverrideKv, !request.override_kv.is_empty(), "overriding key/values"),
        (JobOption::KeepSplit, request.keep_split, "keeping the input's splits"),
        (JobOption::PruneLayers, !request.prune_layers.is_empty(), "pruning layers"),
    ];
    match given.iter().find(|(_, given, _)| *given) {
        Some((option, _, name)) => Err(Error::usage(format!(
            "{name} applies to quantizing a GGUF model into a .gguf file, as llama-quantize does; {what} is \
             quantized to one type"
        ))
        .with_hint(Hint::Drop(*option))),
        None => Ok(()),
    }
}

/// What the llama-quantize path cannot honour: the conversion's own options that would change
/// llama-quantize's file.
pub(crate) fn refuse_on_llama_quantize(given: &[(JobOption, bool, &str)]) -> Result<()> {
    match given.iter().find(|(_, given, _)| *given) {
        Some((option, _, name)) => Err(Error::usage(format!(
            "{name} does not apply to quantizing a GGUF model into a .gguf file, which is written as \
             llama-quantize writes it (a preset means its mixture there, whatever else is asked)"
        ))
        .with_hint(Hint::Drop(*option))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_picked_without_a_matrix_are_refused_naming_the_option() {
        let mut o = QuantizeOptions::new("Q8_0");
        o.exclude_weights = vec!["attn".into()];
        let err = o.request(&[], &[]).unwrap_err();
        assert_eq!(err.hint(), Some(Hint::Drop(JobOption::ExcludeWeights)));
    }

    #[test]
    fn the_selection_picks_what_is_quantized() {
        let r = QuantizeOptions::new("q4_k").request(&["blk.*".into()], &[]).unwrap();
        assert_eq!(r.include, vec!["blk.*".to_string()]);
        assert!(matches!(r.target, QuantizeTarget::Preset(_)));
    }
}
