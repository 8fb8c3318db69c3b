//! A Hugging Face model folder as the converter reads it: `config.json` (with the
//! architecture's defaults for what it leaves out, as transformers' `AutoConfig` fills them),
//! `generation_config.json`, and the weights: `model*.safetensors` (sorted by name), or the
//! parts `model.safetensors.index.json` names (sorted), each part's tensors in the order its
//! header lists them. `pytorch_model*.bin` files are read the same way, by the pickle-free
//! reader.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{Error, Result, Rule};
use crate::file::TensorFile;
use crate::file::sets::ShardIndex;
use crate::limits::{MAX_HF_CONFIG_BYTES, MAX_HF_README_BYTES, MAX_HF_TOKENIZER_BYTES, MAX_SHARD_INDEX, MAX_SHARDS};

/// One tensor of the checkpoint: its name, and where it is.
#[derive(Debug, Clone)]
pub(crate) struct SourceTensor {
    /// Its name in the checkpoint (`model.layers.0.self_attn.q_proj.weight`).
    pub name: String,
    /// Which part holds it.
    pub part: usize,
    /// Its index among that part's entries.
    pub index: usize,
}

/// The folder, opened.
pub(crate) struct Checkpoint {
    /// `config.json` as written.
    pub config: Value,
    /// `generation_config.json`, when the folder has a readable one.
    pub generation_config: Option<Value>,
    /// The weight files, opened, in the converter's order.
    pub parts: Vec<TensorFile>,
    /// Every tensor, in the converter's order.
    pub tensors: Vec<SourceTensor>,
}

/// The bound a file of the folder is read under, by its name, and the limit's name: the
/// tokenizer files (`tokenizer.json`, `tokenizer_config.json`, `special_tokens_map.json`,
/// `added_tokens.json`, `tokenizer.model`, `merges.txt`, `tekken.json`, `vocab.json`)
/// [`MAX_HF_TOKENIZER_BYTES`], the model card [`MAX_HF_README_BYTES`], an index
/// [`MAX_SHARD_INDEX`], any other (`config.json`, `generation_config.json`, chat templates)
/// [`MAX_HF_CONFIG_BYTES`].
pub(crate) fn limit_of(path: &Path) -> (u64, &'static str) {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    match name {
        "tokenizer.json"
        | "tokenizer_config.json"
        | "special_tokens_map.json"
        | "added_tokens.json"
        | "tokenizer.model"
        | "merges.txt"
        | "tekken.json"
        | "vocab.json" => (MAX_HF_TOKENIZER_BYTES, "MAX_HF_TOKENIZER_BYTES"),
        "README.md" => (MAX_HF_README_BYTES, "MAX_HF_README_BYTES"),
        n if n.ends_with(".index.json") => (MAX_SHARD_INDEX, "MAX_SHARD_INDEX"),
        _ => (MAX_HF_CONFIG_BYTES, "MAX_HF_CONFIG_BYTES"),
    }
}

