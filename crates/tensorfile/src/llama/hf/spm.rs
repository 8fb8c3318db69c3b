//! SentencePiece vocabularies as the converter writes them: the tokenizer key/values that
//! llama.cpp's `convert_hf_to_gguf.py` (`LlamaModel.set_vocab`, then
//! `_set_vocab_sentencepiece`) adds for a llama-architecture folder with a `tokenizer.model`,
//! in its order and with its value types, read without Python (`proto.rs`: the model file;
//! `special.rs`: gguf-py's `SpecialVocab`).

#[cfg(feature = "internals")]
pub(crate) mod fuzz;
pub(crate) mod proto;
pub(super) mod special;

use std::path::Path;

use serde_json::Value;

use crate::error::{Error, Result, Rule};
use crate::limits::MAX_ENTRIES;
use crate::model::{MetaValue, Number, TypedArray};

/// `SentencePieceTokenTypes` of the converter.
const NORMAL: i32 = 1;
/// An unknown token.
const UNKNOWN: i32 = 2;
/// A control token.
const CONTROL: i32 = 3;
/// A user-defined token.
const USER_DEFINED: i32 = 4;
/// An unused token (and the padding).
const UNUSED: i32 = 5;
/// A byte-fallback token.
const BYTE: i32 = 6;

/// Key/values in the order a `GGUFWriter` keeps them: adding a key again replaces its value
/// where it first came (a Python dict).
#[derive(Default)]
pub(crate) struct Kvs(Vec<(String, MetaValue)>);

impl Kvs {
    /// `add_key_value`: set `key`, in place when it is already there.
    pub(crate) fn set(&mut self, key: &str, value: MetaValue) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key.to_string(), value)),
        }
    }

    /// `add_string`: empty text adds nothing.
    fn set_text(&mut self, key: &str, value: &str) {
        if !value.is_empty() {
            self.set(key, MetaValue::Text(value.to_string()));
        }
    }
}

/// A `u32` GGUF value.
fn u32_value(v: u32) -> MetaValue {
    MetaValue::Number(Number::U32(v))
}

/// Python's truthiness of a JSON value.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

/// A text file as Python's text mode reads it: UTF-8, `\r\n` and `\r` read as `\n`; read
/// under its bound ([`super::checkpoint::read_bytes`]).
fn read_text(path: &Path) -> Result<String> {
    let bytes = super::checkpoint::read_bytes(path)?;
    let text =
        String::from_utf8(bytes).map_err(|_| Error::invalid(Rule::BadUtf8, "the file is not UTF-8").in_file(path))?;
    Ok(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// A JSON file's value, `None` when there is no such file; read under its bound
/// ([`super::checkpoint::read_json`]).
pub(super) fn read_json(path: &Path) -> Result<Option<Value>> {
    if !path.is_file() {
        return Ok(None);
    }
    super::checkpoint::read_json(path).map(Some)
}

/// `GGUFWriter.add_chat_template`: a string, or a list of `{name, template}` choices written
/// as `tokenizer.chat_template.{name}` plus the names (the `default` one as the template).
fn add_chat_template(kvs: &mut Kvs, value: &Value) -> Result<()> {
    let bad = |what: &str| Error::invalid(Rule::BadField, format!("chat template: {what}"));
    let Value::Array(choices) = value else {
        kvs.set_text("tokenizer.chat_template", value.as_str().unwrap_or_default());
        return Ok(());
    };
    let mut default: Option<&Value> = None;
    let mut names: Vec<String> = Vec::new();
    for choice in choices {
        let Value::Object(c) = choice else { return Err(bad("a choice is not an object")) };
        let name = match c.get("name") {
            None => "",
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err(bad("a name is not text")),
        };
        let name: String = name.chars().map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' }).collect();
        let template = c.get("template").filter(|t| !t.is_null());
        if let (false, Some(template)) = (name.is_empty(), template) {
            if name == "default" {
                default = Some(template);
            } else {
                let Value::String(t) = template else { return Err(bad("a template is not text")) };
                // Python keeps the names in a set; first-seen order here.
                if !names.contains(&name) {
                    names.push(name.clone());
                }
                kvs.set_text(&format!("tokenizer.chat_template.{name}"), t);
            }
        }
    }
    if !names.is_empty() {
        kvs.set("tokenizer.chat_templates", MetaValue::TypedArray(TypedArray::Text(names)));
    }
    if let Some(t) = default {
        let Value::String(t) = t else { return Err(bad("the default template is not text")) };
        kvs.set_text("tokenizer.chat_template", t);
    }
    Ok(())
}

/// A JSON integer as Python sees it (booleans included), `None` for other values.
fn json_int(v: &Value) -> Option<i128> {
    match v {
        Value::Bool(b) => Some(i128::from(*b)),
        Value::Number(n) => n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)),
        _ => None,
    }
}

