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

use super::model_card::{self, Source, push_sources};
use crate::error::{Error, Result};
use crate::model::{MetaValue, Number, TypedArray};

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
    total_params: i64,
    shared_params: i64,
    expert_params: i64,
    expert_count: u64,
) -> Result<ModelMetadata> {
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
    m.name.get_or_insert(dir_name);
    if m.size_label.is_none() && total_params > 0 {
        m.size_label = Some(size_label(total_params, shared_params, expert_params, expert_count));
    }
    Ok(m)
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
mod tests {
    use super::*;

    /// `get_model_id_components(id, total)` as gguf-py returns it: full name, organization,
    /// basename, finetune, version, size label.
    type ComponentsRow = (
        &'static str,
        i64,
        &'static str,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
        Option<&'static str>,
    );

    /// Recorded from the vendored gguf-py.
    const COMPONENTS: &[ComponentsRow] = &[
        (
            "meta-llama/Llama-2-7b-hf",
            0,
            "Llama-2-7b-hf",
            Some("meta-llama"),
            Some("Llama-2"),
            Some("hf"),
            None,
            Some("7B"),
        ),
        (
            "meta-llama/Llama-2-7b-hf",
            7000000000,
            "Llama-2-7b-hf",
            Some("meta-llama"),
            Some("Llama-2"),
            Some("hf"),
            None,
            Some("7B"),
        ),
        (
            "meta-llama/Llama-2-7b-hf",
            500000000,
            "Llama-2-7b-hf",
            Some("meta-llama"),
            Some("Llama-2"),
            Some("7b-hf"),
            None,
            None,
        ),
        (
            "meta-llama/Llama-2-7b-hf",
            135000000,
            "Llama-2-7b-hf",
            Some("meta-llama"),
            Some("Llama-2"),
            Some("7b-hf"),
            None,
            None,
        ),
        (
            "meta-llama/Llama-2-7b-hf",
            -100000000,
            "Llama-2-7b-hf",
            Some("meta-llama"),
            Some("Llama-2"),
            Some("hf"),
            None,
            Some("7B"),
        ),
        (
            "meta-llama/Llama-2-7b-hf",
            46700000000,
            "Llama-2-7b-hf",
            Some("meta-llama"),
            Some("Llama-2"),
            Some("hf"),
            None,
            Some("7B"),
        ),
        (
            "meta-llama/Llama-2-7b-hf",
            1,
            "Llama-2-7b-hf",
            Some("meta-llama"),
            Some("Llama-2"),
            Some("7b-hf"),
            None,
            None,
        ),
        (
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            0,
            "TinyLlama-1.1B-Chat-v1.0",
            Some("TinyLlama"),
            Some("TinyLlama"),
            Some("Chat"),
            Some("v1.0"),
            Some("1.1B"),
        ),
        (
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            7000000000,
            "TinyLlama-1.1B-Chat-v1.0",
            Some("TinyLlama"),
            Some("TinyLlama"),
            Some("Chat"),
            Some("v1.0"),
            Some("1.1B"),
        ),
        (
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            500000000,
            "TinyLlama-1.1B-Chat-v1.0",
            Some("TinyLlama"),
            Some("TinyLlama"),
            Some("1.1b-Chat"),
            Some("v1.0"),
            None,
        ),
        (
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            135000000,
            "TinyLlama-1.1B-Chat-v1.0",
            Some("TinyLlama"),
            Some("TinyLlama"),
            Some("1.1b-Chat"),
            Some("v1.0"),
            None,
        ),
        (
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            -100000000,
            "TinyLlama-1.1B-Chat-v1.0",
            Some("TinyLlama"),
            Some("TinyLlama"),
            Some("Chat"),
            Some("v1.0"),
            Some("1.1B"),
        ),
        (
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            46700000000,
            "TinyLlama-1.1B-Chat-v1.0",
            Some("TinyLlama"),
            Some("TinyLlama"),
            Some("1.1b-Chat"),
            Some("v1.0"),
            None,
        ),
        (
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            1,
            "TinyLlama-1.1B-Chat-v1.0",
            Some("TinyLlama"),
            Some("TinyLlama"),
            Some("1.1b-Chat"),
            Some("v1.0"),
            None,
        ),
        (
            "mistralai/Mixtral-8x7B-Instruct-v0.1",
            0,
            "Mixtral-8x7B-Instruct-v0.1",
            Some("mistralai"),
            Some("Mixtral"),
            Some("Instruct"),
            Some("v0.1"),
            Some("8x7B"),
        ),
        (
            "mistralai/Mixtral-8x7B-Instruct-v0.1",
            7000000000,
            "Mixtral-8x7B-Instruct-v0.1",
            Some("mistralai"),
            Some("Mixtral"),
            Some("Instruct"),
            Some("v0.1"),
            Some("8x7B"),
        ),
        (
            "mistralai/Mixtral-8x7B-Instruct-v0.1",
            500000000,
            "Mixtral-8x7B-Instruct-v0.1",
            Some("mistralai"),
            Some("Mixtral"),
            Some("Instruct"),
            Some("v0.1"),
            Some("8x7B"),
        ),
        (
            "mistralai/Mixtral-8x7B-Instruct-v0.1",
            135000000,
            "Mixtral-8x7B-Instruct-v0.1",
            Some("mistralai"),
            Some("Mixtral"),
            Some("Instruct"),
            Some("v0.1"),
            Some("8x7B"),
        ),
        (
            "mistralai/Mixtral-8x7B-Instruct-v0.1",
            -100000000,
            "Mixtral-8x7B-Instruct-v0.1",
            Some("mistralai"),
            Some("Mixtral"),
            Some("Instruct"),
            Some("v0.1"),
            Some("8x7B"),
        ),
        (
            "mistralai/Mixtral-8x7B-Instruct-v0.1",
            46700000000,
            "Mixtral-8x7B-Instruct-v0.1",
            Some("mistralai"),
            Some("Mixtral"),
            Some("Instruct"),
            Some("v0.1"),
            Some("8x7B"),
        ),
        (
            "mistralai/Mixtral-8x7B-Instruct-v0.1",
            1,
            "Mixtral-8x7B-Instruct-v0.1",
            Some("mistralai"),
            Some("Mixtral"),
            Some("Instruct"),
            Some("v0.1"),
            Some("8x7B"),
        ),
        ("Qwen2.5-0.5B", 0, "Qwen2.5-0.5B", None, Some("Qwen2.5"), None, None, Some("0.5B")),
        ("Qwen2.5-0.5B", 7000000000, "Qwen2.5-0.5B", None, Some("Qwen2.5"), Some("0.5b"), None, None),
        ("Qwen2.5-0.5B", 500000000, "Qwen2.5-0.5B", None, Some("Qwen2.5"), None, None, Some("0.5B")),
        ("Qwen2.5-0.5B", 135000000, "Qwen2.5-0.5B", None, Some("Qwen2.5"), Some("0.5b"), None, None),
        ("Qwen2.5-0.5B", -100000000, "Qwen2.5-0.5B", None, Some("Qwen2.5"), None, None, Some("0.5B")),
        ("Qwen2.5-0.5B", 46700000000, "Qwen2.5-0.5B", None, Some("Qwen2.5"), Some("0.5b"), None, None),
        ("Qwen2.5-0.5B", 1, "Qwen2.5-0.5B", None, Some("Qwen2.5"), Some("0.5b"), None, None),
        (
            "Qwen/Qwen2.5-0.5B-Instruct",
            0,
            "Qwen2.5-0.5B-Instruct",
            Some("Qwen"),
            Some("Qwen2.5"),
            Some("Instruct"),
            None,
            Some("0.5B"),
        ),
        (
            "Qwen/Qwen2.5-0.5B-Instruct",
            7000000000,
            "Qwen2.5-0.5B-Instruct",
            Some("Qwen"),
            Some("Qwen2.5"),
            Some("0.5b-Instruct"),
            None,
            None,
        ),
        (
            "Qwen/Qwen2.5-0.5B-Instruct",
            500000000,
            "Qwen2.5-0.5B-Instruct",
            Some("Qwen"),
            Some("Qwen2.5"),
            Some("Instruct"),
            None,
            Some("0.5B"),
        ),
        (
            "Qwen/Qwen2.5-0.5B-Instruct",
            135000000,
            "Qwen2.5-0.5B-Instruct",
            Some("Qwen"),
            Some("Qwen2.5"),
            Some("0.5b-Instruct"),
            None,
            None,
        ),
        (
            "Qwen/Qwen2.5-0.5B-Instruct",
            -100000000,
            "Qwen2.5-0.5B-Instruct",
            Some("Qwen"),
            Some("Qwen2.5"),
            Some("Instruct"),
            None,
            Some("0.5B"),
        ),
        (
            "Qwen/Qwen2.5-0.5B-Instruct",
            46700000000,
            "Qwen2.5-0.5B-Instruct",
            Some("Qwen"),
            Some("Qwen2.5"),
            Some("0.5b-Instruct"),
            None,
            None,
        ),
        (
            "Qwen/Qwen2.5-0.5B-Instruct",
            1,
            "Qwen2.5-0.5B-Instruct",
            Some("Qwen"),
            Some("Qwen2.5"),
            Some("0.5b-Instruct"),
            None,
            None,
        ),
        ("bloom-7b1", 0, "bloom-7b1", None, Some("bloom"), None, None, Some("7.1B")),
        ("bloom-7b1", 7000000000, "bloom-7b1", None, Some("bloom"), None, None, Some("7.1B")),
        ("bloom-7b1", 500000000, "bloom-7b1", None, Some("bloom"), Some("7.1b"), None, None),
        ("bloom-7b1", 135000000, "bloom-7b1", None, Some("bloom"), Some("7.1b"), None, None),
        ("bloom-7b1", -100000000, "bloom-7b1", None, Some("bloom"), None, None, Some("7.1B")),
        ("bloom-7b1", 46700000000, "bloom-7b1", None, Some("bloom"), None, None, Some("7.1B")),
        ("bloom-7b1", 1, "bloom-7b1", None, Some("bloom"), Some("7.1b"), None, None),
        ("bigscience/bloomz-560m", 0, "bloomz-560m", Some("bigscience"), Some("bloomz"), None, None, Some("560M")),
        (
            "bigscience/bloomz-560m",
            7000000000,
            "bloomz-560m",
            Some("bigscience"),
            Some("bloomz"),
            Some("560m"),
            None,
            None,
        ),
        (
            "bigscience/bloomz-560m",
            500000000,
            "bloomz-560m",
            Some("bigscience"),
            Some("bloomz"),
            None,
            None,
            Some("560M"),
        ),
        (
            "bigscience/bloomz-560m",
            135000000,
            "bloomz-560m",
            Some("bigscience"),
            Some("bloomz"),
            Some("560m"),
            None,
            None,
        ),
        (
            "bigscience/bloomz-560m",
            -100000000,
            "bloomz-560m",
            Some("bigscience"),
            Some("bloomz"),
            None,
            None,
            Some("560M"),
        ),
        (
            "bigscience/bloomz-560m",
            46700000000,
            "bloomz-560m",
            Some("bigscience"),
            Some("bloomz"),
            Some("560m"),
            None,
            None,
        ),
        ("bigscience/bloomz-560m", 1, "bloomz-560m", Some("bigscience"), Some("bloomz"), Some("560m"), None, None),
        ("gemma-2-9b-it", 0, "gemma-2-9b-it", None, Some("gemma-2"), Some("it"), None, Some("9B")),
        ("gemma-2-9b-it", 7000000000, "gemma-2-9b-it", None, Some("gemma-2"), Some("it"), None, Some("9B")),
        ("gemma-2-9b-it", 500000000, "gemma-2-9b-it", None, Some("gemma-2"), Some("9b-it"), None, None),
        ("gemma-2-9b-it", 135000000, "gemma-2-9b-it", None, Some("gemma-2"), Some("9b-it"), None, None),
        ("gemma-2-9b-it", -100000000, "gemma-2-9b-it", None, Some("gemma-2"), Some("it"), None, Some("9B")),
        ("gemma-2-9b-it", 46700000000, "gemma-2-9b-it", None, Some("gemma-2"), Some("it"), None, Some("9B")),
        ("gemma-2-9b-it", 1, "gemma-2-9b-it", None, Some("gemma-2"), Some("9b-it"), None, None),
        ("google/gemma-2-9b-it", 0, "gemma-2-9b-it", Some("google"), Some("gemma-2"), Some("it"), None, Some("9B")),
        (
            "google/gemma-2-9b-it",
            7000000000,
            "gemma-2-9b-it",
            Some("google"),
            Some("gemma-2"),
            Some("it"),
            None,
            Some("9B"),
        ),
        (
            "google/gemma-2-9b-it",
            500000000,
            "gemma-2-9b-it",
            Some("google"),
            Some("gemma-2"),
            Some("9b-it"),
            None,
            None,
        ),
        (
            "google/gemma-2-9b-it",
            135000000,
            "gemma-2-9b-it",
            Some("google"),
            Some("gemma-2"),
            Some("9b-it"),
            None,
            None,
        ),
        (
            "google/gemma-2-9b-it",
            -100000000,
            "gemma-2-9b-it",
            Some("google"),
            Some("gemma-2"),
            Some("it"),
            None,
            Some("9B"),
        ),
        (
            "google/gemma-2-9b-it",
            46700000000,
            "gemma-2-9b-it",
            Some("google"),
            Some("gemma-2"),
            Some("it"),
            None,
            Some("9B"),
        ),
        ("google/gemma-2-9b-it", 1, "gemma-2-9b-it", Some("google"), Some("gemma-2"), Some("9b-it"), None, None),
        (
            "SmolLM2-135M-Instruct",
            0,
            "SmolLM2-135M-Instruct",
            None,
            Some("SmolLM2"),
            Some("Instruct"),
            None,
            Some("135M"),
        ),
        (
            "SmolLM2-135M-Instruct",
            7000000000,
            "SmolLM2-135M-Instruct",
            None,
            Some("SmolLM2"),
            Some("135m-Instruct"),
            None,
            None,
        ),
        (
            "SmolLM2-135M-Instruct",
            500000000,
            "SmolLM2-135M-Instruct",
            None,
            Some("SmolLM2"),
            Some("Instruct"),
            None,
            Some("135M"),
        ),
        (
            "SmolLM2-135M-Instruct",
            135000000,
            "SmolLM2-135M-Instruct",
            None,
            Some("SmolLM2"),
            Some("Instruct"),
            None,
            Some("135M"),
        ),
        (
            "SmolLM2-135M-Instruct",
            -100000000,
            "SmolLM2-135M-Instruct",
            None,
            Some("SmolLM2"),
            Some("Instruct"),
            None,
            Some("135M"),
        ),
        (
            "SmolLM2-135M-Instruct",
            46700000000,
            "SmolLM2-135M-Instruct",
            None,
            Some("SmolLM2"),
            Some("135m-Instruct"),
            None,
            None,
        ),
        ("SmolLM2-135M-Instruct", 1, "SmolLM2-135M-Instruct", None, Some("SmolLM2"), Some("135m-Instruct"), None, None),
        (
            "HuggingFaceTB/SmolLM2-1.7B",
            0,
            "SmolLM2-1.7B",
            Some("HuggingFaceTB"),
            Some("SmolLM2"),
            None,
            None,
            Some("1.7B"),
        ),
        (
            "HuggingFaceTB/SmolLM2-1.7B",
            7000000000,
            "SmolLM2-1.7B",
            Some("HuggingFaceTB"),
            Some("SmolLM2"),
            None,
            None,
            Some("1.7B"),
        ),
        (
            "HuggingFaceTB/SmolLM2-1.7B",
            500000000,
            "SmolLM2-1.7B",
            Some("HuggingFaceTB"),
            Some("SmolLM2"),
            Some("1.7b"),
            None,
            None,
        ),
        (
            "HuggingFaceTB/SmolLM2-1.7B",
            135000000,
            "SmolLM2-1.7B",
            Some("HuggingFaceTB"),
            Some("SmolLM2"),
            Some("1.7b"),
            None,
            None,
        ),
        (
            "HuggingFaceTB/SmolLM2-1.7B",
            -100000000,
            "SmolLM2-1.7B",
            Some("HuggingFaceTB"),
            Some("SmolLM2"),
            None,
            None,
            Some("1.7B"),
        ),
        (
            "HuggingFaceTB/SmolLM2-1.7B",
            46700000000,
            "SmolLM2-1.7B",
            Some("HuggingFaceTB"),
            Some("SmolLM2"),
            Some("1.7b"),
            None,
            None,
        ),
        (
            "HuggingFaceTB/SmolLM2-1.7B",
            1,
            "SmolLM2-1.7B",
            Some("HuggingFaceTB"),
            Some("SmolLM2"),
            Some("1.7b"),
            None,
            None,
        ),
        ("TinyLlama-SPM-bf16", 0, "TinyLlama-SPM-bf16", None, None, None, None, None),
        ("TinyLlama-SPM-bf16", 7000000000, "TinyLlama-SPM-bf16", None, None, None, None, None),
        ("TinyLlama-SPM-bf16", 500000000, "TinyLlama-SPM-bf16", None, None, None, None, None),
        ("TinyLlama-SPM-bf16", 135000000, "TinyLlama-SPM-bf16", None, None, None, None, None),
        ("TinyLlama-SPM-bf16", -100000000, "TinyLlama-SPM-bf16", None, None, None, None, None),
        ("TinyLlama-SPM-bf16", 46700000000, "TinyLlama-SPM-bf16", None, None, None, None, None),
        ("TinyLlama-SPM-bf16", 1, "TinyLlama-SPM-bf16", None, None, None, None, None),
        (
            "phi-3-mini-4k-instruct",
            0,
            "phi-3-mini-4k-instruct",
            None,
            Some("phi-3-mini"),
            Some("instruct"),
            None,
            Some("4K"),
        ),
        (
            "phi-3-mini-4k-instruct",
            7000000000,
            "phi-3-mini-4k-instruct",
            None,
            Some("phi-3"),
            Some("4k-instruct"),
            None,
            Some("mini"),
        ),
        (
            "phi-3-mini-4k-instruct",
            500000000,
            "phi-3-mini-4k-instruct",
            None,
            Some("phi-3"),
            Some("4k-instruct"),
            None,
            Some("mini"),
        ),
        (
            "phi-3-mini-4k-instruct",
            135000000,
            "phi-3-mini-4k-instruct",
            None,
            Some("phi-3"),
            Some("4k-instruct"),
            None,
            Some("mini"),
        ),
        (
            "phi-3-mini-4k-instruct",
            -100000000,
            "phi-3-mini-4k-instruct",
            None,
            Some("phi-3"),
            Some("4k-instruct"),
            None,
            Some("mini"),
        ),
        (
            "phi-3-mini-4k-instruct",
            46700000000,
            "phi-3-mini-4k-instruct",
            None,
            Some("phi-3"),
            Some("4k-instruct"),
            None,
            Some("mini"),
        ),
        (
            "phi-3-mini-4k-instruct",
            1,
            "phi-3-mini-4k-instruct",
            None,
            Some("phi-3"),
            Some("4k-instruct"),
            None,
            Some("mini"),
        ),
        (
            "microsoft/Phi-3-mini-128k-instruct",
            0,
            "Phi-3-mini-128k-instruct",
            Some("microsoft"),
            Some("Phi-3-mini"),
            Some("instruct"),
            None,
            Some("128K"),
        ),
        (
            "microsoft/Phi-3-mini-128k-instruct",
            7000000000,
            "Phi-3-mini-128k-instruct",
            Some("microsoft"),
            Some("Phi-3"),
            Some("128k-instruct"),
            None,
            Some("mini"),
        ),
        (
            "microsoft/Phi-3-mini-128k-instruct",
            500000000,
            "Phi-3-mini-128k-instruct",
            Some("microsoft"),
            Some("Phi-3"),
            Some("128k-instruct"),
            None,
            Some("mini"),
        ),
        (
            "microsoft/Phi-3-mini-128k-instruct",
            135000000,
            "Phi-3-mini-128k-instruct",
            Some("microsoft"),
            Some("Phi-3"),
            Some("128k-instruct"),
            None,
            Some("mini"),
        ),
        (
            "microsoft/Phi-3-mini-128k-instruct",
            -100000000,
            "Phi-3-mini-128k-instruct",
            Some("microsoft"),
            Some("Phi-3"),
            Some("128k-instruct"),
            None,
            Some("mini"),
        ),
        (
            "microsoft/Phi-3-mini-128k-instruct",
            46700000000,
            "Phi-3-mini-128k-instruct",
            Some("microsoft"),
            Some("Phi-3"),
            Some("128k-instruct"),
            None,
            Some("mini"),
        ),
        (
            "microsoft/Phi-3-mini-128k-instruct",
            1,
            "Phi-3-mini-128k-instruct",
            Some("microsoft"),
            Some("Phi-3"),
            Some("128k-instruct"),
            None,
            Some("mini"),
        ),
        ("./local", 0, "local", None, None, None, None, None),
        ("./local", 7000000000, "local", None, None, None, None, None),
        ("./local", 500000000, "local", None, None, None, None, None),
        ("./local", 135000000, "local", None, None, None, None, None),
        ("./local", -100000000, "local", None, None, None, None, None),
        ("./local", 46700000000, "local", None, None, None, None, None),
        ("./local", 1, "local", None, None, None, None, None),
        ("../x/y", 0, "x/y", None, None, None, None, None),
        ("../x/y", 7000000000, "x/y", None, None, None, None, None),
        ("../x/y", 500000000, "x/y", None, None, None, None, None),
        ("../x/y", 135000000, "x/y", None, None, None, None, None),
        ("../x/y", -100000000, "x/y", None, None, None, None, None),
        ("../x/y", 46700000000, "x/y", None, None, None, None, None),
        ("../x/y", 1, "x/y", None, None, None, None, None),
        (".hidden/model-7B", 0, "model-7B", None, Some("model"), None, None, Some("7B")),
        (".hidden/model-7B", 7000000000, "model-7B", None, Some("model"), None, None, Some("7B")),
        (".hidden/model-7B", 500000000, "model-7B", None, Some("model"), Some("7b"), None, None),
        (".hidden/model-7B", 135000000, "model-7B", None, Some("model"), Some("7b"), None, None),
        (".hidden/model-7B", -100000000, "model-7B", None, Some("model"), None, None, Some("7B")),
        (".hidden/model-7B", 46700000000, "model-7B", None, Some("model"), None, None, Some("7B")),
        (".hidden/model-7B", 1, "model-7B", None, Some("model"), Some("7b"), None, None),
        ("a--b", 0, "a--b", None, None, None, None, None),
        ("a--b", 7000000000, "a--b", None, None, None, None, None),
        ("a--b", 500000000, "a--b", None, None, None, None, None),
        ("a--b", 135000000, "a--b", None, None, None, None, None),
        ("a--b", -100000000, "a--b", None, None, None, None, None),
        ("a--b", 46700000000, "a--b", None, None, None, None, None),
        ("a--b", 1, "a--b", None, None, None, None, None),
        ("llama-v1.2.3-q4_0", 0, "llama-v1.2.3-q4_0", None, None, None, None, None),
        ("llama-v1.2.3-q4_0", 7000000000, "llama-v1.2.3-q4_0", None, None, None, None, None),
        ("llama-v1.2.3-q4_0", 500000000, "llama-v1.2.3-q4_0", None, None, None, None, None),
        ("llama-v1.2.3-q4_0", 135000000, "llama-v1.2.3-q4_0", None, None, None, None, None),
        ("llama-v1.2.3-q4_0", -100000000, "llama-v1.2.3-q4_0", None, None, None, None, None),
        ("llama-v1.2.3-q4_0", 46700000000, "llama-v1.2.3-q4_0", None, None, None, None, None),
        ("llama-v1.2.3-q4_0", 1, "llama-v1.2.3-q4_0", None, None, None, None, None),
        ("Model 1", 0, "Model 1", None, None, None, None, None),
        ("Model 1", 7000000000, "Model 1", None, None, None, None, None),
        ("Model 1", 500000000, "Model 1", None, None, None, None, None),
        ("Model 1", 135000000, "Model 1", None, None, None, None, None),
        ("Model 1", -100000000, "Model 1", None, None, None, None, None),
        ("Model 1", 46700000000, "Model 1", None, None, None, None, None),
        ("Model 1", 1, "Model 1", None, None, None, None, None),
        ("", 0, "", None, None, None, None, None),
        ("", 7000000000, "", None, None, None, None, None),
        ("", 500000000, "", None, None, None, None, None),
        ("", 135000000, "", None, None, None, None, None),
        ("", -100000000, "", None, None, None, None, None),
        ("", 46700000000, "", None, None, None, None, None),
        ("", 1, "", None, None, None, None, None),
        ("-", 0, "-", None, None, None, None, None),
        ("-", 7000000000, "-", None, None, None, None, None),
        ("-", 500000000, "-", None, None, None, None, None),
        ("-", 135000000, "-", None, None, None, None, None),
        ("-", -100000000, "-", None, None, None, None, None),
        ("-", 46700000000, "-", None, None, None, None, None),
        ("-", 1, "-", None, None, None, None, None),
        ("/", 0, "", Some(""), None, None, None, None),
        ("/", 7000000000, "", Some(""), None, None, None, None),
        ("/", 500000000, "", Some(""), None, None, None, None),
        ("/", 135000000, "", Some(""), None, None, None, None),
        ("/", -100000000, "", Some(""), None, None, None, None),
        ("/", 46700000000, "", Some(""), None, None, None, None),
        ("/", 1, "", Some(""), None, None, None, None),
        ("org/", 0, "", Some("org"), None, None, None, None),
        ("org/", 7000000000, "", Some("org"), None, None, None, None),
        ("org/", 500000000, "", Some("org"), None, None, None, None),
        ("org/", 135000000, "", Some("org"), None, None, None, None),
        ("org/", -100000000, "", Some("org"), None, None, None, None),
        ("org/", 46700000000, "", Some("org"), None, None, None, None),
        ("org/", 1, "", Some("org"), None, None, None, None),
        ("/name", 0, "name", Some(""), None, None, None, None),
        ("/name", 7000000000, "name", Some(""), None, None, None, None),
        ("/name", 500000000, "name", Some(""), None, None, None, None),
        ("/name", 135000000, "name", Some(""), None, None, None, None),
        ("/name", -100000000, "name", Some(""), None, None, None, None),
        ("/name", 46700000000, "name", Some(""), None, None, None, None),
        ("/name", 1, "name", Some(""), None, None, None, None),
        ("llama-13b-q4_K_M", 0, "llama-13b-q4_K_M", None, Some("llama"), None, None, Some("13B")),
        ("llama-13b-q4_K_M", 7000000000, "llama-13b-q4_K_M", None, Some("llama"), None, None, Some("13B")),
        ("llama-13b-q4_K_M", 500000000, "llama-13b-q4_K_M", None, Some("llama"), Some("13b"), None, None),
        ("llama-13b-q4_K_M", 135000000, "llama-13b-q4_K_M", None, Some("llama"), Some("13b"), None, None),
        ("llama-13b-q4_K_M", -100000000, "llama-13b-q4_K_M", None, Some("llama"), None, None, Some("13B")),
        ("llama-13b-q4_K_M", 46700000000, "llama-13b-q4_K_M", None, Some("llama"), None, None, Some("13B")),
        ("llama-13b-q4_K_M", 1, "llama-13b-q4_K_M", None, Some("llama"), Some("13b"), None, None),
        ("Mistral-7B-v0.1", 0, "Mistral-7B-v0.1", None, Some("Mistral"), None, Some("v0.1"), Some("7B")),
        ("Mistral-7B-v0.1", 7000000000, "Mistral-7B-v0.1", None, Some("Mistral"), None, Some("v0.1"), Some("7B")),
        ("Mistral-7B-v0.1", 500000000, "Mistral-7B-v0.1", None, Some("Mistral"), Some("7b"), Some("v0.1"), None),
        ("Mistral-7B-v0.1", 135000000, "Mistral-7B-v0.1", None, Some("Mistral"), Some("7b"), Some("v0.1"), None),
        ("Mistral-7B-v0.1", -100000000, "Mistral-7B-v0.1", None, Some("Mistral"), None, Some("v0.1"), Some("7B")),
        ("Mistral-7B-v0.1", 46700000000, "Mistral-7B-v0.1", None, Some("Mistral"), None, Some("v0.1"), Some("7B")),
        ("Mistral-7B-v0.1", 1, "Mistral-7B-v0.1", None, Some("Mistral"), Some("7b"), Some("v0.1"), None),
        (
            "Llama-3.2-1B-Instruct-Q8_0",
            0,
            "Llama-3.2-1B-Instruct-Q8_0",
            None,
            Some("Llama-3.2"),
            Some("Instruct"),
            None,
            Some("1B"),
        ),
        (
            "Llama-3.2-1B-Instruct-Q8_0",
            7000000000,
            "Llama-3.2-1B-Instruct-Q8_0",
            None,
            Some("Llama-3.2"),
            Some("Instruct"),
            None,
            Some("1B"),
        ),
        (
            "Llama-3.2-1B-Instruct-Q8_0",
            500000000,
            "Llama-3.2-1B-Instruct-Q8_0",
            None,
            Some("Llama-3.2"),
            Some("1b-Instruct"),
            None,
            None,
        ),
        (
            "Llama-3.2-1B-Instruct-Q8_0",
            135000000,
            "Llama-3.2-1B-Instruct-Q8_0",
            None,
            Some("Llama-3.2"),
            Some("1b-Instruct"),
            None,
            None,
        ),
        (
            "Llama-3.2-1B-Instruct-Q8_0",
            -100000000,
            "Llama-3.2-1B-Instruct-Q8_0",
            None,
            Some("Llama-3.2"),
            Some("Instruct"),
            None,
            Some("1B"),
        ),
        (
            "Llama-3.2-1B-Instruct-Q8_0",
            46700000000,
            "Llama-3.2-1B-Instruct-Q8_0",
            None,
            Some("Llama-3.2"),
            Some("1b-Instruct"),
            None,
            None,
        ),
        (
            "Llama-3.2-1B-Instruct-Q8_0",
            1,
            "Llama-3.2-1B-Instruct-Q8_0",
            None,
            Some("Llama-3.2"),
            Some("1b-Instruct"),
            None,
            None,
        ),
        (
            "deepseek-ai/DeepSeek-V2-Lite-Chat",
            0,
            "DeepSeek-V2-Lite-Chat",
            Some("deepseek-ai"),
            Some("DeepSeek-V2-Lite"),
            Some("Chat"),
            None,
            None,
        ),
        (
            "deepseek-ai/DeepSeek-V2-Lite-Chat",
            7000000000,
            "DeepSeek-V2-Lite-Chat",
            Some("deepseek-ai"),
            Some("DeepSeek-V2-Lite"),
            Some("Chat"),
            None,
            None,
        ),
        (
            "deepseek-ai/DeepSeek-V2-Lite-Chat",
            500000000,
            "DeepSeek-V2-Lite-Chat",
            Some("deepseek-ai"),
            Some("DeepSeek-V2-Lite"),
            Some("Chat"),
            None,
            None,
        ),
        (
            "deepseek-ai/DeepSeek-V2-Lite-Chat",
            135000000,
            "DeepSeek-V2-Lite-Chat",
            Some("deepseek-ai"),
            Some("DeepSeek-V2-Lite"),
            Some("Chat"),
            None,
            None,
        ),
        (
            "deepseek-ai/DeepSeek-V2-Lite-Chat",
            -100000000,
            "DeepSeek-V2-Lite-Chat",
            Some("deepseek-ai"),
            Some("DeepSeek-V2-Lite"),
            Some("Chat"),
            None,
            None,
        ),
        (
            "deepseek-ai/DeepSeek-V2-Lite-Chat",
            46700000000,
            "DeepSeek-V2-Lite-Chat",
            Some("deepseek-ai"),
            Some("DeepSeek-V2-Lite"),
            Some("Chat"),
            None,
            None,
        ),
        (
            "deepseek-ai/DeepSeek-V2-Lite-Chat",
            1,
            "DeepSeek-V2-Lite-Chat",
            Some("deepseek-ai"),
            Some("DeepSeek-V2-Lite"),
            Some("Chat"),
            None,
            None,
        ),
        ("Qwen/Qwen3-30B-A3B", 0, "Qwen3-30B-A3B", Some("Qwen"), Some("Qwen3"), None, None, Some("30B-A3B")),
        (
            "Qwen/Qwen3-30B-A3B",
            7000000000,
            "Qwen3-30B-A3B",
            Some("Qwen"),
            Some("Qwen3"),
            Some("30b"),
            None,
            Some("A3B"),
        ),
        ("Qwen/Qwen3-30B-A3B", 500000000, "Qwen3-30B-A3B", Some("Qwen"), Some("Qwen3"), Some("30b"), None, Some("A3B")),
        ("Qwen/Qwen3-30B-A3B", 135000000, "Qwen3-30B-A3B", Some("Qwen"), Some("Qwen3"), Some("30b"), None, Some("A3B")),
        ("Qwen/Qwen3-30B-A3B", -100000000, "Qwen3-30B-A3B", Some("Qwen"), Some("Qwen3"), None, None, Some("30B-A3B")),
        ("Qwen/Qwen3-30B-A3B", 46700000000, "Qwen3-30B-A3B", Some("Qwen"), Some("Qwen3"), None, None, Some("30B-A3B")),
        ("Qwen/Qwen3-30B-A3B", 1, "Qwen3-30B-A3B", Some("Qwen"), Some("Qwen3"), Some("30b"), None, Some("A3B")),
        ("tiiuae/falcon-7b", 0, "falcon-7b", Some("tiiuae"), Some("falcon"), None, None, Some("7B")),
        ("tiiuae/falcon-7b", 7000000000, "falcon-7b", Some("tiiuae"), Some("falcon"), None, None, Some("7B")),
        ("tiiuae/falcon-7b", 500000000, "falcon-7b", Some("tiiuae"), Some("falcon"), Some("7b"), None, None),
        ("tiiuae/falcon-7b", 135000000, "falcon-7b", Some("tiiuae"), Some("falcon"), Some("7b"), None, None),
        ("tiiuae/falcon-7b", -100000000, "falcon-7b", Some("tiiuae"), Some("falcon"), None, None, Some("7B")),
        ("tiiuae/falcon-7b", 46700000000, "falcon-7b", Some("tiiuae"), Some("falcon"), None, None, Some("7B")),
        ("tiiuae/falcon-7b", 1, "falcon-7b", Some("tiiuae"), Some("falcon"), Some("7b"), None, None),
        ("EleutherAI/gpt-neox-20b", 0, "gpt-neox-20b", Some("EleutherAI"), Some("gpt-neox"), None, None, Some("20B")),
        (
            "EleutherAI/gpt-neox-20b",
            7000000000,
            "gpt-neox-20b",
            Some("EleutherAI"),
            Some("gpt-neox"),
            Some("20b"),
            None,
            None,
        ),
        (
            "EleutherAI/gpt-neox-20b",
            500000000,
            "gpt-neox-20b",
            Some("EleutherAI"),
            Some("gpt-neox"),
            Some("20b"),
            None,
            None,
        ),
        (
            "EleutherAI/gpt-neox-20b",
            135000000,
            "gpt-neox-20b",
            Some("EleutherAI"),
            Some("gpt-neox"),
            Some("20b"),
            None,
            None,
        ),
        (
            "EleutherAI/gpt-neox-20b",
            -100000000,
            "gpt-neox-20b",
            Some("EleutherAI"),
            Some("gpt-neox"),
            None,
            None,
            Some("20B"),
        ),
        (
            "EleutherAI/gpt-neox-20b",
            46700000000,
            "gpt-neox-20b",
            Some("EleutherAI"),
            Some("gpt-neox"),
            None,
            None,
            Some("20B"),
        ),
        ("EleutherAI/gpt-neox-20b", 1, "gpt-neox-20b", Some("EleutherAI"), Some("gpt-neox"), Some("20b"), None, None),
        (
            "EleutherAI/pythia-70m-deduped",
            0,
            "pythia-70m-deduped",
            Some("EleutherAI"),
            Some("pythia"),
            Some("deduped"),
            None,
            Some("70M"),
        ),
        (
            "EleutherAI/pythia-70m-deduped",
            7000000000,
            "pythia-70m-deduped",
            Some("EleutherAI"),
            Some("pythia"),
            Some("70m-deduped"),
            None,
            None,
        ),
        (
            "EleutherAI/pythia-70m-deduped",
            500000000,
            "pythia-70m-deduped",
            Some("EleutherAI"),
            Some("pythia"),
            Some("deduped"),
            None,
            Some("70M"),
        ),
        (
            "EleutherAI/pythia-70m-deduped",
            135000000,
            "pythia-70m-deduped",
            Some("EleutherAI"),
            Some("pythia"),
            Some("deduped"),
            None,
            Some("70M"),
        ),
        (
            "EleutherAI/pythia-70m-deduped",
            -100000000,
            "pythia-70m-deduped",
            Some("EleutherAI"),
            Some("pythia"),
            Some("deduped"),
            None,
            Some("70M"),
        ),
        (
            "EleutherAI/pythia-70m-deduped",
            46700000000,
            "pythia-70m-deduped",
            Some("EleutherAI"),
            Some("pythia"),
            Some("70m-deduped"),
            None,
            None,
        ),
        (
            "EleutherAI/pythia-70m-deduped",
            1,
            "pythia-70m-deduped",
            Some("EleutherAI"),
            Some("pythia"),
            Some("70m-deduped"),
            None,
            None,
        ),
        ("openai-community/gpt2-xl", 0, "gpt2-xl", Some("openai-community"), Some("gpt2"), None, None, Some("xl")),
        (
            "openai-community/gpt2-xl",
            7000000000,
            "gpt2-xl",
            Some("openai-community"),
            Some("gpt2"),
            None,
            None,
            Some("xl"),
        ),
        (
            "openai-community/gpt2-xl",
            500000000,
            "gpt2-xl",
            Some("openai-community"),
            Some("gpt2"),
            None,
            None,
            Some("xl"),
        ),
        (
            "openai-community/gpt2-xl",
            135000000,
            "gpt2-xl",
            Some("openai-community"),
            Some("gpt2"),
            None,
            None,
            Some("xl"),
        ),
        (
            "openai-community/gpt2-xl",
            -100000000,
            "gpt2-xl",
            Some("openai-community"),
            Some("gpt2"),
            None,
            None,
            Some("xl"),
        ),
        (
            "openai-community/gpt2-xl",
            46700000000,
            "gpt2-xl",
            Some("openai-community"),
            Some("gpt2"),
            None,
            None,
            Some("xl"),
        ),
        ("openai-community/gpt2-xl", 1, "gpt2-xl", Some("openai-community"), Some("gpt2"), None, None, Some("xl")),
        ("t5-small", 0, "t5-small", None, Some("t5"), None, None, Some("small")),
        ("t5-small", 7000000000, "t5-small", None, Some("t5"), None, None, Some("small")),
        ("t5-small", 500000000, "t5-small", None, Some("t5"), None, None, Some("small")),
        ("t5-small", 135000000, "t5-small", None, Some("t5"), None, None, Some("small")),
        ("t5-small", -100000000, "t5-small", None, Some("t5"), None, None, Some("small")),
        ("t5-small", 46700000000, "t5-small", None, Some("t5"), None, None, Some("small")),
        ("t5-small", 1, "t5-small", None, Some("t5"), None, None, Some("small")),
        ("model-small-7B", 0, "model-small-7B", None, Some("model-small"), None, None, Some("7B")),
        ("model-small-7B", 7000000000, "model-small-7B", None, Some("model-small"), None, None, Some("7B")),
        ("model-small-7B", 500000000, "model-small-7B", None, Some("model"), Some("7b"), None, Some("small")),
        ("model-small-7B", 135000000, "model-small-7B", None, Some("model"), Some("7b"), None, Some("small")),
        ("model-small-7B", -100000000, "model-small-7B", None, Some("model-small"), None, None, Some("7B")),
        ("model-small-7B", 46700000000, "model-small-7B", None, Some("model-small"), None, None, Some("7B")),
        ("model-small-7B", 1, "model-small-7B", None, Some("model"), Some("7b"), None, Some("small")),
        ("model-xxl-large", 0, "model-xxl-large", None, Some("model"), None, None, Some("xxl-large")),
        ("model-xxl-large", 7000000000, "model-xxl-large", None, Some("model"), None, None, Some("xxl-large")),
        ("model-xxl-large", 500000000, "model-xxl-large", None, Some("model"), None, None, Some("xxl-large")),
        ("model-xxl-large", 135000000, "model-xxl-large", None, Some("model"), None, None, Some("xxl-large")),
        ("model-xxl-large", -100000000, "model-xxl-large", None, Some("model"), None, None, Some("xxl-large")),
        ("model-xxl-large", 46700000000, "model-xxl-large", None, Some("model"), None, None, Some("xxl-large")),
        ("model-xxl-large", 1, "model-xxl-large", None, Some("model"), None, None, Some("xxl-large")),
        ("iter10-model", 0, "iter10-model", None, None, None, None, None),
        ("iter10-model", 7000000000, "iter10-model", None, None, None, None, None),
        ("iter10-model", 500000000, "iter10-model", None, None, None, None, None),
        ("iter10-model", 135000000, "iter10-model", None, None, None, None, None),
        ("iter10-model", -100000000, "iter10-model", None, None, None, None, None),
        ("iter10-model", 46700000000, "iter10-model", None, None, None, None, None),
        ("iter10-model", 1, "iter10-model", None, None, None, None, None),
        ("v2-model-lora", 0, "v2-model-lora", None, Some("v2-model"), Some("lora"), None, None),
        ("v2-model-lora", 7000000000, "v2-model-lora", None, Some("v2-model"), Some("lora"), None, None),
        ("v2-model-lora", 500000000, "v2-model-lora", None, Some("v2-model"), Some("lora"), None, None),
        ("v2-model-lora", 135000000, "v2-model-lora", None, Some("v2-model"), Some("lora"), None, None),
        ("v2-model-lora", -100000000, "v2-model-lora", None, None, None, None, None),
        ("v2-model-lora", 46700000000, "v2-model-lora", None, Some("v2-model"), Some("lora"), None, None),
        ("v2-model-lora", 1, "v2-model-lora", None, Some("v2-model"), Some("lora"), None, None),
        (
            "model-LoRA-chat-vision",
            0,
            "model-LoRA-chat-vision",
            None,
            Some("model"),
            Some("LoRA-chat-vision"),
            None,
            None,
        ),
        (
            "model-LoRA-chat-vision",
            7000000000,
            "model-LoRA-chat-vision",
            None,
            Some("model"),
            Some("LoRA-chat-vision"),
            None,
            None,
        ),
        (
            "model-LoRA-chat-vision",
            500000000,
            "model-LoRA-chat-vision",
            None,
            Some("model"),
            Some("LoRA-chat-vision"),
            None,
            None,
        ),
        (
            "model-LoRA-chat-vision",
            135000000,
            "model-LoRA-chat-vision",
            None,
            Some("model"),
            Some("LoRA-chat-vision"),
            None,
            None,
        ),
        (
            "model-LoRA-chat-vision",
            -100000000,
            "model-LoRA-chat-vision",
            None,
            Some("model"),
            Some("chat-vision"),
            None,
            None,
        ),
        (
            "model-LoRA-chat-vision",
            46700000000,
            "model-LoRA-chat-vision",
            None,
            Some("model"),
            Some("LoRA-chat-vision"),
            None,
            None,
        ),
        (
            "model-LoRA-chat-vision",
            1,
            "model-LoRA-chat-vision",
            None,
            Some("model"),
            Some("LoRA-chat-vision"),
            None,
            None,
        ),
        ("7B-model", 0, "7B-model", None, None, Some("7B-model"), None, None),
        ("7B-model", 7000000000, "7B-model", None, None, Some("7B-model"), None, None),
        ("7B-model", 500000000, "7B-model", None, None, Some("7B-model"), None, None),
        ("7B-model", 135000000, "7B-model", None, None, Some("7B-model"), None, None),
        ("7B-model", -100000000, "7B-model", None, None, Some("7B-model"), None, None),
        ("7B-model", 46700000000, "7B-model", None, None, Some("7B-model"), None, None),
        ("7B-model", 1, "7B-model", None, None, Some("7B-model"), None, None),
        (
            "Llama-2-7b-chat-hf-fp16",
            0,
            "Llama-2-7b-chat-hf-fp16",
            None,
            Some("Llama-2"),
            Some("chat-hf"),
            None,
            Some("7B"),
        ),
        (
            "Llama-2-7b-chat-hf-fp16",
            7000000000,
            "Llama-2-7b-chat-hf-fp16",
            None,
            Some("Llama-2"),
            Some("chat-hf"),
            None,
            Some("7B"),
        ),
        (
            "Llama-2-7b-chat-hf-fp16",
            500000000,
            "Llama-2-7b-chat-hf-fp16",
            None,
            Some("Llama-2"),
            Some("7b-chat-hf"),
            None,
            None,
        ),
        (
            "Llama-2-7b-chat-hf-fp16",
            135000000,
            "Llama-2-7b-chat-hf-fp16",
            None,
            Some("Llama-2"),
            Some("7b-chat-hf"),
            None,
            None,
        ),
        (
            "Llama-2-7b-chat-hf-fp16",
            -100000000,
            "Llama-2-7b-chat-hf-fp16",
            None,
            Some("Llama-2"),
            Some("chat-hf"),
            None,
            Some("7B"),
        ),
        (
            "Llama-2-7b-chat-hf-fp16",
            46700000000,
            "Llama-2-7b-chat-hf-fp16",
            None,
            Some("Llama-2"),
            Some("chat-hf"),
            None,
            Some("7B"),
        ),
        (
            "Llama-2-7b-chat-hf-fp16",
            1,
            "Llama-2-7b-chat-hf-fp16",
            None,
            Some("Llama-2"),
            Some("7b-chat-hf"),
            None,
            None,
        ),
        ("x-1_5B", 0, "x-1_5B", None, Some("x"), None, None, Some("1.5B")),
        ("x-1_5B", 7000000000, "x-1_5B", None, Some("x"), None, None, Some("1.5B")),
        ("x-1_5B", 500000000, "x-1_5B", None, Some("x"), Some("1.5b"), None, None),
        ("x-1_5B", 135000000, "x-1_5B", None, Some("x"), Some("1.5b"), None, None),
        ("x-1_5B", -100000000, "x-1_5B", None, Some("x"), None, None, Some("1.5B")),
        ("x-1_5B", 46700000000, "x-1_5B", None, Some("x"), Some("1.5b"), None, None),
        ("x-1_5B", 1, "x-1_5B", None, Some("x"), Some("1.5b"), None, None),
        ("a/b/c-7B", 0, "b/c-7B", Some("a"), Some("b/c"), None, None, Some("7B")),
        ("a/b/c-7B", 7000000000, "b/c-7B", Some("a"), Some("b/c"), None, None, Some("7B")),
        ("a/b/c-7B", 500000000, "b/c-7B", Some("a"), Some("b/c"), Some("7b"), None, None),
        ("a/b/c-7B", 135000000, "b/c-7B", Some("a"), Some("b/c"), Some("7b"), None, None),
        ("a/b/c-7B", -100000000, "b/c-7B", Some("a"), Some("b/c"), None, None, Some("7B")),
        ("a/b/c-7B", 46700000000, "b/c-7B", Some("a"), Some("b/c"), None, None, Some("7B")),
        ("a/b/c-7B", 1, "b/c-7B", Some("a"), Some("b/c"), Some("7b"), None, None),
        ("Phi-3.5-MoE-instruct", 0, "Phi-3.5-MoE-instruct", None, Some("Phi-3.5-MoE"), Some("instruct"), None, None),
        (
            "Phi-3.5-MoE-instruct",
            7000000000,
            "Phi-3.5-MoE-instruct",
            None,
            Some("Phi-3.5-MoE"),
            Some("instruct"),
            None,
            None,
        ),
        (
            "Phi-3.5-MoE-instruct",
            500000000,
            "Phi-3.5-MoE-instruct",
            None,
            Some("Phi-3.5-MoE"),
            Some("instruct"),
            None,
            None,
        ),
        (
            "Phi-3.5-MoE-instruct",
            135000000,
            "Phi-3.5-MoE-instruct",
            None,
            Some("Phi-3.5-MoE"),
            Some("instruct"),
            None,
            None,
        ),
        (
            "Phi-3.5-MoE-instruct",
            -100000000,
            "Phi-3.5-MoE-instruct",
            None,
            Some("Phi-3.5-MoE"),
            Some("instruct"),
            None,
            None,
        ),
        (
            "Phi-3.5-MoE-instruct",
            46700000000,
            "Phi-3.5-MoE-instruct",
            None,
            Some("Phi-3.5-MoE"),
            Some("instruct"),
            None,
            None,
        ),
        ("Phi-3.5-MoE-instruct", 1, "Phi-3.5-MoE-instruct", None, Some("Phi-3.5-MoE"), Some("instruct"), None, None),
        ("stories15M", 0, "stories15M", None, None, None, None, None),
        ("stories15M", 7000000000, "stories15M", None, None, None, None, None),
        ("stories15M", 500000000, "stories15M", None, None, None, None, None),
        ("stories15M", 135000000, "stories15M", None, None, None, None, None),
        ("stories15M", -100000000, "stories15M", None, None, None, None, None),
        ("stories15M", 46700000000, "stories15M", None, None, None, None, None),
        ("stories15M", 1, "stories15M", None, None, None, None, None),
        ("stories-15M", 0, "stories-15M", None, Some("stories"), None, None, Some("15M")),
        ("stories-15M", 7000000000, "stories-15M", None, Some("stories"), Some("15m"), None, None),
        ("stories-15M", 500000000, "stories-15M", None, Some("stories"), Some("15m"), None, None),
        ("stories-15M", 135000000, "stories-15M", None, Some("stories"), Some("15m"), None, None),
        ("stories-15M", -100000000, "stories-15M", None, Some("stories"), None, None, Some("15M")),
        ("stories-15M", 46700000000, "stories-15M", None, Some("stories"), Some("15m"), None, None),
        ("stories-15M", 1, "stories-15M", None, Some("stories"), Some("15m"), None, None),
        ("model-16x3.8B-v1", 0, "model-16x3.8B-v1", None, Some("model"), None, Some("v1"), Some("16x3.8B")),
        ("model-16x3.8B-v1", 7000000000, "model-16x3.8B-v1", None, Some("model"), None, Some("v1"), Some("16x3.8B")),
        ("model-16x3.8B-v1", 500000000, "model-16x3.8B-v1", None, Some("model"), None, Some("v1"), Some("16x3.8B")),
        ("model-16x3.8B-v1", 135000000, "model-16x3.8B-v1", None, Some("model"), None, Some("v1"), Some("16x3.8B")),
        ("model-16x3.8B-v1", -100000000, "model-16x3.8B-v1", None, Some("model"), None, Some("v1"), Some("16x3.8B")),
        ("model-16x3.8B-v1", 46700000000, "model-16x3.8B-v1", None, Some("model"), None, Some("v1"), Some("16x3.8B")),
        ("model-16x3.8B-v1", 1, "model-16x3.8B-v1", None, Some("model"), None, Some("v1"), Some("16x3.8B")),
        ("model-1.5B2", 0, "model-1.5B2", None, Some("model"), None, None, Some("1.5.2B")),
        ("model-1.5B2", 7000000000, "model-1.5B2", None, Some("model"), None, None, Some("1.5.2B")),
        ("model-1.5B2", 500000000, "model-1.5B2", None, Some("model"), None, None, Some("1.5.2B")),
        ("model-1.5B2", 135000000, "model-1.5B2", None, Some("model"), None, None, Some("1.5.2B")),
        ("model-1.5B2", -100000000, "model-1.5B2", None, Some("model"), None, None, Some("1.5.2B")),
        ("model-1.5B2", 46700000000, "model-1.5B2", None, Some("model"), None, None, Some("1.5.2B")),
        ("model-1.5B2", 1, "model-1.5B2", None, Some("model"), None, None, Some("1.5.2B")),
        ("model-7B-7B-7b", 0, "model-7B-7B-7b", None, Some("model"), None, None, Some("7B")),
        ("model-7B-7B-7b", 7000000000, "model-7B-7B-7b", None, Some("model"), None, None, Some("7B")),
        ("model-7B-7B-7b", 500000000, "model-7B-7B-7b", None, Some("model"), Some("7b-7b-7b"), None, None),
        ("model-7B-7B-7b", 135000000, "model-7B-7B-7b", None, Some("model"), Some("7b-7b-7b"), None, None),
        ("model-7B-7B-7b", -100000000, "model-7B-7B-7b", None, Some("model"), None, None, Some("7B")),
        ("model-7B-7B-7b", 46700000000, "model-7B-7B-7b", None, Some("model"), None, None, Some("7B")),
        ("model-7B-7B-7b", 1, "model-7B-7B-7b", None, Some("model"), Some("7b-7b-7b"), None, None),
        ("m-IQ4_XS", 0, "m-IQ4_XS", None, None, None, None, None),
        ("m-IQ4_XS", 7000000000, "m-IQ4_XS", None, None, None, None, None),
        ("m-IQ4_XS", 500000000, "m-IQ4_XS", None, None, None, None, None),
        ("m-IQ4_XS", 135000000, "m-IQ4_XS", None, None, None, None, None),
        ("m-IQ4_XS", -100000000, "m-IQ4_XS", None, None, None, None, None),
        ("m-IQ4_XS", 46700000000, "m-IQ4_XS", None, None, None, None, None),
        ("m-IQ4_XS", 1, "m-IQ4_XS", None, None, None, None, None),
        ("m-iq4_0_4_4", 0, "m-iq4_0_4_4", None, None, None, None, None),
        ("m-iq4_0_4_4", 7000000000, "m-iq4_0_4_4", None, None, None, None, None),
        ("m-iq4_0_4_4", 500000000, "m-iq4_0_4_4", None, None, None, None, None),
        ("m-iq4_0_4_4", 135000000, "m-iq4_0_4_4", None, None, None, None, None),
        ("m-iq4_0_4_4", -100000000, "m-iq4_0_4_4", None, None, None, None, None),
        ("m-iq4_0_4_4", 46700000000, "m-iq4_0_4_4", None, None, None, None, None),
        ("m-iq4_0_4_4", 1, "m-iq4_0_4_4", None, None, None, None, None),
        ("m-q4__", 0, "m-q4__", None, None, None, None, None),
        ("m-q4__", 7000000000, "m-q4__", None, None, None, None, None),
        ("m-q4__", 500000000, "m-q4__", None, None, None, None, None),
        ("m-q4__", 135000000, "m-q4__", None, None, None, None, None),
        ("m-q4__", -100000000, "m-q4__", None, None, None, None, None),
        ("m-q4__", 46700000000, "m-q4__", None, None, None, None, None),
        ("m-q4__", 1, "m-q4__", None, None, None, None, None),
        ("m-BFP16", 0, "m-BFP16", None, None, None, None, None),
        ("m-BFP16", 7000000000, "m-BFP16", None, None, None, None, None),
        ("m-BFP16", 500000000, "m-BFP16", None, None, None, None, None),
        ("m-BFP16", 135000000, "m-BFP16", None, None, None, None, None),
        ("m-BFP16", -100000000, "m-BFP16", None, None, None, None, None),
        ("m-BFP16", 46700000000, "m-BFP16", None, None, None, None, None),
        ("m-BFP16", 1, "m-BFP16", None, None, None, None, None),
        ("m-fp32-f16", 0, "m-fp32-f16", None, None, None, None, None),
        ("m-fp32-f16", 7000000000, "m-fp32-f16", None, None, None, None, None),
        ("m-fp32-f16", 500000000, "m-fp32-f16", None, None, None, None, None),
        ("m-fp32-f16", 135000000, "m-fp32-f16", None, None, None, None, None),
        ("m-fp32-f16", -100000000, "m-fp32-f16", None, None, None, None, None),
        ("m-fp32-f16", 46700000000, "m-fp32-f16", None, None, None, None, None),
        ("m-fp32-f16", 1, "m-fp32-f16", None, None, None, None, None),
        ("Llama-7K", 0, "Llama-7K", None, Some("Llama"), None, None, Some("7K")),
        ("Llama-7K", 7000000000, "Llama-7K", None, Some("Llama"), Some("7k"), None, None),
        ("Llama-7K", 500000000, "Llama-7K", None, Some("Llama"), Some("7k"), None, None),
        ("Llama-7K", 135000000, "Llama-7K", None, Some("Llama"), Some("7k"), None, None),
        ("Llama-7K", -100000000, "Llama-7K", None, Some("Llama"), Some("7k"), None, None),
        ("Llama-7K", 46700000000, "Llama-7K", None, Some("Llama"), Some("7k"), None, None),
        ("Llama-7K", 1, "Llama-7K", None, Some("Llama"), Some("7k"), None, None),
        ("m-ınstruct", 0, "m-ınstruct", None, Some("m"), Some("ınstruct"), None, None),
        ("m-ınstruct", 7000000000, "m-ınstruct", None, Some("m"), Some("ınstruct"), None, None),
        ("m-ınstruct", 500000000, "m-ınstruct", None, Some("m"), Some("ınstruct"), None, None),
        ("m-ınstruct", 135000000, "m-ınstruct", None, Some("m"), Some("ınstruct"), None, None),
        ("m-ınstruct", -100000000, "m-ınstruct", None, Some("m"), Some("ınstruct"), None, None),
        ("m-ınstruct", 46700000000, "m-ınstruct", None, Some("m"), Some("ınstruct"), None, None),
        ("m-ınstruct", 1, "m-ınstruct", None, Some("m"), Some("ınstruct"), None, None),
        ("m-ıq4", 0, "m-ıq4", None, None, None, None, None),
        ("m-ıq4", 7000000000, "m-ıq4", None, None, None, None, None),
        ("m-ıq4", 500000000, "m-ıq4", None, None, None, None, None),
        ("m-ıq4", 135000000, "m-ıq4", None, None, None, None, None),
        ("m-ıq4", -100000000, "m-ıq4", None, None, None, None, None),
        ("m-ıq4", 46700000000, "m-ıq4", None, None, None, None, None),
        ("m-ıq4", 1, "m-ıq4", None, None, None, None, None),
        ("m-ſmall", 0, "m-ſmall", None, Some("m"), None, None, Some("ſmall")),
        ("m-ſmall", 7000000000, "m-ſmall", None, Some("m"), None, None, Some("ſmall")),
        ("m-ſmall", 500000000, "m-ſmall", None, Some("m"), None, None, Some("ſmall")),
        ("m-ſmall", 135000000, "m-ſmall", None, Some("m"), None, None, Some("ſmall")),
        ("m-ſmall", -100000000, "m-ſmall", None, Some("m"), None, None, Some("ſmall")),
        ("m-ſmall", 46700000000, "m-ſmall", None, Some("m"), None, None, Some("ſmall")),
        ("m-ſmall", 1, "m-ſmall", None, Some("m"), None, None, Some("ſmall")),
        ("école-7B", 0, "école-7B", None, Some("école"), None, None, Some("7B")),
        ("école-7B", 7000000000, "école-7B", None, Some("école"), None, None, Some("7B")),
        ("école-7B", 500000000, "école-7B", None, Some("école"), Some("7b"), None, None),
        ("école-7B", 135000000, "école-7B", None, Some("école"), Some("7b"), None, None),
        ("école-7B", -100000000, "école-7B", None, Some("école"), None, None, Some("7B")),
        ("école-7B", 46700000000, "école-7B", None, Some("école"), None, None, Some("7B")),
        ("école-7B", 1, "école-7B", None, Some("école"), Some("7b"), None, None),
        ("café-model-v2", 0, "café-model-v2", None, Some("café-model"), None, Some("v2"), None),
        ("café-model-v2", 7000000000, "café-model-v2", None, Some("café-model"), None, Some("v2"), None),
        ("café-model-v2", 500000000, "café-model-v2", None, Some("café-model"), None, Some("v2"), None),
        ("café-model-v2", 135000000, "café-model-v2", None, Some("café-model"), None, Some("v2"), None),
        ("café-model-v2", -100000000, "café-model-v2", None, Some("café-model"), None, Some("v2"), None),
        ("café-model-v2", 46700000000, "café-model-v2", None, Some("café-model"), None, Some("v2"), None),
        ("café-model-v2", 1, "café-model-v2", None, Some("café-model"), None, Some("v2"), None),
        (
            "m-1000000000000000000000000000000000000000B",
            0,
            "m-1000000000000000000000000000000000000000B",
            None,
            Some("m"),
            None,
            None,
            Some("1000000000000000000000000000000000000000B"),
        ),
        (
            "m-1000000000000000000000000000000000000000B",
            7000000000,
            "m-1000000000000000000000000000000000000000B",
            None,
            Some("m"),
            Some("1000000000000000000000000000000000000000b"),
            None,
            None,
        ),
        (
            "m-1000000000000000000000000000000000000000B",
            500000000,
            "m-1000000000000000000000000000000000000000B",
            None,
            Some("m"),
            Some("1000000000000000000000000000000000000000b"),
            None,
            None,
        ),
        (
            "m-1000000000000000000000000000000000000000B",
            135000000,
            "m-1000000000000000000000000000000000000000B",
            None,
            Some("m"),
            Some("1000000000000000000000000000000000000000b"),
            None,
            None,
        ),
        (
            "m-1000000000000000000000000000000000000000B",
            -100000000,
            "m-1000000000000000000000000000000000000000B",
            None,
            Some("m"),
            None,
            None,
            Some("1000000000000000000000000000000000000000B"),
        ),
        (
            "m-1000000000000000000000000000000000000000B",
            46700000000,
            "m-1000000000000000000000000000000000000000B",
            None,
            Some("m"),
            Some("1000000000000000000000000000000000000000b"),
            None,
            None,
        ),
        (
            "m-1000000000000000000000000000000000000000B",
            1,
            "m-1000000000000000000000000000000000000000B",
            None,
            Some("m"),
            Some("1000000000000000000000000000000000000000b"),
            None,
            None,
        ),
    ];

    /// `id_to_title` as gguf-py returns it.
    const TITLES: &[(&str, &str)] = &[
        ("meta-llama/Llama-2-7b-hf", "Meta llama/Llama 2 7b Hf"),
        ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "TinyLlama/TinyLlama 1.1B Chat v1.0"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistralai/Mixtral 8x7B Instruct v0.1"),
        ("Qwen2.5-0.5B", "Qwen2.5 0.5B"),
        ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5 0.5B Instruct"),
        ("bloom-7b1", "Bloom 7b1"),
        ("bigscience/bloomz-560m", "Bigscience/Bloomz 560m"),
        ("gemma-2-9b-it", "Gemma 2 9b It"),
        ("google/gemma-2-9b-it", "Google/Gemma 2 9b It"),
        ("SmolLM2-135M-Instruct", "SmolLM2 135M Instruct"),
        ("HuggingFaceTB/SmolLM2-1.7B", "HuggingFaceTB/SmolLM2 1.7B"),
        ("TinyLlama-SPM-bf16", "TinyLlama SPM Bf16"),
        ("phi-3-mini-4k-instruct", "Phi 3 Mini 4k Instruct"),
        ("microsoft/Phi-3-mini-128k-instruct", "microsoft/Phi 3 Mini 128k Instruct"),
        ("./local", "./Local"),
        ("../x/y", "../X/Y"),
        (".hidden/model-7B", ".Hidden/Model 7B"),
        ("a--b", "A B"),
        ("llama-v1.2.3-q4_0", "Llama v1.2.3 Q4_0"),
        ("Model 1", "Model 1"),
        ("", ""),
        ("-", ""),
        ("/", "/"),
        ("org/", "Org/"),
        ("/name", "/Name"),
        ("llama-13b-q4_K_M", "Llama 13b q4_K_M"),
        ("Mistral-7B-v0.1", "Mistral 7B v0.1"),
        ("Llama-3.2-1B-Instruct-Q8_0", "Llama 3.2 1B Instruct Q8_0"),
        ("deepseek-ai/DeepSeek-V2-Lite-Chat", "Deepseek ai/DeepSeek V2 Lite Chat"),
        ("Qwen/Qwen3-30B-A3B", "Qwen/Qwen3 30B A3B"),
        ("tiiuae/falcon-7b", "Tiiuae/Falcon 7b"),
        ("EleutherAI/gpt-neox-20b", "EleutherAI/gpt Neox 20b"),
        ("EleutherAI/pythia-70m-deduped", "EleutherAI/pythia 70m Deduped"),
        ("openai-community/gpt2-xl", "Openai Community/Gpt2 Xl"),
        ("t5-small", "T5 Small"),
        ("model-small-7B", "Model Small 7B"),
        ("model-xxl-large", "Model Xxl Large"),
        ("iter10-model", "Iter10 Model"),
        ("v2-model-lora", "v2 Model Lora"),
        ("model-LoRA-chat-vision", "Model LoRA Chat Vision"),
        ("7B-model", "7B Model"),
        ("Llama-2-7b-chat-hf-fp16", "Llama 2 7b Chat Hf Fp16"),
        ("x-1_5B", "X 1_5B"),
        ("a/b/c-7B", "A/B/C 7B"),
        ("Phi-3.5-MoE-instruct", "Phi 3.5 MoE Instruct"),
        ("stories15M", "stories15M"),
        ("stories-15M", "Stories 15M"),
        ("model-16x3.8B-v1", "Model 16x3.8B v1"),
        ("model-1.5B2", "Model 1.5B2"),
        ("model-7B-7B-7b", "Model 7B 7B 7b"),
        ("m-IQ4_XS", "M IQ4_XS"),
        ("m-iq4_0_4_4", "M Iq4_0_4_4"),
        ("m-q4__", "M Q4__"),
        ("m-BFP16", "M BFP16"),
        ("m-fp32-f16", "M Fp32 F16"),
        ("Llama-7K", "Llama 7K"),
        ("m-ınstruct", "M Instruct"),
        ("m-ıq4", "M Iq4"),
        ("m-ſmall", "M Small"),
        ("école-7B", "École 7B"),
        ("café-model-v2", "Café Model v2"),
        ("m-1000000000000000000000000000000000000000B", "M 1000000000000000000000000000000000000000B"),
        ("hello world", "Hello World"),
        ("  spaced\u{9}out  ", "Spaced Out"),
        ("v1.2", "v1.2"),
        ("v1.2a", "V1.2A"),
        ("7b", "7b"),
        ("o'neil", "O'Neil"),
        ("MixedCase", "MixedCase"),
        ("ABC-def", "ABC Def"),
        ("abc123def", "Abc123Def"),
        ("straße", "Straße"),
        ("ǆemal", "ǅemal"),
        ("ﬁsh", "Fish"),
        ("xᾳy", "Xᾳy"),
        ("ᾳ", "ᾼ"),
        ("ŉx", "ʼNx"),
        ("ǅa", "ǅa"),
        ("abǅ", "abǅ"),
        ("a\u{1c}b", "A B"),
        ("a b", "A B"),
        ("a b", "A B"),
        ("ªa", "ªa"),
        ("1st-place", "1st Place"),
        ("v1-v2", "v1 v2"),
        ("v", "V"),
        ("v1.", "V1."),
        ("ıi", "Ii"),
        ("xͅy", "Xͅy"),
    ];

    /// The arguments of `size_label`: total, shared, expert parameters, expert count.
    type Counts = (i64, i64, i64, u64);

    /// `size_label(total, shared, expert, expert_count)` as gguf-py returns it.
    const SIZES: &[(Counts, &str)] = &[
        ((0, 0, 0, 0), "0.00K"),
        ((1, 0, 0, 0), "0.00K"),
        ((999, 0, 0, 0), "1.0K"),
        ((1000, 0, 0, 0), "1.0K"),
        ((1001, 0, 0, 0), "1.0K"),
        ((125, 0, 0, 0), "0.12K"),
        ((6738415616, 0, 0, 0), "6.7B"),
        ((1100048384, 0, 0, 0), "1.1B"),
        ((134515008, 0, 0, 0), "135M"),
        ((494032768, 0, 0, 0), "494M"),
        ((46702792704, 1607000000, 5637000000, 8), "8x7.2B"),
        ((30532122624, 1500000000, 900000000, 128), "128x2.4B"),
        ((1000000000, 0, 0, 0), "1000M"),
        ((1000000001, 0, 0, 0), "1.0B"),
        ((999999999999, 0, 0, 0), "1000B"),
        ((1000000000001, 0, 0, 0), "1.0T"),
        ((10500000, 0, 0, 0), "10M"),
        ((9950000, 0, 0, 0), "10M"),
        ((-100000000, 0, 0, 0), "100M"),
        ((123456789012345, 0, 0, 0), "123T"),
        ((9223372036854775807, 0, 0, 0), "9223372T"),
        ((-9223372036854775808, 0, 0, 0), "9223372T"),
        ((0, -5000000, 5000000, 2), "2x10M"),
        ((99500, 0, 0, 0), "100K"),
        ((995000000, 0, 0, 0), "995M"),
        ((5, 3, 4, 1), "1x0.01K"),
    ];

    #[test]
    fn name_components_match_gguf_py() {
        let mut wrong = Vec::new();
        for &(id, total, full, org, basename, finetune, version, size) in COMPONENTS {
            let got = name_components(id, total);
            let want = NameComponents {
                full_name: full.to_string(),
                organization: org.map(str::to_string),
                basename: basename.map(str::to_string),
                finetune: finetune.map(str::to_string),
                version: version.map(str::to_string),
                size_label: size.map(str::to_string),
            };
            if got != want {
                wrong.push(format!("{id:?} {total}: got {got:?}, want {want:?}"));
            }
        }
        assert!(wrong.is_empty(), "{} of {} differ:\n{}", wrong.len(), COMPONENTS.len(), wrong.join("\n"));
    }

    #[test]
    fn titles_match_gguf_py() {
        let wrong: Vec<String> = TITLES
            .iter()
            .filter(|(s, want)| id_to_title(s) != *want)
            .map(|(s, want)| format!("{s:?}: got {:?}, want {want:?}", id_to_title(s)))
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn size_labels_match_gguf_py() {
        for &((total, shared, expert, count), want) in SIZES {
            assert_eq!(size_label(total, shared, expert, count), want, "{total} {shared} {expert} {count}");
        }
    }

    /// A text pair.
    fn text(key: &str, value: &str) -> (String, MetaValue) {
        (key.to_string(), MetaValue::Text(value.to_string()))
    }

    /// An `int32` pair.
    fn int(key: &str, value: i32) -> (String, MetaValue) {
        (key.to_string(), MetaValue::Number(Number::I32(value)))
    }

    /// A `float32` pair of a JSON (double) value.
    fn float(key: &str, value: f64) -> (String, MetaValue) {
        (key.to_string(), MetaValue::Number(Number::F32(value as f32)))
    }

    /// A checkpoint folder named `name` with `config.json`, maybe `README.md`, and the
    /// metadata derived from it.
    fn derive_in(
        name: &str,
        config: &str,
        generation: Option<&str>,
        readme: Option<&str>,
        counts: (i64, i64, i64, u64),
    ) -> Result<ModelMetadata> {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("config.json"), config).unwrap();
        if let Some(readme) = readme {
            std::fs::write(dir.join("README.md"), readme).unwrap();
        }
        let config: Value = serde_json::from_str(config).unwrap();
        let generation: Option<Value> = generation.map(|g| serde_json::from_str(g).unwrap());
        derive(&dir, &config, generation.as_ref(), counts.0, counts.1, counts.2, counts.3)
    }

    const TINY: (i64, i64, i64, u64) = (1_100_048_384, 1_100_048_384, 0, 0);
    const MOE: (i64, i64, i64, u64) = (46_702_792_704, 1_607_000_000, 5_637_000_000, 8);

    #[test]
    fn derive_from_name_or_path_and_sampling() {
        let m = derive_in(
            "TinyLlama-SPM-bf16",
            r#"{"_name_or_path": "TinyLlama/TinyLlama-1.1B-Chat-v1.0"}"#,
            Some(r#"{"temperature": 0.7, "top_p": 0.95, "top_k": 40}"#),
            None,
            TINY,
        )
        .unwrap();
        assert_eq!(
            m.to_kvs(),
            vec![
                int("general.sampling.top_k", 40),
                float("general.sampling.top_p", 0.95),
                float("general.sampling.temp", 0.7),
                text("general.name", "TinyLlama 1.1B Chat v1.0"),
                text("general.version", "v1.0"),
                text("general.organization", "TinyLlama"),
                text("general.finetune", "Chat"),
                text("general.basename", "TinyLlama"),
                text("general.size_label", "1.1B"),
            ]
        );
    }

    #[test]
    fn derive_from_folder_name() {
        let m = derive_in(
            "TinyLlama-SPM-bf16",
            r#"{"architectures": ["LlamaForCausalLM"]}"#,
            Some(r#"{"temperature": 1, "top_p": 0.9, "top_k": 50, "repetition_penalty": 1.1}"#),
            None,
            TINY,
        )
        .unwrap();
        assert_eq!(
            m.to_kvs(),
            vec![
                int("general.sampling.top_k", 50),
                float("general.sampling.top_p", 0.9),
                float("general.sampling.temp", 1.0),
                float("general.sampling.penalty_repeat", 1.1),
                text("general.name", "TinyLlama SPM Bf16"),
                text("general.size_label", "1.1B"),
            ]
        );
    }

    #[test]
    fn derive_skips_paths_and_cards_without_front_matter() {
        let m =
            derive_in("my model", r#"{"_name_or_path": "/home/u/a/b"}"#, None, Some("# Title\n---\n"), MOE).unwrap();
        assert_eq!(m.to_kvs(), vec![text("general.name", "My Model"), text("general.size_label", "8x7.2B")]);
    }

    #[test]
    fn derive_with_empty_name_and_odd_sampling_values() {
        let m = derive_in(
            "Mixtral-8x7B-v0.1",
            r#"{"_name_or_path": ""}"#,
            Some(r#"{"penalty_repeat": null, "repetition_penalty": 1.3, "sequence": "", "mirostat": true, "min_p": 0.05}"#),
            Some(""),
            MOE,
        )
        .unwrap();
        assert_eq!(
            m.to_kvs(),
            vec![
                float("general.sampling.min_p", 0.05),
                int("general.sampling.mirostat", 1),
                text("general.version", "v0.1"),
                text("general.basename", "Mixtral"),
                text("general.size_label", "8x7B"),
            ]
        );
    }

    #[test]
    fn derive_takes_empty_front_matter_as_no_card() {
        let m = derive_in("stories-15M", "{}", Some("{}"), Some("---\n\n# c\n---\nbody"), (0, 0, 0, 0)).unwrap();
        assert_eq!(
            m.to_kvs(),
            vec![
                text("general.name", "Stories 15M"),
                text("general.basename", "stories"),
                text("general.size_label", "15M")
            ]
        );
    }

    #[test]
    fn derive_refuses_what_it_cannot_reproduce() {
        let card = derive_in("m", "{}", None, Some("---\nlicense: mit\nversion: 1.5\n---\n"), TINY).unwrap_err();
        assert!(card.message().contains("README.md"), "{}", card.message());
        assert!(card.message().contains("version"), "{}", card.message());
        assert!(derive_in("m", "{}", None, Some("---\r\nlicense: mit\r\n"), TINY).is_ok());
        assert!(derive_in("m", "[]", None, None, TINY).is_err());
        assert!(derive_in("m", r#"{"_name_or_path": 3}"#, None, None, TINY).is_err());
        assert!(derive_in("m", "{}", Some(r#"{"top_k": 40.0}"#), None, TINY).is_err());
        assert!(derive_in("m", "{}", Some(r#"{"top_k": 2147483648}"#), None, TINY).is_err());
        assert!(derive_in("m", "{}", Some(r#"{"temperature": "hot"}"#), None, TINY).is_err());
        assert!(derive_in("m", "{}", Some(r#"{"top_p": 1e39}"#), None, TINY).is_err());
        assert!(derive_in("m", "{}", Some(r#"{"sequence": 5}"#), None, TINY).is_err());
        assert!(derive_in("m", "{}", Some("[1]"), None, TINY).is_err());
        assert!(derive_in("m", "{}", Some("[]"), None, TINY).is_ok());
        assert!(derive_in("m", "{}", None, Some("\u{feff}---\nlicense: mit\n---\n"), TINY).is_ok());
    }

    #[test]
    fn kvs_follow_the_writer_order_and_types() {
        let full = ModelMetadata {
            sampling_sequence: Some("edkypmxt".into()),
            sampling_mirostat_eta: Some(0.1),
            name: Some("N".into()),
            license: Some("mit,apache-2.0".into()),
            source_repo_url: Some("https://x".into()),
            description: Some(String::new()),
            tags: vec!["a".into(), "b".into()],
            languages: vec!["en".into()],
            ..ModelMetadata::default()
        };
        assert_eq!(
            full.to_kvs(),
            vec![
                text("general.sampling.sequence", "edkypmxt"),
                (String::from("general.sampling.mirostat_eta"), MetaValue::Number(Number::F32(0.1))),
                text("general.name", "N"),
                text("general.license", "mit,apache-2.0"),
                text("general.source.repo_url", "https://x"),
                (String::from("general.tags"), MetaValue::TypedArray(TypedArray::Text(vec!["a".into(), "b".into()]))),
                (String::from("general.languages"), MetaValue::TypedArray(TypedArray::Text(vec!["en".into()]))),
            ]
        );
    }

    #[test]
    fn folder_names_follow_pathlib() {
        assert_eq!(python_path_name(Path::new("a/b/")).unwrap(), "b");
        assert_eq!(python_path_name(Path::new("a/.")).unwrap(), "a");
        assert_eq!(python_path_name(Path::new(".")).unwrap(), "");
        assert_eq!(python_path_name(Path::new("a/..")).unwrap(), "..");
        assert_eq!(python_path_name(Path::new("/")).unwrap(), "");
    }
}
