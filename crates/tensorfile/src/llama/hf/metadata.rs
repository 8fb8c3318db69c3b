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

use std::cmp::Ordering;
use std::path::{Component, Path};

use serde_json::{Map, Value};

mod model_card;

use crate::error::{Error, Result};
use crate::model::{MetaValue, Number, TypedArray};
use model_card::{Source, push_sources};

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
    let text = std::fs::read(path).map_err(|e| Error::from(e).in_file(path))?;
    let json: Value = serde_json::from_slice(&text)
        .map_err(|e| Error::invalid(crate::error::Rule::BadJson, format!("not JSON: {e}")).in_file(path))?;
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

/// The parts gguf-py's `get_model_id_components` finds in a model id.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NameComponents {
    /// The id after its organization (the whole id when it holds a space).
    pub(crate) full_name: String,
    /// The part before the first `/`, unless it starts with `.`.
    pub(crate) organization: Option<String>,
    /// The leading name words (and their versions), when anything else was recognized.
    pub(crate) basename: Option<String>,
    /// The fine-tune words (`Instruct`, `chat`, context lengths such as `4k`), `-`-joined.
    pub(crate) finetune: Option<String>,
    /// The versions after the base name, `-`-joined.
    pub(crate) version: Option<String>,
    /// The size labels (`7B`, `8x7B`), deduplicated and `-`-joined.
    pub(crate) size_label: Option<String>,
}

/// The annotations of one `-`-separated part of a model name.
#[derive(Debug, Clone, Copy, Default)]
struct Kinds {
    /// Part of the base name.
    basename: bool,
    /// A size label.
    size_label: bool,
    /// A fine-tune word.
    finetune: bool,
    /// A version.
    version: bool,
    /// A quantization type (or a redundant `lora` of an adapter).
    kind: bool,
}

impl Kinds {
    /// How many annotations the part has.
    fn count(self) -> usize {
        [self.basename, self.size_label, self.finetune, self.version, self.kind].iter().filter(|b| **b).count()
    }
}

/// gguf-py's `get_model_id_components`: a model id (`org/name-7B-Instruct-v0.1`) cut into its
/// parts, size labels checked against `total_params` (negative for an adapter; 0: unchecked).
pub(crate) fn name_components(model_id: &str, total_params: i64) -> NameComponents {
    if model_id.contains(' ') {
        return NameComponents { full_name: model_id.to_string(), ..NameComponents::default() };
    }
    let (org, full) = match model_id.split_once('/') {
        Some((org, full)) => (Some(org), full),
        None => (None, model_id),
    };
    let mut parts: Vec<String> = full.split('-').filter(|p| !p.is_empty()).map(str::to_string).collect();
    let mut kinds = vec![Kinds::default(); parts.len()];
    for (i, (part, k)) in parts.iter_mut().zip(kinds.iter_mut()).enumerate() {
        annotate(i, part, k, total_params);
    }
    drop_word_sizes(&parts, &mut kinds);
    mark_basename(&parts, &mut kinds);
    let join = |keep: &dyn Fn(Kinds) -> bool| {
        let mut chosen: Vec<&str> = Vec::new();
        for (p, k) in parts.iter().zip(&kinds) {
            if keep(*k) {
                chosen.push(p);
            }
        }
        Some(chosen.join("-")).filter(|s| !s.is_empty())
    };
    let mut basename = join(&|k| k.basename);
    let finetune = join(&|k| k.finetune);
    let version = join(&|k| k.version && !k.basename);
    let size_label = dedup_sizes(&parts, &kinds);
    if size_label.is_none() && finetune.is_none() && version.is_none() {
        basename = None;
    }
    NameComponents {
        full_name: full.to_string(),
        organization: org.filter(|o| !o.starts_with('.')).map(str::to_string),
        basename,
        finetune,
        version,
        size_label,
    }
}

/// The size-label parts, first occurrences only, `-`-joined.
fn dedup_sizes(parts: &[String], kinds: &[Kinds]) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    for (p, k) in parts.iter().zip(kinds) {
        if k.size_label && !seen.contains(&p.as_str()) {
            seen.push(p);
        }
    }
    Some(seen.join("-")).filter(|s| !s.is_empty())
}

/// Annotates the `i`th part (a version, a quantization type, a size, a fine-tune word),
/// normalizing it as gguf-py does.
fn annotate(i: usize, part: &mut String, k: &mut Kinds, total_params: i64) {
    let chars: Vec<char> = part.chars().collect();
    if is_version(&chars) {
        k.version = true;
    } else if is_quant_type(&chars) {
        k.kind = true;
        *part = part.to_uppercase();
    } else if i > 0 && is_size(&chars) {
        *part = normalize_size(part, k, total_params);
        if k.count() == 0 {
            k.size_label = true;
        }
    } else if i > 0 && ["chat", "instruct", "vision", "lora"].iter().any(|w| folds_to(&chars, w)) {
        if total_params < 0 && part.to_lowercase() == "lora" {
            k.kind = true;
        } else {
            k.finetune = true;
        }
    }
}