/// `tokens[token_id]` as Python indexes a list: a negative id counts from the end.
fn index(id: i128, len: usize, path: &Path) -> Result<usize> {
    let i = if id < 0 { id + len as i128 } else { id };
    usize::try_from(i)
        .ok()
        .filter(|&i| i < len)
        .ok_or_else(|| Error::invalid(Rule::OutOfBounds, format!("token id {id} is out of range")).in_file(path))
}

/// Whether the converter's `does_token_look_special` takes `t` for a control token.
fn looks_special(t: &str) -> bool {
    matches!(t, "<pad>" | "<mask>" | "<2mass>" | "[@BOS@]")
        || (t.starts_with("<|") && t.ends_with("|>"))
        || (t.starts_with("<｜") && t.ends_with("｜>"))
        || (t.starts_with("<unused") && t.ends_with('>'))
}

/// `_create_vocab_sentencepiece`: the tokens, scores and token types.
fn create_vocab(dir: &Path, hparams: &Value) -> Result<(Vec<String>, Vec<f32>, Vec<i32>)> {
    let model_path = dir.join("tokenizer.model");
    if !model_path.is_file() {
        return Err(Error::invalid(
            Rule::MissingFile,
            "tokenizer.model is not in the folder: only SentencePiece vocabularies are supported so far",
        )
        .in_file(&model_path));
    }
    let bytes = super::checkpoint::read_bytes(&model_path)?;
    let pieces = proto::pieces(&bytes).map_err(|e| e.in_file(&model_path))?;
    let cfg = dir.join("config.json");
    // find_hparam(["vocab_size_per_layer_input", "vocab_size"]) or tokenizer.vocab_size()
    let found = ["vocab_size_per_layer_input", "vocab_size"].iter().find_map(|k| hparams.get(*k));
    let vocab_size = match found.filter(|v| truthy(v)) {
        None => pieces.len(),
        Some(v) => {
            let n = json_int(v).ok_or_else(|| {
                Error::invalid(Rule::BadField, format!("vocab_size {v} is not an integer")).in_file(&cfg)
            })?;
            if n < 0 || n > MAX_ENTRIES as i128 {
                return Err(Error::invalid(
                    Rule::TooManyEntries,
                    format!("vocab_size {n} is not between 0 and {MAX_ENTRIES}"),
                )
                .in_file(&cfg));
            }
            n as usize
        }
    };
    let mut tokens: Vec<String> = (0..vocab_size).map(|i| format!("[PAD{i}]")).collect();
    let mut scores = vec![-10000.0f32; vocab_size];
    let mut types = vec![UNUSED; vocab_size];
    for (id, p) in pieces.into_iter().enumerate().take(vocab_size) {
        types[id] = match p.kind {
            2 => UNKNOWN,
            3 => CONTROL,
            5 => UNUSED,
            6 => BYTE,
            _ => NORMAL,
        };
        tokens[id] = p.text;
        scores[id] = p.score;
    }
    let added_path = dir.join("added_tokens.json");
    if let Some(added) = read_json(&added_path)? {
        let Value::Object(m) = added else {
            return Err(Error::invalid(Rule::BadField, "added tokens are not a JSON object").in_file(&added_path));
        };
        for (key, id) in &m {
            let id = json_int(id).ok_or_else(|| {
                Error::invalid(Rule::BadField, format!("token id of {key:?} is not an integer")).in_file(&added_path)
            })?;
            if id >= vocab_size as i128 {
                continue;
            }
            let i = index(id, vocab_size, &added_path)?;
            tokens[i] = key.clone();
            scores[i] = -1000.0;
            types[i] = USER_DEFINED;
        }
    }
    let tc_path = dir.join("tokenizer_config.json");
    if let Some(tc) = read_json(&tc_path)? {
        let decoder = match tc.get("added_tokens_decoder") {
            None => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => {
                return Err(Error::invalid(Rule::BadField, "`added_tokens_decoder` is not an object").in_file(&tc_path));
            }
        };
        for (key, data) in decoder.into_iter().flatten() {
            let k = key.trim();
            let id: i128 = k.strip_prefix('+').unwrap_or(k).parse().map_err(|_| {
                Error::invalid(Rule::BadField, format!("added token id {key:?} is not an integer")).in_file(&tc_path)
            })?;
            let content = match data.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(_) => {
                    return Err(Error::invalid(Rule::BadField, format!("added token {key}: `content` is not text"))
                        .in_file(&tc_path));
                }
                None => {
                    return Err(Error::invalid(Rule::MissingField, format!("added token {key} has no `content`"))
                        .in_file(&tc_path));
                }
            };
            if id >= vocab_size as i128 {
                continue;
            }
            let i = index(id, vocab_size, &tc_path)?;
            if data.get("special").is_some_and(truthy) || looks_special(&content) {
                types[i] = CONTROL;
                tokens[i] = content;
            } else {
                types[i] = USER_DEFINED;
                tokens[i] = content.replace('\u{2581}', " ");
            }
            scores[i] = -1000.0;
        }
    }
    Ok((tokens, scores, types))
}

