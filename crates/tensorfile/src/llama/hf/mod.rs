//! Hugging Face checkpoints into the GGUF file llama.cpp's `convert_hf_to_gguf.py` writes, byte
//! for byte, without Python: the checkpoint's folder read (`checkpoint.rs`), its architecture
//! as data (`arch.rs`: names, configuration defaults, tensor names), the hyperparameters'
//! key/values (`params.rs`), the metadata gguf-py's `Metadata` derives (`metadata.rs`), the
//! vocabulary (`spm.rs`: SentencePiece), and the tensors written through the GGUF unit
//! (`write.rs`).
//!
//! The reference is llama.cpp as the `llama-cpp-python==0.3.36` sdist vendors it
//! (`convert_hf_to_gguf.py`, `conversion/`, `gguf-py/gguf/metadata.py`, `vocab.py`);
//! `tests/fixtures/hf-gguf/` records what it wrote.

mod arch;
mod bpe;
mod checkpoint;
mod metadata;
mod params;
mod parts;
mod plan;
mod quantized;
mod rope;
pub(crate) mod spm;
mod tokenizer;
mod write;

use std::path::Path;

use serde_json::Value;

use crate::convert::Progress;
use crate::error::Result;
use crate::model::{MetaValue, Number};

pub use parts::OutputSplit;
pub use quantized::convert_and_quantize;
pub use tokenizer::{Tokenizer, Tokenizers};
pub use write::OutType;

/// How a checkpoint is converted: the converter's `--outtype` and `--vocab-only`, and the
/// tokenizers library a BPE vocabulary needs.
#[derive(Debug, Clone, Default)]
pub struct CheckpointOptions {
    /// How the tensors are stored.
    pub outtype: OutType,
    /// Write the vocabulary and the key/values alone, no tensor.
    pub vocab_only: bool,
    /// Hugging Face's tokenizers library, for a vocabulary of `tokenizer.json` alone (BPE);
    /// `None`: such a checkpoint is refused.
    pub tokenizers: Option<&'static dyn Tokenizers>,
    /// `--metadata FILE`: a JSON object of `general.*` keys set over what the folder says.
    pub metadata: Option<std::path::PathBuf>,
    /// `--model-name`: the model's name (`general.name`).
    pub model_name: Option<String>,
    /// `--fp8-as-q8`: the weights of an FP8 checkpoint, once dequantized, stored as Q8_0.
    pub fp8_as_q8: bool,
    /// `--split-max-tensors`, `--split-max-size`, `--no-tensor-first-split`: the output cut
    /// into parts as the converter cuts it.
    pub split: OutputSplit,
}

/// ggml's quantization version, which the converter writes (`general.quantization_version`).
const QUANTIZATION_VERSION: u32 = 2;

/// What a conversion of a checkpoint wrote.
#[derive(Debug, Clone)]
pub struct CheckpointConverted {
    /// llama.cpp's name of the architecture.
    pub architecture: String,
    /// The file type the tensors were stored as.
    pub outtype: OutType,
    /// (name, ggml type) of every tensor written, in file order.
    pub tensors: Vec<(String, crate::model::quant::GgmlType)>,
    /// Bytes of tensor data written.
    pub bytes: u64,
    /// The files written: the output, or the parts of its split in order.
    pub files: Vec<std::path::PathBuf>,
    /// The parts of an earlier split write to the same output that this one replaced.
    pub removed: Vec<std::path::PathBuf>,
}

/// The parameter counts gguf-py's writer makes of the tensors it holds: every element, those
/// of a mixture's experts (`_exps.` tensors of three dimensions: per expert) and the others,
/// and the experts' mean count.
struct ParameterCounts {
    total: i64,
    shared: i64,
    expert: i64,
    expert_count: u64,
}