/// Drops the word size labels (`small`, `xl`) when a numeric one is present.
fn drop_word_sizes(parts: &[String], kinds: &mut [Kinds]) {
    let numeric = parts.iter().zip(kinds.iter()).any(|(p, k)| k.size_label && p.chars().any(|c| c.is_ascii_digit()));
    if numeric {
        for (p, k) in parts.iter().zip(kinds.iter_mut()) {
            if k.size_label && p.chars().all(char::is_alphabetic) {
                k.size_label = false;
            }
        }
    }
}

/// Marks the leading unannotated words and versions as the base name, later unannotated parts as
/// fine-tunes, then unmarks the trailing versions of the base name.
fn mark_basename(parts: &[String], kinds: &mut [Kinds]) {
    let mut at_start = true;
    for (p, k) in parts.iter().zip(kinds.iter_mut()) {
        let word = k.count() == 0 && p.chars().next().is_some_and(char::is_alphabetic);
        if at_start && (word || k.version) {
            k.basename = true;
        } else {
            at_start = false;
            if k.count() == 0 {
                k.finetune = true;
            }
        }
    }
    for k in kinds.iter_mut().rev() {
        if !(k.basename && k.count() > 1) {
            break;
        }
        k.basename = false;
    }
}

/// A size part normalized: `_` as `.`, `7b1` as `7.1B`, the scale letter upper case; marked a
/// fine-tune (and its letter lower-cased) when its value is far from `total_params`.
fn normalize_size(part: &str, k: &mut Kinds, total_params: i64) -> String {
    let mut p: Vec<char> = part.replace('_', ".").chars().collect();
    let n = p.len();
    if n >= 2 && p[n - 1].is_ascii_digit() {
        let (last, before) = (p[n - 1], p[n - 2]);
        p.truncate(n - 2);
        p.extend(['.', last, before]);
    }
    let n = p.len();
    if n > 1 && p[n - 2].is_ascii_digit() && matches!(p[n - 1], 'k' | 'm' | 'b' | 't') {
        p[n - 1] = p[n - 1].to_ascii_uppercase();
    }
    let Some((&letter, number)) = p.split_last() else { return String::new() };
    let number: String = number.iter().collect();
    if total_params != 0 {
        if let Some(value) = python_float(&number) {
            if size_is_context(value * scale(letter), total_params) {
                k.finetune = true;
                return number + &letter.to_lowercase().to_string();
            }
        }
    }
    number + &letter.to_string()
}

/// The multiplier of a size letter: `K`, `M`, `B`, `T`, else (as Python's `pow(1000, -1)`)
/// a thousandth.
fn scale(letter: char) -> f64 {
    match letter {
        'K' => 1e3,
        'M' => 1e6,
        'B' => 1e9,
        'T' => 1e12,
        _ => 1e-3,
    }
}

/// Whether a size label's value reads as a context length rather than the model's size: below
/// an eighth of an adapter's size, or further from the model's size than seven eighths of it.
fn size_is_context(label: f64, total_params: i64) -> bool {
    let total = i128::from(total_params);
    if total < 0 {
        return cmp_float_int(label, total.abs() / 8) == Some(Ordering::Less);
    }
    total > 0 && cmp_float_int((label - total_params as f64).abs(), 7 * total / 8) == Some(Ordering::Greater)
}

/// A float compared with an integer exactly, as Python compares them.
fn cmp_float_int(f: f64, i: i128) -> Option<Ordering> {
    const LIMIT: f64 = 85_070_591_730_234_615_865_843_651_857_942_052_864.0; // 2^126
    if f.is_nan() {
        return None;
    }
    if f >= LIMIT {
        return Some(Ordering::Greater);
    }
    if f <= -LIMIT {
        return Some(Ordering::Less);
    }
    let t = f.trunc();
    match (t as i128).cmp(&i) {
        Ordering::Equal => f.partial_cmp(&t),
        other => Some(other),
    }
}

/// Python's `float()` of the forms a size label's number takes (`7`, `1.5`, `7.`, `.5`); other
/// text (`8x7`, `A3`, `1.5.2`, the words): none.
fn python_float(s: &str) -> Option<f64> {
    let digits = s.chars().filter(char::is_ascii_digit).count();
    let dots = s.chars().filter(|c| *c == '.').count();
    if digits == 0 || dots > 1 || digits + dots != s.chars().count() {
        return None;
    }
    s.parse().ok()
}

