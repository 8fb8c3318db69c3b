//! A Hugging Face model folder as the converter reads it: `config.json` (with the
//! architecture's defaults for what it leaves out, as transformers' `AutoConfig` fills them),
//! `generation_config.json`, and the weights: `model*.safetensors` (sorted by name), or the
//! parts `model.safetensors.index.json` names (sorted), each part's tensors in the order its
//! header lists them. `pytorch_model*.bin` files are read the same way, by the pickle-free
//! reader.

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result, Rule};
use crate::file::TensorFile;
use crate::limits::MAX_SHARDS;

/// The largest `config.json` or `generation_config.json` read (real ones are a few KiB).
const MAX_CONFIG_BYTES: u64 = 16 << 20;

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

/// Read a JSON file of the folder, bounded in size; errors name the file.
pub(crate) fn read_json(path: &Path) -> Result<Value> {
    let size = std::fs::metadata(path).map_err(|e| Error::from(e).in_file(path))?.len();
    if size > MAX_CONFIG_BYTES {
        return Err(Error::invalid(
            Rule::HeaderTooLarge,
            format!("{size} bytes: a configuration file of at most {MAX_CONFIG_BYTES} bytes is read"),
        )
        .in_file(path));
    }
    let text = std::fs::read(path).map_err(|e| Error::from(e).in_file(path))?;
    serde_json::from_slice(&text).map_err(|e| Error::invalid(Rule::BadJson, format!("not JSON: {e}")).in_file(path))
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
            return Err(Error::invalid(Rule::BadJson, "config.json holds no object").in_file(&config_path));
        }
        // The converter ignores a generation config it cannot read.
        let generation_path = dir.join("generation_config.json");
        let generation_config = generation_path.is_file().then(|| read_json(&generation_path).ok()).flatten();
        let names = part_names(dir)?;
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
            tensors.extend(file.entries().iter().enumerate().map(|(index, e)| SourceTensor {
                name: e.info().name().to_string(),
                part,
                index,
            }));
            parts.push(file);
        }
        check_index(dir, &tensors)?;
        Ok(Checkpoint { config, generation_config, parts, tensors })
    }
}

/// The weight files in the converter's order: the parts an index names (sorted), else the
/// `model*.safetensors` files (sorted), else the `pytorch_model*.bin` files.
fn part_names(dir: &Path) -> Result<Vec<String>> {
    for (prefix, suffix, index) in [
        ("model", ".safetensors", "model.safetensors.index.json"),
        ("pytorch_model", ".bin", "pytorch_model.bin.index.json"),
    ] {
        let index_path = dir.join(index);
        if index_path.is_file() {
            let mut names: Vec<String> = weight_map(&index_path)?.into_iter().map(|(_, file)| file).collect();
            names.sort();
            names.dedup();
            return checked_count(names, &index_path);
        }
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map_err(|e| Error::from(e).in_file(dir))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
            .collect();
        if !names.is_empty() {
            names.sort();
            return checked_count(names, dir);
        }
    }
    Ok(Vec::new())
}

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

/// The `weight_map` of an index: (tensor, file) pairs.
fn weight_map(path: &Path) -> Result<Vec<(String, String)>> {
    let index = read_json(path)?;
    let map = index
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| Error::invalid(Rule::MissingField, "no weight_map object").in_file(path))?;
    map.iter()
        .map(|(tensor, file)| match file.as_str() {
            Some(f) => Ok((tensor.clone(), f.to_string())),
            None => {
                Err(Error::invalid(Rule::BadField, format!("weight_map[{tensor:?}] is not a file name")).in_file(path))
            }
        })
        .collect()
}

/// With an index, the tensors the parts hold are exactly those it names (as the converter
/// checks: a part missing is named).
fn check_index(dir: &Path, tensors: &[SourceTensor]) -> Result<()> {
    for index in ["model.safetensors.index.json", "pytorch_model.bin.index.json"] {
        let path = dir.join(index);
        if !path.is_file() {
            continue;
        }
        let mut named: Vec<String> = weight_map(&path)?.into_iter().map(|(t, _)| t).collect();
        let mut held: Vec<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
        named.sort();
        held.sort_unstable();
        if named.iter().map(String::as_str).ne(held.iter().copied()) {
            let missing: Vec<&String> = named.iter().filter(|n| held.binary_search(&n.as_str()).is_err()).collect();
            return Err(Error::invalid(
                Rule::ShardMismatch,
                format!(
                    "the index names {} tensors, the parts hold {}{}",
                    named.len(),
                    held.len(),
                    missing.first().map(|m| format!(" ({m:?} is in none)")).unwrap_or_default()
                ),
            )
            .in_file(&path));
        }
        return Ok(());
    }
    Ok(())
}