impl ParameterCounts {
    fn of(planned: &[plan::Planned]) -> ParameterCounts {
        let (mut total, mut shared, mut expert, mut expert_sum, mut expert_tensors) = (0u64, 0u64, 0u64, 0u64, 0u64);
        for p in planned {
            let shape = p.info.shape();
            let size: u64 = shape.iter().product();
            let name = p.info.name();
            match shape.len() {
                3.. if name.contains("_exps.") => {
                    let count = if name.contains(".bias") { shape[shape.len() - 2] } else { shape[shape.len() - 3] };
                    expert += size.checked_div(count).unwrap_or(0);
                    expert_sum += count;
                    expert_tensors += 1;
                }
                _ => shared += size,
            }
            total += size;
        }
        let signed = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        ParameterCounts {
            total: signed(total),
            shared: signed(shared),
            expert: signed(expert),
            expert_count: expert_sum.checked_div(expert_tensors).unwrap_or(0),
        }
    }
}

/// The vocabulary's key/values as the architecture's converter class writes them: SentencePiece
/// when the folder has a `tokenizer.model`, else BPE from `tokenizer.json` (which needs the
/// tokenizers library).
fn vocabulary(
    dir: &Path,
    hparams: &Value,
    family: arch::Family,
    options: &CheckpointOptions,
) -> Result<Vec<(String, MetaValue)>> {
    let llama = family == arch::Family::Llama;
    if family.is_gemma() && (family == arch::Family::Gemma2 || dir.join("tokenizer.model").is_file()) {
        // `_set_vocab_sentencepiece`, then `add_add_space_prefix(False)`, last.
        let mut kvs = spm::sentencepiece_vocab_kvs(dir, hparams, false)?;
        kvs.retain(|(k, _)| k != "tokenizer.ggml.add_space_prefix");
        kvs.push(("tokenizer.ggml.add_space_prefix".into(), MetaValue::Bool(false)));
        return Ok(kvs);
    }
    if family == arch::Family::Phi3 {
        // `Phi3MiniModel.set_vocab`: SentencePiece, no `add_space_prefix`.
        return spm::sentencepiece_vocab_kvs(dir, hparams, false);
    }
    let sentencepiece_first = !matches!(family, arch::Family::Text | arch::Family::Gemma3);
    if sentencepiece_first && (dir.join("tokenizer.model").is_file() || !dir.join("tokenizer.json").is_file()) {
        return spm::sentencepiece_vocab_kvs(dir, hparams, llama);
    }
    let Some(tokenizers) = options.tokenizers else {
        return Err(crate::error::Error::unsupported(
            "a BPE vocabulary (tokenizer.json) needs Hugging Face's tokenizers library, which this build was not given",
        )
        .in_file(dir.join("tokenizer.json")));
    };
    bpe::gpt2_vocab_kvs(dir, hparams, tokenizers, llama)
}

/// The vocabulary's real size, as Gemma 3's `modify_tensors` counts it: the SentencePiece
/// tokens, else `tokenizer.json`'s vocabulary and added tokens.
fn vocab_len(dir: &Path, hparams: &serde_json::Map<String, Value>) -> Result<Option<u64>> {
    if dir.join("tokenizer.model").is_file() {
        return Ok(Some(spm::vocab_len(dir, &Value::Object(hparams.clone()))? as u64));
    }
    let path = dir.join("tokenizer.json");
    let json = spm::read_json(&path)?.ok_or_else(|| {
        crate::error::Error::invalid(crate::error::Rule::MissingFile, "no tokenizer.model nor tokenizer.json")
            .in_file(&path)
    })?;
    let count =
        |v: Option<&Value>| v.map_or(0, |v| v.as_object().map_or(0, |m| m.len()).max(v.as_array().map_or(0, Vec::len)));
    Ok(Some((count(json.pointer("/model/vocab")) + count(json.get("added_tokens"))) as u64))
}