/// A character folded as Python's case-insensitive `re` matches it against an ASCII letter.
fn fold(c: char) -> char {
    match c {
        '\u{130}' | '\u{131}' => 'i',
        '\u{17f}' => 's',
        '\u{212a}' => 'k',
        _ => c.to_ascii_lowercase(),
    }
}

/// Whether `chars` equal the lower-case ASCII `word`, case-insensitively.
fn folds_to(chars: &[char], word: &str) -> bool {
    chars.len() == word.len() && chars.iter().zip(word.chars()).all(|(c, w)| fold(*c) == w)
}

/// The length of the run of ASCII digits at the start of `chars`.
fn digit_run(chars: &[char]) -> usize {
    chars.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// `(v|iter)?\d+([.]\d+)*`, case-insensitive, the whole part.
fn is_version(chars: &[char]) -> bool {
    let rest = if chars.len() >= 4 && folds_to(&chars[..4], "iter") {
        &chars[4..]
    } else if chars.first().is_some_and(|c| fold(*c) == 'v') {
        &chars[1..]
    } else {
        chars
    };
    let mut rest = rest;
    let first = digit_run(rest);
    if first == 0 {
        return false;
    }
    rest = &rest[first..];
    while let Some(('.', tail)) = rest.split_first() {
        let run = digit_run(tail);
        if run == 0 {
            return false;
        }
        rest = &tail[run..];
    }
    rest.is_empty()
}

/// `i?q\d(_\w)*|b?fp?(16|32)`, case-insensitive, the whole part.
fn is_quant_type(chars: &[char]) -> bool {
    let skip = |s: &'_ [char], letter: char| -> usize { usize::from(s.first().is_some_and(|c| fold(*c) == letter)) };
    let q = &chars[skip(chars, 'i')..];
    if q.len() >= 2 && fold(q[0]) == 'q' && q[1].is_ascii_digit() {
        let tail = &q[2..];
        return tail.len() % 2 == 0
            && tail.chunks(2).all(|pair| pair[0] == '_' && (pair[1] == '_' || pair[1].is_alphanumeric()));
    }
    let f = &chars[skip(chars, 'b')..];
    if f.first().is_none_or(|c| fold(*c) != 'f') {
        return false;
    }
    let bits = &f[1 + skip(&f[1..], 'p')..];
    bits == ['1', '6'] || bits == ['3', '2']
}

/// `(([A]|\d+[x])?\d+([._]\d+)?[KMBT][\d]?|small|mini|medium|large|x?xl)`, case-insensitive,
/// the whole part.
fn is_size(chars: &[char]) -> bool {
    if ["small", "mini", "medium", "large", "xl", "xxl"].iter().any(|w| folds_to(chars, w)) {
        return true;
    }
    let mut rest = chars;
    let lead = digit_run(rest);
    if rest.first().is_some_and(|c| fold(*c) == 'a') {
        rest = &rest[1..];
    } else if lead > 0 && rest.get(lead).is_some_and(|c| fold(*c) == 'x') {
        rest = &rest[lead + 1..];
    }
    let run = digit_run(rest);
    if run == 0 {
        return false;
    }
    rest = &rest[run..];
    if let Some(('.' | '_', tail)) = rest.split_first() {
        let frac = digit_run(tail);
        if frac > 0 {
            rest = &tail[frac..];
        }
    }
    match rest.split_first() {
        Some((c, tail)) if matches!(fold(*c), 'k' | 'm' | 'b' | 't') => {
            tail.is_empty() || (tail.len() == 1 && tail[0].is_ascii_digit())
        }
        _ => false,
    }
}

/// gguf-py's `id_to_title`: `-` as spaces, whitespace runs as one space, and each all-lower-case
/// word title-cased unless it is a version (`v1.2`) or starts with a digit.
pub(crate) fn id_to_title(s: &str) -> String {
    let spaced = s.replace('-', " ");
    let words: Vec<String> = spaced
        .split(python_isspace)
        .filter(|w| !w.is_empty())
        .map(|w| if python_islower(w) && !title_exempt(w) { python_title(w) } else { w.to_string() })
        .collect();
    words.join(" ")
}

/// Python's `str.isspace` for one character: Unicode white space plus the separators
/// `\x1c`..`\x1f`.
fn python_isspace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Whether a word is a version (`v1`, `v1.2`) or starts with a digit (`7b`).
fn title_exempt(w: &str) -> bool {
    let chars: Vec<char> = w.chars().collect();
    if chars.first().is_some_and(char::is_ascii_digit) {
        return true;
    }
    chars.first() == Some(&'v') && chars.len() > 1 && is_version(&chars)
}

/// Whether `c` is a title-case letter (Unicode category Lt).
fn is_titlecase(c: char) -> bool {
    matches!(c, '\u{1c5}' | '\u{1c8}' | '\u{1cb}' | '\u{1f2}' | '\u{1f88}'..='\u{1f8f}' | '\u{1f98}'..='\u{1f9f}'
        | '\u{1fa8}'..='\u{1faf}' | '\u{1fbc}' | '\u{1fcc}' | '\u{1ffc}')
}

/// Python's notion of a cased character: lower case, upper case or title case.
fn is_cased(c: char) -> bool {
    c.is_lowercase() || c.is_uppercase() || is_titlecase(c)
}

/// Python's `str.islower`: some cased character, and none upper or title case.
fn python_islower(w: &str) -> bool {
    let mut cased = false;
    for c in w.chars() {
        if c.is_uppercase() || is_titlecase(c) {
            return false;
        }
        cased |= c.is_lowercase();
    }
    cased
}

/// Python's `str.title`: a character after a cased one lower-cased, any other title-cased.
fn python_title(w: &str) -> String {
    let mut out = String::new();
    let mut after_cased = false;
    for c in w.chars() {
        if after_cased {
            out.extend(c.to_lowercase());
        } else {
            out.push_str(&title_char(c));
        }
        after_cased = is_cased(c);
    }
    out
}

/// The title-case mapping of one character (Python's, Unicode's `SpecialCasing` included).
fn title_char(c: char) -> String {
    let mapped = match u32::from(c) {
        0x149 => Some("\u{2bc}N".to_string()),
        0x1c4..=0x1c6 => Some('\u{1c5}'.to_string()),
        0x1c7..=0x1c9 => Some('\u{1c8}'.to_string()),
        0x1ca..=0x1cc => Some('\u{1cb}'.to_string()),
        0x1f1..=0x1f3 => Some('\u{1f2}'.to_string()),
        0x10d0..=0x10fa | 0x10fd..=0x10ff | 0x1fbc | 0x1fcc | 0x1ffc => Some(c.to_string()),
        0x1f88..=0x1f8f | 0x1f98..=0x1f9f | 0x1fa8..=0x1faf => Some(c.to_string()),
        n @ (0x1f80..=0x1f87 | 0x1f90..=0x1f97 | 0x1fa0..=0x1fa7) => char::from_u32(n + 8).map(String::from),
        0x1fb3 => Some('\u{1fbc}'.to_string()),
        0x1fc3 => Some('\u{1fcc}'.to_string()),
        0x1ff3 => Some('\u{1ffc}'.to_string()),
        0x1fb2 => Some("\u{1fba}\u{345}".to_string()),
        0x1fb4 => Some("\u{386}\u{345}".to_string()),
        0x1fb7 => Some("\u{391}\u{342}\u{345}".to_string()),
        0x1fc2 => Some("\u{1fca}\u{345}".to_string()),
        0x1fc4 => Some("\u{389}\u{345}".to_string()),
        0x1fc7 => Some("\u{397}\u{342}\u{345}".to_string()),
        0x1ff2 => Some("\u{1ffa}\u{345}".to_string()),
        0x1ff4 => Some("\u{38f}\u{345}".to_string()),
        0x1ff7 => Some("\u{3a9}\u{342}\u{345}".to_string()),
        _ => None,
    };
    mapped.unwrap_or_else(|| {
        let mut upper = c.to_uppercase();
        let first: String = upper.next().map(String::from).unwrap_or_default();
        first + &upper.flat_map(char::to_lowercase).collect::<String>()
    })
}

/// gguf-py's `size_label`: the parameter count rounded to two significant digits or more with
/// a `K`/`M`/`B`/`T` suffix (`6.7B`, `135M`, `0.12K`), for a mixture of experts the shared and
/// per-expert counts summed and prefixed by the expert count (`8x7.2B`).
pub(crate) fn size_label(total: i64, shared: i64, expert: i64, expert_count: u64) -> String {
    if expert_count > 0 {
        let per_expert = u128::from(shared.unsigned_abs()) + u128::from(expert.unsigned_abs());
        format!("{expert_count}x{}", rounded_notation(per_expert))
    } else {
        rounded_notation(u128::from(total.unsigned_abs()))
    }
}

/// A parameter count scaled to its unit, with as many decimals as bring it to two digits
/// (Python's `%.Nf`: the exact value rounded half to even, as Rust's `{:.N}` does).
fn rounded_notation(count: u128) -> String {
    let (factor, suffix) = match count {
        c if c > 1_000_000_000_000 => (1e-12, 'T'),
        c if c > 1_000_000_000 => (1e-9, 'B'),
        c if c > 1_000_000 => (1e-6, 'M'),
        _ => (1e-3, 'K'),
    };
    let scaled = count as f64 * factor;
    let whole = scaled.round_ties_even() as u128;
    let digits = if whole == 0 { 0 } else { whole.to_string().len() };
    let decimals = 2usize.saturating_sub(digits);
    format!("{scaled:.decimals$}{suffix}")
}

#[cfg(test)]
mod tests;
