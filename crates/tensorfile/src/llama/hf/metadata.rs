//! The model's descriptive metadata (`general.*`) as llama.cpp's `convert_hf_to_gguf.py` writes
//! it through gguf-py's `Metadata`: the name, organization, base name, fine-tune, version and
//! size label guessed from the model id (`config.json`'s `_name_or_path`, then the folder's
//! name), the model card's values (`model_card.rs`: read first, so they win), the recommended
//! sampling settings of `generation_config.json`, and the converter's own fallbacks (the
//! folder's name, a size label from the parameter counts).
//!
//! Text handling follows Python's `str` methods. For ASCII it is exact. Beyond ASCII:
//! digits (`\d`, `isdecimal`) are ASCII digits only (Python also takes other decimal digits);
//! case-insensitive matching folds ASCII letters plus the four letters Python's `re` folds onto
//! them (`İ`, `ı`, `ſ`, the Kelvin sign); `isalpha` is Rust's `char::is_alphabetic` (which also
//! takes letter numbers and combining vowel signs); `islower`, `isupper`, the cased test and the
//! upper/lower mappings are Rust's (Unicode properties of Rust's Unicode version, where Python
//! 3.11 uses Unicode 14); titlecasing uses the upper mapping with Python's exceptions (the
//! digraphs, `ŉ`, Georgian, Greek with ypogegrammeni) written out.

use std::path::{Component, Path};

use serde_json::{Map, Value};

mod model_card;
mod names;

use crate::error::{Error, Result};
use crate::model::{MetaValue, Number, TypedArray};
use model_card::{Source, push_sources};
pub(crate) use names::{NameComponents, id_to_title, name_components, size_label};

/// The metadata the converter writes under `general.*`, each field written only when set (and,
/// for text and lists, not empty: gguf-py's writer skips empty strings and arrays).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ModelMetadata {
    /// `general.sampling.sequence`: the sampler order.
    pub(crate) sampling_sequence: Option<String>,
    /// `general.sampling.top_k` (`int32`).
    pub(crate) sampling_top_k: Option<i32>,
    /// `general.sampling.top_p` (`float32`).
    pub(crate) sampling_top_p: Option<f32>,
    /// `general.sampling.min_p` (`float32`).
    pub(crate) sampling_min_p: Option<f32>,
    /// `general.sampling.xtc_probability` (`float32`).
    pub(crate) sampling_xtc_probability: Option<f32>,
    /// `general.sampling.xtc_threshold` (`float32`).
    pub(crate) sampling_xtc_threshold: Option<f32>,
    /// `general.sampling.temp` (`float32`).
    pub(crate) sampling_temp: Option<f32>,
    /// `general.sampling.penalty_last_n` (`int32`).
    pub(crate) sampling_penalty_last_n: Option<i32>,
    /// `general.sampling.penalty_repeat` (`float32`).
    pub(crate) sampling_penalty_repeat: Option<f32>,
    /// `general.sampling.mirostat` (`int32`).
    pub(crate) sampling_mirostat: Option<i32>,
    /// `general.sampling.mirostat_tau` (`float32`).
    pub(crate) sampling_mirostat_tau: Option<f32>,
    /// `general.sampling.mirostat_eta` (`float32`).
    pub(crate) sampling_mirostat_eta: Option<f32>,
    /// `general.name`: always set by [`derive`] (possibly empty, and then not written).
    pub(crate) name: Option<String>,
    /// `general.author`.
    pub(crate) author: Option<String>,
    /// `general.version`.
    pub(crate) version: Option<String>,
    /// `general.organization`.
    pub(crate) organization: Option<String>,
    /// `general.finetune`.
    pub(crate) finetune: Option<String>,
    /// `general.basename`.
    pub(crate) basename: Option<String>,
    /// `general.description`.
    pub(crate) description: Option<String>,
    /// `general.quantized_by`.
    pub(crate) quantized_by: Option<String>,
    /// `general.size_label`.
    pub(crate) size_label: Option<String>,
    /// `general.license`: the licence's text, a list of licences already joined by `,`.
    pub(crate) license: Option<String>,
    /// `general.license.name`.
    pub(crate) license_name: Option<String>,
    /// `general.license.link`.
    pub(crate) license_link: Option<String>,
    /// `general.url`.
    pub(crate) url: Option<String>,
    /// `general.doi`.
    pub(crate) doi: Option<String>,
    /// `general.uuid`.
    pub(crate) uuid: Option<String>,
    /// `general.repo_url`.
    pub(crate) repo_url: Option<String>,
    /// `general.source.url`.
    pub(crate) source_url: Option<String>,
    /// `general.source.doi`.
    pub(crate) source_doi: Option<String>,
    /// `general.source.uuid`.
    pub(crate) source_uuid: Option<String>,
    /// `general.source.repo_url`.
    pub(crate) source_repo_url: Option<String>,
    /// `general.base_model.count` and `general.base_model.{i}.*`: the model card's base models
    /// (`None`: not written; an empty list writes the count 0).
    pub(crate) base_models: Option<Vec<Source>>,
    /// `general.dataset.count` and `general.dataset.{i}.*`: the model card's datasets.
    pub(crate) datasets: Option<Vec<Source>>,
    /// `general.tags` (an array of strings; empty: not written).
    pub(crate) tags: Vec<String>,
    /// `general.languages` (an array of strings; empty: not written).
    pub(crate) languages: Vec<String>,
}