/// An embedding model's pooling (sentence-transformers' `modules.json`, `classifier_pooling`)
/// and a Qwen 3 reranker's head are written by the converter in ways not reproduced yet:
/// refused rather than written otherwise.
fn refuse_embedding_or_reranker(dir: &Path, hparams: &serde_json::Map<String, Value>, config: &Value) -> Result<()> {
    let refuse =
        |what: &str| Err(crate::error::Error::unsupported(format!("{what} is not converted yet")).in_file(dir));
    if dir.join("modules.json").is_file() || hparams.get("classifier_pooling").is_some_and(|v| !v.is_null()) {
        return refuse("an embedding model's pooling");
    }
    // The model card, read within its limit (one that cannot be read says nothing here).
    let card = checkpoint::read_bytes(&dir.join("README.md")).unwrap_or_default();
    let readme = String::from_utf8_lossy(&card).to_lowercase();
    let hints = [
        dir.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default(),
        hparams.get("_name_or_path").and_then(Value::as_str).unwrap_or_default().to_lowercase(),
        hparams.get("model_type").and_then(Value::as_str).unwrap_or_default().to_lowercase(),
        arch::class_of(config).unwrap_or_default().to_lowercase(),
    ];
    let reranker = readme.contains("# qwen3-reranker")
        || readme.contains("# qwen3-vl-reranker")
        || hints.iter().any(|h| h.contains("qwen3-reranker") || h.contains("qwen3-vl-reranker"))
        || hints[3].contains("sequenceclassification");
    if reranker {
        return refuse("a reranker's classification head");
    }
    Ok(())
}

/// The hyperparameters every architecture's tensors are shaped by, which a checkpoint's
/// `config.json` states (transformers always writes them): the layer count, the hidden size
/// and the head count, at the top or in `text_config`. One missing is refused, rather than
/// taken from transformers' defaults as the converter takes it (and a file written whose
/// keys do not fit its tensors).
fn require_shape_keys(config: &Value) -> Result<()> {
    let text = config.get("text_config").filter(|v| v.is_object());
    let stated = |k: &str| config.get(k).or_else(|| text.and_then(|t| t.get(k))).is_some_and(|v| !v.is_null());
    let wanted: [(&str, &[&str]); 3] = [
        ("the layer count", &["num_hidden_layers", "n_layers", "n_layer", "num_layers"]),
        ("the hidden size", &["hidden_size", "n_embd", "d_model"]),
        ("the head count", &["num_attention_heads", "n_head", "n_heads"]),
    ];
    for (what, keys) in wanted {
        if !keys.iter().any(|k| stated(k)) {
            return Err(crate::error::Error::invalid(
                crate::error::Rule::MissingField,
                format!("no {} ({what}, which the tensors are shaped by)", keys[0]),
            ));
        }
    }
    Ok(())
}

/// Whether `dir` is a Hugging Face model folder (a folder holding `config.json`).
pub(crate) fn is_checkpoint(dir: &Path) -> bool {
    dir.is_dir() && dir.join("config.json").is_file()
}

/// A checkpoint read and planned as the converter writes it: its tensors in the converter's
/// order with their types, and the key/values.
struct Prepared {
    dir: std::path::PathBuf,
    checkpoint: checkpoint::Checkpoint,
    planned: Vec<plan::Planned>,
    kvs: Vec<(String, MetaValue)>,
    architecture: &'static str,
    outtype: OutType,
}

