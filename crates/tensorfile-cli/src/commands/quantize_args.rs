//! `convert --quantize`: the options of llama.cpp's `llama-quantize`, as the conversion job's
//! quantize request.

use std::path::PathBuf;

use tensorfile::llama::QuantizeOptions;

/// The quantization options of `convert`.
#[derive(clap::Args)]
#[command(next_help_heading = "Quantize (as llama.cpp's llama-quantize)")]
pub struct QuantizeArgs {
    /// Quantize as ggml does, byte for byte. A GGUF model into a .gguf: a llama-quantize preset
    /// (Q4_K_M, Q5_K_S, IQ2_M, MXFP4_MOE...) or type, each tensor's type chosen as
    /// llama-quantize chooses it (Q4_K is its alias of the Q4_K_M mixture), the output
    /// identical to llama-quantize's; options that would change that file (--dtype, splits,
    /// --rename) are refused. Any other input, or a zTensor 2 output: one ggml type (a preset
    /// named after a type, Q8_0, Q4_K, means that type alone, as --pure does) for every
    /// floating tensor of two or more dimensions, --tensor-type and --imatrix applied by name;
    /// rows that are not whole blocks fall back as llama.cpp falls back; the options that need
    /// llama.cpp's names or file (--output-tensor-type, --token-embedding-type,
    /// --leave-output-tensor, --override-kv, --keep-split, --prune-layers) are refused. With
    /// --quantize, --include and --exclude pick the tensors quantized (the others are copied
    /// as they are).
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
    /// A file of REGEX=TYPE entries separated by white space (as llama-quantize reads it),
    /// applied after the --tensor-type ones.
    #[arg(long, value_name = "FILE", requires = "quantize")]
    pub tensor_type_file: Option<PathBuf>,
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
    /// Write nothing: print each tensor's type and size before and after, and the total.
    #[arg(long, requires = "quantize")]
    pub dry_run: bool,
    /// Leave out these layers (comma-separated numbers), the others renumbered.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', requires = "quantize")]
    pub prune_layers: Vec<u32>,
}

impl QuantizeArgs {
    /// The options as given, for the library to make its request of; `None` without
    /// --quantize.
    pub fn options(&self) -> Option<QuantizeOptions> {
        let target = self.quantize.as_ref()?;
        let mut o = QuantizeOptions::new(target.clone());
        o.imatrix = self.imatrix.clone();
        o.include_weights = self.include_weights.clone();
        o.exclude_weights = self.exclude_weights.clone();
        o.tensor_types = self.tensor_type.clone();
        o.tensor_type_file = self.tensor_type_file.clone();
        o.output_tensor_type = self.output_tensor_type.clone();
        o.token_embedding_type = self.token_embedding_type.clone();
        o.leave_output_tensor = self.leave_output_tensor;
        o.pure = self.pure;
        o.override_kv = self.override_kv.clone();
        o.allow_requantize = self.allow_requantize;
        o.keep_split = self.keep_split;
        o.prune_layers = self.prune_layers.clone();
        o.dry_run = self.dry_run;
        Some(o)
    }
}