impl ModelMetadata {
    /// The key/value pairs in the order, and with the GGUF types, that gguf-py's
    /// `set_gguf_meta_model` writes them: strings as `Text`, `int32`/`float32` numbers, string
    /// arrays as typed `Text` arrays; empty strings and empty arrays left out.
    pub(crate) fn to_kvs(&self) -> Vec<(String, MetaValue)> {
        let mut kvs = Vec::new();
        self.sampling_kvs(&mut kvs);
        self.text_kvs(&mut kvs);
        push_sources(&mut kvs, "base_model", self.base_models.as_deref());
        push_sources(&mut kvs, "dataset", self.datasets.as_deref());
        push_texts(&mut kvs, "general.tags", &self.tags);
        push_texts(&mut kvs, "general.languages", &self.languages);
        kvs
    }

    /// The `general.sampling.*` pairs.
    fn sampling_kvs(&self, kvs: &mut Vec<(String, MetaValue)>) {
        push_text(kvs, "general.sampling.sequence", &self.sampling_sequence);
        push_i32(kvs, "general.sampling.top_k", self.sampling_top_k);
        push_f32(kvs, "general.sampling.top_p", self.sampling_top_p);
        push_f32(kvs, "general.sampling.min_p", self.sampling_min_p);
        push_f32(kvs, "general.sampling.xtc_probability", self.sampling_xtc_probability);
        push_f32(kvs, "general.sampling.xtc_threshold", self.sampling_xtc_threshold);
        push_f32(kvs, "general.sampling.temp", self.sampling_temp);
        push_i32(kvs, "general.sampling.penalty_last_n", self.sampling_penalty_last_n);
        push_f32(kvs, "general.sampling.penalty_repeat", self.sampling_penalty_repeat);
        push_i32(kvs, "general.sampling.mirostat", self.sampling_mirostat);
        push_f32(kvs, "general.sampling.mirostat_tau", self.sampling_mirostat_tau);
        push_f32(kvs, "general.sampling.mirostat_eta", self.sampling_mirostat_eta);
    }

    /// The text pairs, from `general.name` to `general.source.repo_url`.
    fn text_kvs(&self, kvs: &mut Vec<(String, MetaValue)>) {
        let texts: [(&str, &Option<String>); 20] = [
            ("general.name", &self.name),
            ("general.author", &self.author),
            ("general.version", &self.version),
            ("general.organization", &self.organization),
            ("general.finetune", &self.finetune),
            ("general.basename", &self.basename),
            ("general.description", &self.description),
            ("general.quantized_by", &self.quantized_by),
            ("general.size_label", &self.size_label),
            ("general.license", &self.license),
            ("general.license.name", &self.license_name),
            ("general.license.link", &self.license_link),
            ("general.url", &self.url),
            ("general.doi", &self.doi),
            ("general.uuid", &self.uuid),
            ("general.repo_url", &self.repo_url),
            ("general.source.url", &self.source_url),
            ("general.source.doi", &self.source_doi),
            ("general.source.uuid", &self.source_uuid),
            ("general.source.repo_url", &self.source_repo_url),
        ];
        for (key, value) in texts {
            push_text(kvs, key, value);
        }
    }

