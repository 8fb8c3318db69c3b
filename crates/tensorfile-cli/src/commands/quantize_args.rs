//! `convert --quantize`: the options of llama.cpp's `llama-quantize`, as the conversion job's
//! quantize request.

use std::path::PathBuf;

use tensorfile::convert::quantize::{KvOverride, QuantizeRequest, QuantizeTarget};
use tensorfile::model::quant::GgmlType;

/// The quantization options of `convert`.
#[derive(clap::Args)]
#[command(next_help_heading = "Quantize (as llama.cpp's llama-quantize)")]
pub struct QuantizeArgs {
    /// Quantize as ggml does, byte for byte. A GGUF model into a .gguf: a llama-quantize preset
    /// (Q4_K_M, Q5_K_S, IQ2_M, MXFP4_MOE...) or type, each tensor's type chosen as
    /// llama-quantize chooses it, the output identical to llama-quantize's. Any other input,
    /// or a zTensor 2 output: one ggml type (Q8_0, Q4_K...) for every floating tensor of two
    /// or more dimensions; rows that are not whole blocks fall back as llama.cpp falls back.
    /// With --quantize, --include and --exclude pick the tensors quantized (the others are
    /// copied as they are).
    #[arg(long, value_name = "PRESET|TYPE")]
    pub quantize: Option<String>,
    /// The importance matrix (llama-imatrix's .gguf or legacy .dat) whose weights steer the
    /// quantizers; the IQ1/IQ2 types and Q2_K_S need one.
    #[arg(long, value_name = "FILE", requires = "quantize")]
    pub imatrix: Option<PathBuf>,
    /// Use only the importance matrix entries whose name contains NAME (repeatable).
    #[arg(long, value_name = "NAME", requires = "imatrix", conflicts_with = "exclude_weights")]
    pub include_weights: Vec<String>,
    /// Leave out the importance matrix entries whose name contains NAME (repeatable).
    #[arg(long, value_name = "NAME", requires = "imatrix")]
    pub exclude_weights: Vec<String>,
    /// Give the tensors whose name REGEX finds this type (repeatable; the first that matches).
    #[arg(long, value_name = "REGEX=TYPE", requires = "quantize")]
    pub tensor_type: Vec<String>,
    /// The type of output.weight.
    #[arg(long, value_name = "TYPE", requires = "quantize")]
    pub output_tensor_type: Option<String>,
    /// The type of the token embeddings.
    #[arg(long, value_name = "TYPE", requires = "quantize")]
    pub token_embedding_type: Option<String>,
    /// Leave output.weight as it is.
    #[arg(long, requires = "quantize")]
    pub leave_output_tensor: bool,
    /// No mixture rules: every quantizable tensor the preset's type.
    #[arg(long, requires = "quantize")]
    pub pure: bool,
    /// Set a key in the output: KEY=TYPE:VALUE, TYPE one of int, float, bool, str (repeatable).
    #[arg(long, value_name = "KEY=TYPE:VALUE", requires = "quantize")]
    pub override_kv: Vec<String>,
    /// Quantize tensors that are quantized already (dequantized first; quality suffers twice).
    #[arg(long, requires = "quantize")]
    pub allow_requantize: bool,
    /// One output per split of a split input, named as llama.cpp names splits.
    #[arg(long, requires = "quantize")]
    pub keep_split: bool,
    /// Leave out these layers (comma-separated numbers), the others renumbered.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', requires = "quantize")]
    pub prune_layers: Vec<u32>,
}

impl QuantizeArgs {
    /// The request, with `include` and `exclude` picking what is quantized; `None` without
    /// --quantize.
    pub fn request(&self, include: &[String], exclude: &[String]) -> tensorfile::Result<Option<QuantizeRequest>> {
        let Some(target) = &self.quantize else { return Ok(None) };
        let mut r = QuantizeRequest::new(QuantizeTarget::parse(target)?);
        r.imatrix = self.imatrix.clone();
        r.imatrix_include = self.include_weights.clone();
        r.imatrix_exclude = self.exclude_weights.clone();
        r.tensor_types =
            self.tensor_type.iter().map(|t| QuantizeRequest::parse_tensor_type(t)).collect::<Result<_, _>>()?;
        r.output_tensor_type = self.output_tensor_type.as_deref().map(ggml_type).transpose()?;
        r.token_embedding_type = self.token_embedding_type.as_deref().map(ggml_type).transpose()?;
        r.leave_output_tensor = self.leave_output_tensor;
        r.pure = self.pure;
        r.override_kv = self.override_kv.iter().map(|o| KvOverride::parse(o)).collect::<Result<_, _>>()?;
        r.allow_requantize = self.allow_requantize;
        r.keep_split = self.keep_split;
        r.prune_layers = self.prune_layers.clone();
        r.include = include.to_vec();
        r.exclude = exclude.to_vec();
        Ok(Some(r))
    }
}

fn ggml_type(name: &str) -> tensorfile::Result<GgmlType> {
    GgmlType::from_name(name).ok_or_else(|| tensorfile::Error::usage(format!("{name:?} is not a ggml type")))
}