/// Every tokenizer key/value `LlamaModel.set_vocab` adds for a SentencePiece folder `dir`
/// (`hparams`: its `config.json`), in the order the GGUF file keeps them: `add_space_prefix`,
/// the model and pre-tokenizer names, tokens (a text array), scores (`f32`), token types
/// (`i32`), then what gguf-py's `SpecialVocab` finds (special token ids as `u32`, `add_*_token`
/// flags, the chat template, normalizer flags), and the CodeLlama / Granite fix-ups.
///
/// Without `llama` (another family's `_set_vocab_sentencepiece` alone), no `add_space_prefix`,
/// tekken or HybridDNA check, nor fix-ups.
pub(crate) fn sentencepiece_vocab_kvs(dir: &Path, hparams: &Value, llama: bool) -> Result<Vec<(String, MetaValue)>> {
    let mut kvs = Kvs::default();
    if llama && dir.join("tekken.json").is_file() && !dir.join("tokenizer.json").is_file() {
        return Err(Error::unsupported("a Mistral tekken.json vocabulary: only SentencePiece is supported so far")
            .in_file(dir.join("tekken.json")));
    }
    let tc_path = dir.join("tokenizer_config.json");
    if let Some(tc) = read_json(&tc_path)?.filter(|_| llama) {
        if !tc.is_object() {
            return Err(Error::invalid(Rule::BadField, "the tokenizer config is not a JSON object").in_file(&tc_path));
        }
        if let Some(v) = tc.get("add_prefix_space").filter(|v| !v.is_null()) {
            kvs.set("tokenizer.ggml.add_space_prefix", MetaValue::Bool(truthy(v)));
        }
        if tc.get("tokenizer_class").and_then(Value::as_str) == Some("HybridDNATokenizer") {
            return Err(Error::unsupported("a HybridDNATokenizer vocabulary: only SentencePiece is supported so far")
                .in_file(&tc_path));
        }
    }
    let (tokens, scores, types) = create_vocab(dir, hparams)?;
    let n_vocab = tokens.len() as u64;
    kvs.set_text("tokenizer.ggml.model", "llama");
    kvs.set_text("tokenizer.ggml.pre", "default");
    if !tokens.is_empty() {
        kvs.set("tokenizer.ggml.tokens", MetaValue::TypedArray(TypedArray::Text(tokens)));
        kvs.set("tokenizer.ggml.scores", MetaValue::TypedArray(TypedArray::F32(scores)));
        kvs.set("tokenizer.ggml.token_type", MetaValue::TypedArray(TypedArray::I32(types)));
    }
    let default_types = ["bos", "eos", "unk", "sep", "pad", "cls", "mask"];
    special::SpecialVocab::load(dir, &default_types, Some(n_vocab))?.add_to_gguf(&mut kvs)?;
    if !llama {
        return Ok(kvs.0);
    }
    // hparams.get("vocab_size", 32000) == 32016 / == 49152, as Python compares numbers
    let hp_vocab = hparams.get("vocab_size").map_or(Some(32000.0), |v| match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => v.as_f64(),
    });
    if hp_vocab == Some(32016.0) {
        let fim = ["prefix", "suffix", "middle", "eot"];
        let mut sv = special::SpecialVocab::load(dir, &fim, None)?;
        let cfg = dir.join("config.json");
        for (typ, id) in fim.iter().zip([32007u32, 32008, 32009, 32010]) {
            sv.set_special_token(typ, &Value::from(id), &cfg)?;
        }
        sv.add_to_gguf(&mut kvs)?;
    }
    if hp_vocab == Some(49152.0) {
        kvs.set("tokenizer.ggml.add_bos_token", MetaValue::Bool(false));
    }
    Ok(kvs.0)
}

/// The number of tokens `_create_vocab_sentencepiece` makes for the folder `dir` (Gemma 3
/// cuts its embeddings to it).
pub(crate) fn vocab_len(dir: &Path, hparams: &Value) -> Result<usize> {
    Ok(create_vocab(dir, hparams)?.0.len())
}

#[cfg(test)]
mod tests;