    /// Sets the name, organization, base name, fine-tune, version and size label that are still
    /// unset from a model id's components (the name and organization titled).
    fn fill_from(&mut self, c: &NameComponents) {
        self.name.get_or_insert_with(|| id_to_title(&c.full_name));
        fill(&mut self.organization, c.organization.as_deref().map(id_to_title));
        fill(&mut self.basename, c.basename.clone());
        fill(&mut self.finetune, c.finetune.clone());
        fill(&mut self.version, c.version.clone());
        fill(&mut self.size_label, c.size_label.clone());
    }
}

/// Sets `slot` to `value` when it is unset.
fn fill(slot: &mut Option<String>, value: Option<String>) {
    if slot.is_none() {
        *slot = value;
    }
}

/// Appends a string pair unless the value is unset or empty.
fn push_text(kvs: &mut Vec<(String, MetaValue)>, key: &str, value: &Option<String>) {
    if let Some(s) = value.as_deref().filter(|s| !s.is_empty()) {
        kvs.push((key.to_string(), MetaValue::Text(s.to_string())));
    }
}

/// Appends an `int32` pair when the value is set.
fn push_i32(kvs: &mut Vec<(String, MetaValue)>, key: &str, value: Option<i32>) {
    if let Some(v) = value {
        kvs.push((key.to_string(), MetaValue::Number(Number::I32(v))));
    }
}

/// Appends a `float32` pair when the value is set.
fn push_f32(kvs: &mut Vec<(String, MetaValue)>, key: &str, value: Option<f32>) {
    if let Some(v) = value {
        kvs.push((key.to_string(), MetaValue::Number(Number::F32(v))));
    }
}

/// Appends a string-array pair unless the list is empty.
fn push_texts(kvs: &mut Vec<(String, MetaValue)>, key: &str, values: &[String]) {
    if !values.is_empty() {
        kvs.push((key.to_string(), MetaValue::TypedArray(TypedArray::Text(values.to_vec()))));
    }
}

/// The metadata `convert_hf_to_gguf.py` writes for the checkpoint in `dir` (the path as the user
/// gave it: its last component is the fallback name), given its parsed `config.json`, its parsed
/// `generation_config.json` (`None` when absent or not valid JSON, which gguf-py ignores) and the
/// parameter counts of gguf-py's `get_total_parameter_count`.
///
/// The model card (`README.md`'s YAML front matter) is read first, as gguf-py does; what its
/// writer would fail on (or write as other than text) is refused rather than written differently
/// (see `model_card.rs`), as are values gguf-py would fail on.
pub(crate) fn derive(
    dir: &Path,
    config: &Value,
    generation_config: Option<&Value>,
    counts: (i64, i64, i64, u64),
    given: &Given<'_>,
) -> Result<ModelMetadata> {
    let (total_params, shared_params, expert_params, expert_count) = counts;
    let card = model_card::load(dir)?;
    let mut m = ModelMetadata::default();
    model_card::apply(&mut m, &card, total_params)?;
    if let Some(id) = name_or_path(config)?.filter(|id| id.matches('/').count() <= 1) {
        m.fill_from(&name_components(id, total_params));
    }
    let dir_name = python_path_name(dir)?;
    m.fill_from(&name_components(&dir_name, total_params));
    if let Some(g) = generation_config {
        apply_generation_config(&mut m, g)?;
    }
    if let Some(path) = given.metadata {
        apply_override(&mut m, path)?;
    }
    if let Some(name) = given.model_name {
        m.name = Some(name.to_string());
    }
    m.name.get_or_insert(dir_name);
    if m.size_label.is_none() && total_params > 0 {
        m.size_label = Some(size_label(total_params, shared_params, expert_params, expert_count));
    }
    Ok(m)
}

/// What the converter's command line sets over what the folder says: `--metadata FILE` (a
/// JSON object of `general.*` keys) and `--model-name`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Given<'a> {
    /// The metadata override file.
    pub metadata: Option<&'a Path>,
    /// The model's name.
    pub model_name: Option<&'a str>,
}