/// A file of the folder read whole, refused (`header-too-large`, naming the file and the
/// limit) when it is larger than its bound ([`limit_of`]), whatever its size said when it was
/// opened; errors name the file.
pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let (limit, limit_name) = limit_of(path);
    let too_large = |size: u64| {
        Error::invalid(
            Rule::HeaderTooLarge,
            format!("the file is {size} bytes: at most {limit} bytes of it are read (limit {limit_name})"),
        )
        .in_file(path)
    };
    let file = std::fs::File::open(path).map_err(|e| Error::from(e).in_file(path))?;
    let size = file.metadata().map_err(|e| Error::from(e).in_file(path))?.len();
    if size > limit {
        return Err(too_large(size));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| Error::from(e).in_file(path))?;
    if bytes.len() as u64 > limit {
        // It grew while it was read.
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// JSON bytes of the file `path` parsed: `bad-json`, or `too-deep` past serde_json's
/// nesting limit; errors name the file.
pub(crate) fn parse_json(bytes: &[u8], path: &Path) -> Result<Value> {
    serde_json::from_slice(bytes).map_err(|e| {
        let rule = if e.to_string().contains("recursion limit") { Rule::TooDeep } else { Rule::BadJson };
        Error::invalid(rule, format!("not JSON: {e}")).in_file(path)
    })
}

/// A JSON file of the folder, read under its bound ([`read_bytes`]); errors name the file.
pub(crate) fn read_json(path: &Path) -> Result<Value> {
    parse_json(&read_bytes(path)?, path)
}

impl Checkpoint {
    /// Open the model folder `dir`: its configuration and every weight file.
    pub(crate) fn open(dir: &Path) -> Result<Checkpoint> {
        let config_path = dir.join("config.json");
        if !config_path.is_file() {
            return Err(Error::usage("a Hugging Face model folder has a config.json: none here").in_file(dir));
        }
        let config = read_json(&config_path)?;
        if !config.is_object() {
            return Err(Error::invalid(Rule::BadField, "config.json holds no object").in_file(&config_path));
        }
        // The converter ignores a generation config it cannot read; one past the bound is
        // refused all the same (the converter would read it).
        let generation_path = dir.join("generation_config.json");
        let generation_config = if generation_path.is_file() {
            parse_json(&read_bytes(&generation_path)?, &generation_path).ok()
        } else {
            None
        };
        let (names, index) = part_names(dir)?;
        if names.is_empty() {
            return Err(Error::usage(
                "no weights: a model folder holds model.safetensors, model-0000i-of-0000N.safetensors with \
                 model.safetensors.index.json, or pytorch_model*.bin",
            )
            .in_file(dir));
        }
        let mut parts = Vec::with_capacity(names.len());
        let mut tensors = Vec::new();
        for (part, name) in names.iter().enumerate() {
            let path = dir.join(name);
            if !path.is_file() {
                return Err(Error::invalid(Rule::MissingFile, format!("the weight file {name} is not in the folder"))
                    .in_file(&path));
            }
            let file = TensorFile::open(&path)?;
            if let Some(u) = file.unreadable().first() {
                return Err(Error::invalid(u.error().rule().unwrap_or(Rule::Unsupported), u.error().detail())
                    .for_tensor(u.name())
                    .in_file(&path));
            }
            let start = tensors.len();
            tensors.extend(file.entries().iter().enumerate().map(|(index, e)| SourceTensor {
                name: e.info().name().to_string(),
                part,
                index,
            }));
            if name.ends_with(".safetensors") {
                // gguf-py reads a safetensors part's tensors in name order, not the header's.
                tensors[start..].sort_by(|a, b| a.name.cmp(&b.name));
            }
            parts.push(file);
        }
        check_unique(&names, &tensors, dir)?;
        if let Some((path, weight_map)) = &index {
            check_index(path, weight_map, &names, &tensors)?;
        }
        Ok(Checkpoint { config, generation_config, parts, tensors })
    }
}

/// An index read: its path and its `weight_map` (tensor, file).
type Index = (PathBuf, Vec<(String, String)>);

/// The weight files in the converter's order: the parts an index names (sorted), else the
/// `model*.safetensors` files (sorted), else the `pytorch_model*.bin` files; and the index
/// when they come from one.
fn part_names(dir: &Path) -> Result<(Vec<String>, Option<Index>)> {
    for (prefix, suffix, index) in [
        ("model", ".safetensors", "model.safetensors.index.json"),
        ("pytorch_model", ".bin", "pytorch_model.bin.index.json"),
    ] {
        let index_path = dir.join(index);
        if index_path.is_file() {
            let map = weight_map(&index_path)?;
            let mut names: Vec<String> = map.iter().map(|(_, file)| file.clone()).collect();
            names.sort();
            names.dedup();
            return Ok((checked_count(names, &index_path)?, Some((index_path, map))));
        }
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map_err(|e| Error::from(e).in_file(dir))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
            .collect();
        if !names.is_empty() {
            names.sort();
            return Ok((checked_count(names, dir)?, None));
        }
    }
    Ok((Vec::new(), None))
}

/// The weight files, at most [`MAX_SHARDS`] of them, each a name in the folder.
fn checked_count(names: Vec<String>, what: &Path) -> Result<Vec<String>> {
    if names.len() > MAX_SHARDS {
        return Err(Error::invalid(
            Rule::TooManyEntries,
            format!("{} weight files (at most {MAX_SHARDS} are read)", names.len()),
        )
        .in_file(what));
    }
    for name in &names {
        if name.contains(['/', '\\']) || name.starts_with('.') {
            return Err(Error::invalid(Rule::UnsafePath, format!("weight file {name:?} is not a name in the folder"))
                .in_file(what));
        }
    }
    Ok(names)
}

/// The `weight_map` of an index, read under its bound by the sharded-checkpoint index reader
/// ([`ShardIndex::parse`]): (tensor, file) pairs.
fn weight_map(path: &Path) -> Result<Vec<(String, String)>> {
    let bytes = read_bytes(path)?;
    Ok(ShardIndex::parse(&bytes).map_err(|e| e.in_file(path))?.weight_map)
}

/// No tensor is in two weight files (the converter would keep the last one read silently):
/// refused, naming both.
fn check_unique(names: &[String], tensors: &[SourceTensor], dir: &Path) -> Result<()> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::with_capacity(tensors.len());
    for t in tensors {
        if let Some(first) = seen.insert(t.name.as_str(), t.part) {
            let file = |part: usize| names.get(part).map_or("?", String::as_str);
            return Err(Error::invalid(
                Rule::DuplicateName,
                format!("the tensor is in two weight files, {} and {}", file(first), file(t.part)),
            )
            .for_tensor(&t.name)
            .in_file(dir.join(file(t.part))));
        }
    }
    Ok(())
}

/// With an index, the tensors the parts hold are exactly those it names, as the converter
/// checks: a tensor it names that its part lacks, or one a part holds that it does not name,
/// is refused, naming the tensor and the part.
fn check_index(path: &Path, weight_map: &[(String, String)], names: &[String], tensors: &[SourceTensor]) -> Result<()> {
    let held: std::collections::HashMap<&str, usize> = tensors.iter().map(|t| (t.name.as_str(), t.part)).collect();
    let named: std::collections::HashMap<&str, &str> =
        weight_map.iter().map(|(t, f)| (t.as_str(), f.as_str())).collect();
    let mismatch =
        |tensor: &str, what: String| Err(Error::invalid(Rule::ShardMismatch, what).for_tensor(tensor).in_file(path));
    for (tensor, file) in weight_map {
        if !held.contains_key(tensor.as_str()) {
            return mismatch(tensor, format!("the index puts the tensor in {file}, which does not hold it"));
        }
    }
    for t in tensors {
        if !named.contains_key(t.name.as_str()) {
            let file = names.get(t.part).map_or("?", String::as_str);
            return mismatch(&t.name, format!("{file} holds the tensor, which the index does not name"));
        }
    }
    Ok(())
}