/// Read the checkpoint in `dir` and plan its file as the converter writes it with `options`.
fn prepare(dir: &Path, options: &CheckpointOptions) -> Result<Prepared> {
    let checkpoint = checkpoint::Checkpoint::open(dir)?;
    let config_path = dir.join("config.json");
    let arch = arch::architecture_of(&checkpoint.config).map_err(|e| e.in_file(&config_path))?;
    require_shape_keys(&checkpoint.config).map_err(|e| e.in_file(&config_path))?;
    let hparams = arch.hparams(&checkpoint.config);
    if arch.family == arch::Family::Qwen {
        refuse_embedding_or_reranker(dir, &hparams, &checkpoint.config)?;
    }
    let outtype = match options.outtype {
        OutType::Auto => OutType::guessed(&checkpoint),
        given => given,
    };
    let (matrices, file_type) = outtype.resolved();
    // An MXFP4 checkpoint written as floats is MXFP4_MOE (its experts stay MXFP4).
    let file_type = plan::gpt_oss::file_type(&hparams, file_type);
    let vocab_rows = if arch.trim_embeddings { vocab_len(dir, &hparams)? } else { None };
    let mut planned = plan::plan(&checkpoint, arch, &hparams, matrices, vocab_rows, options.fp8_as_q8)?;
    if options.vocab_only {
        if options.split.is_asked() {
            return Err(crate::error::Error::usage(
                "a vocabulary alone is written as one file: it has no tensors to split",
            ));
        }
        // Nothing counted, so no size label either.
        planned.clear();
    }
    let counts = ParameterCounts::of(&planned);
    let block_count = ["n_layers", "num_hidden_layers", "n_layer", "num_layers"]
        .iter()
        .find_map(|k| hparams.get(*k).and_then(Value::as_u64))
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| crate::error::Error::usage("config.json has no layer count").in_file(&config_path))?;
    let given = metadata::Given { metadata: options.metadata.as_deref(), model_name: options.model_name.as_deref() };
    let meta = metadata::derive(
        dir,
        &checkpoint.config,
        checkpoint.generation_config.as_ref(),
        (counts.total, counts.shared, counts.expert, counts.expert_count),
        &given,
    )?;
    let mut kvs: Vec<(String, MetaValue)> = vec![("general.architecture".into(), MetaValue::Text(arch.name.into()))];
    if !options.vocab_only {
        // Those the converter adds as it makes its tensors, which it does first.
        kvs.extend(plan::generated_kvs(arch, &hparams).map_err(|e| e.in_file(&config_path))?);
    }
    kvs.push(("general.type".into(), MetaValue::Text("model".into())));
    kvs.extend(meta.to_kvs());
    kvs.extend(
        params::Params::new(arch, &hparams).text_model(block_count, file_type).map_err(|e| e.in_file(&config_path))?,
    );
    kvs.push(("general.quantization_version".into(), MetaValue::Number(Number::U32(QUANTIZATION_VERSION))));
    kvs.extend(vocabulary(dir, &Value::Object(hparams.clone()), arch.family, options)?);
    Ok(Prepared { dir: dir.to_path_buf(), checkpoint, planned, kvs, architecture: arch.name, outtype })
}

impl Prepared {
    /// What was converted, the files written being `written`.
    fn converted(&self, written: write::Written) -> CheckpointConverted {
        let tensors = self
            .planned
            .iter()
            .map(|p| {
                let t = match p.info.layout().quant() {
                    Some(crate::model::quant::Quant::Ggml(t)) => *t,
                    _ => crate::model::quant::GgmlType::for_dtype(p.info.dtype())
                        .unwrap_or(crate::model::quant::GgmlType::F32),
                };
                (p.info.name().to_string(), t)
            })
            .collect();
        CheckpointConverted {
            architecture: self.architecture.to_string(),
            outtype: self.outtype,
            tensors,
            bytes: written.bytes,
            files: written.files,
            removed: written.removed,
        }
    }
}

/// Convert the Hugging Face model folder `dir` into the GGUF file `dest`, as
/// `convert_hf_to_gguf.py DIR --outfile DEST --outtype OUTTYPE` writes it.
pub fn convert_checkpoint(
    dir: &Path,
    dest: &Path,
    options: &CheckpointOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<CheckpointConverted> {
    let prepared = prepare(dir, options)?;
    let kvs = prepared.kvs.clone();
    let written = write::write(&prepared.checkpoint, &prepared.planned, kvs, dest, options.split, progress)?;
    Ok(prepared.converted(written))
}