/// The text fields an override file may set, by key.
fn text_field<'m>(m: &'m mut ModelMetadata, key: &str) -> Option<&'m mut Option<String>> {
    Some(match key {
        "general.sampling.sequence" => &mut m.sampling_sequence,
        "general.name" => &mut m.name,
        "general.author" => &mut m.author,
        "general.version" => &mut m.version,
        "general.organization" => &mut m.organization,
        "general.finetune" => &mut m.finetune,
        "general.basename" => &mut m.basename,
        "general.description" => &mut m.description,
        "general.quantized_by" => &mut m.quantized_by,
        "general.size_label" => &mut m.size_label,
        "general.license.name" => &mut m.license_name,
        "general.license.link" => &mut m.license_link,
        "general.url" => &mut m.url,
        "general.doi" => &mut m.doi,
        "general.uuid" => &mut m.uuid,
        "general.repo_url" => &mut m.repo_url,
        "general.source.url" => &mut m.source_url,
        "general.source.doi" => &mut m.source_doi,
        "general.source.uuid" => &mut m.source_uuid,
        "general.source.repo_url" => &mut m.source_repo_url,
        _ => return None,
    })
}

/// `--metadata FILE`: the override file's keys set over what was derived, as gguf-py applies
/// them (a key given `null` unsets). Its text fields, sampling numbers, tags and languages are
/// taken; base models and datasets in it are refused for now; any other key is ignored, as
/// gguf-py ignores it.
fn apply_override(m: &mut ModelMetadata, path: &Path) -> Result<()> {
    // Read under the bound of a configuration file (`MAX_HF_CONFIG_BYTES`).
    let json = super::checkpoint::read_json(path)?;
    let Value::Object(map) = json else {
        return Err(Error::usage("a metadata override file holds a JSON object").in_file(path));
    };
    let wrong = |key: &str, what: &str| Error::usage(format!("{key} is not {what}")).in_file(path);
    for (key, value) in &map {
        if let Some(field) = text_field(m, key) {
            *field = match value {
                Value::Null => None,
                Value::String(s) => Some(s.clone()),
                _ => return Err(wrong(key, "text")),
            };
            continue;
        }
        let float = |v: &Value| v.as_f64().map(|x| x as f32);
        let int = |v: &Value| v.as_i64().and_then(|x| i32::try_from(x).ok());
        match key.as_str() {
            "general.sampling.top_k" => {
                m.sampling_top_k =
                    if value.is_null() { None } else { Some(int(value).ok_or_else(|| wrong(key, "an int32"))?) }
            }
            "general.sampling.penalty_last_n" => {
                m.sampling_penalty_last_n =
                    if value.is_null() { None } else { Some(int(value).ok_or_else(|| wrong(key, "an int32"))?) }
            }
            "general.sampling.mirostat" => {
                m.sampling_mirostat =
                    if value.is_null() { None } else { Some(int(value).ok_or_else(|| wrong(key, "an int32"))?) }
            }
            "general.sampling.top_p" => m.sampling_top_p = value.as_f64().and(float(value)),
            "general.sampling.min_p" => m.sampling_min_p = value.as_f64().and(float(value)),
            "general.sampling.xtc_probability" => m.sampling_xtc_probability = value.as_f64().and(float(value)),
            "general.sampling.xtc_threshold" => m.sampling_xtc_threshold = value.as_f64().and(float(value)),
            "general.sampling.temp" => m.sampling_temp = value.as_f64().and(float(value)),
            "general.sampling.penalty_repeat" => m.sampling_penalty_repeat = value.as_f64().and(float(value)),
            "general.sampling.mirostat_tau" => m.sampling_mirostat_tau = value.as_f64().and(float(value)),
            "general.sampling.mirostat_eta" => m.sampling_mirostat_eta = value.as_f64().and(float(value)),
            "general.tags" | "general.languages" => {
                let list = match value {
                    Value::Null => Vec::new(),
                    Value::Array(items) => items
                        .iter()
                        .map(|i| i.as_str().map(str::to_string).ok_or_else(|| wrong(key, "a list of text")))
                        .collect::<Result<_>>()?,
                    _ => return Err(wrong(key, "a list of text")),
                };
                if key == "general.tags" { m.tags = list } else { m.languages = list }
            }
            "general.base_models" | "general.datasets" => {
                return Err(
                    Error::unsupported(format!("{key} in a metadata override file is not read yet")).in_file(path)
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// The last component of `dir` as Python's `pathlib` names it: `..` for a parent, empty for `.`,
/// the root or an empty path.
fn python_path_name(dir: &Path) -> Result<String> {
    match dir.components().next_back() {
        Some(Component::Normal(s)) => s.to_str().map(str::to_string).ok_or_else(|| {
            Error::unsupported(format!(
                "the folder name of {} is not UTF-8, which the GGUF name must be",
                dir.display()
            ))
        }),
        Some(Component::ParentDir) => Ok("..".to_string()),
        _ => Ok(String::new()),
    }
}

/// `config.json`'s `_name_or_path` (absent or `null`: none); a non-object configuration or a
/// non-text value is refused (gguf-py fails on either).
fn name_or_path(config: &Value) -> Result<Option<&str>> {
    let Value::Object(map) = config else {
        return Err(Error::unsupported("config.json is not a JSON object: gguf-py's Metadata fails on it"));
    };
    match map.get("_name_or_path") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(Error::unsupported(format!(
            "config.json: \"_name_or_path\" is {other}, not text: gguf-py's Metadata fails on it"
        ))),
    }
}

/// Applies `generation_config.json`'s sampling settings as gguf-py does: a JSON value Python
/// holds false (`{}`, `[]`, `null`, `0`, `""`, `false`) is ignored; another non-object is refused.
fn apply_generation_config(m: &mut ModelMetadata, config: &Value) -> Result<()> {
    let map = match config {
        Value::Object(map) => map,
        v if python_falsy(v) => return Ok(()),
        other => {
            return Err(Error::unsupported(format!(
                "generation_config.json holds {other}, not an object: gguf-py's Metadata fails on it"
            )));
        }
    };
    m.sampling_sequence = text_setting(map, "sequence")?;
    m.sampling_top_k = i32_setting(map, "top_k")?;
    m.sampling_top_p = f32_setting(map, "top_p")?;
    m.sampling_min_p = f32_setting(map, "min_p")?;
    m.sampling_xtc_probability = f32_setting(map, "xtc_probability")?;
    m.sampling_xtc_threshold = f32_setting(map, "xtc_threshold")?;
    m.sampling_temp = f32_setting(map, "temperature")?;
    m.sampling_penalty_last_n = i32_setting(map, "penalty_last_n")?;
    let repeat = if map.contains_key("penalty_repeat") { "penalty_repeat" } else { "repetition_penalty" };
    m.sampling_penalty_repeat = f32_setting(map, repeat)?;
    m.sampling_mirostat = i32_setting(map, "mirostat")?;
    m.sampling_mirostat_tau = f32_setting(map, "mirostat_tau")?;
    m.sampling_mirostat_eta = f32_setting(map, "mirostat_eta")?;
    Ok(())
}

/// Whether Python holds the JSON value false.
fn python_falsy(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// The refusal of a generation setting gguf-py cannot write as `ty`.
fn bad_setting(key: &str, v: &Value, ty: &str) -> Error {
    Error::unsupported(format!(
        "generation_config.json: \"{key}\" is {v}, which gguf-py's writer cannot write as a GGUF {ty}"
    ))
}

/// A text setting: absent, `null` or another false value (which gguf-py skips): none.
fn text_setting(map: &Map<String, Value>, key: &str) -> Result<Option<String>> {
    match map.get(key) {
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) if !python_falsy(v) => Err(bad_setting(key, v, "string")),
        _ => Ok(None),
    }
}

/// An `int32` setting: an integer in range or a boolean (Python's `struct` packs both).
fn i32_setting(map: &Map<String, Value>, key: &str) -> Result<Option<i32>> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(i32::from(*b))),
        Some(v) => v.as_i64().and_then(|i| i32::try_from(i).ok()).map(Some).ok_or_else(|| bad_setting(key, v, "int32")),
    }
}

/// A `float32` setting: a number or a boolean, rounded to single precision; one that overflows
/// it is refused (as Python's `struct` does).
fn f32_setting(map: &Map<String, Value>, key: &str) -> Result<Option<f32>> {
    let x = match map.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(v @ Value::Number(n)) => n.as_f64().ok_or_else(|| bad_setting(key, v, "float32"))?,
        Some(v) => return Err(bad_setting(key, v, "float32")),
    };
    let y = x as f32;
    if y.is_infinite() && x.is_finite() {
        return Err(bad_setting(key, &Value::from(x), "float32"));
    }
    Ok(Some(y))
}

#[cfg(test)]
mod tests;
