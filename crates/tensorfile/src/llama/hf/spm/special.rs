//! gguf-py's `SpecialVocab` (`vocab.py`) as the converter runs it for a SentencePiece
//! vocabulary and (with `load_merges=True`) a BPE one: the merges, special token ids, `add_*_token` flags, the chat template and the normalizer
//! flags, read from `tokenizer.json`, `tokenizer_config.json`, `chat_template.jinja` /
//! `chat_template.json` and `config.json`, and added in `add_to_gguf`'s order.

use std::path::Path;

use serde_json::{Map, Value};

use super::{Kvs, read_json, read_text, truthy};
use crate::error::{Error, Result, Rule};
use crate::limits::{MAX_HF_CHAT_TEMPLATES, MAX_HF_CONFIG_BYTES};

/// What `SpecialVocab` found, in the insertion order of its Python dicts.
pub(crate) struct SpecialVocab {
    /// `special_token_types`.
    types: Vec<String>,
    /// `n_vocab`: ids at or past it are skipped.
    n_vocab: Option<u64>,
    /// `special_token_ids`.
    ids: Vec<(String, u64)>,
    /// `add_special_token`.
    add: Vec<(String, bool)>,
    /// `chat_template`: a string or a list of `{name, template}`.
    chat_template: Option<Value>,
    /// `normalizer_lowercase`.
    lowercase: Option<bool>,
    /// `normalizer_strip_accents`.
    strip_accents: Option<bool>,
    /// `load_merges`.
    load_merges: bool,
    /// `merges`: `tokenizer.json`'s, else `merges.txt`'s.
    merges: Vec<String>,
}

/// The JSON object `v.get(key, {})` gives, refused when it is not an object.
fn get_obj<'v>(v: &'v Value, key: &str, file: &Path) -> Result<Option<&'v Map<String, Value>>> {
    match v.get(key) {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(Error::invalid(Rule::BadField, format!("`{key}` is not an object")).in_file(file)),
    }
}

/// `item.get(outer, {}).get('id')`, with `item` required to be an object.
fn inner_id(item: &Value, outer: &str, file: &Path) -> Result<Value> {
    if !item.is_object() {
        return Err(Error::invalid(Rule::BadField, "a post-processor template item is not an object").in_file(file));
    }
    Ok(get_obj(item, outer, file)?.and_then(|m| m.get("id")).cloned().unwrap_or(Value::Null))
}

/// A JSON value as a list, refused when it is not one.
fn list<'v>(v: &'v Value, what: &str, file: &Path) -> Result<&'v [Value]> {
    match v {
        Value::Array(a) => Ok(a),
        _ => Err(Error::invalid(Rule::BadField, format!("`{what}` is not a list")).in_file(file)),
    }
}

impl SpecialVocab {
    /// `SpecialVocab(dir, load_merges=False, special_token_types=types, n_vocab=n_vocab)`.
    pub(crate) fn load(dir: &Path, types: &[&str], n_vocab: Option<u64>) -> Result<Self> {
        Self::load_with(dir, types, n_vocab, false)
    }

    /// `SpecialVocab(dir, load_merges=load_merges, special_token_types=types, n_vocab=n_vocab)`.
    pub(crate) fn load_with(dir: &Path, types: &[&str], n_vocab: Option<u64>, load_merges: bool) -> Result<Self> {
        let mut sv = SpecialVocab {
            types: types.iter().map(|t| t.to_string()).collect(),
            n_vocab,
            ids: Vec::new(),
            add: Vec::new(),
            chat_template: None,
            lowercase: None,
            strip_accents: None,
            load_merges,
            merges: Vec::new(),
        };
        sv.read_tokenizer_json(dir)?;
        sv.read_config_json(dir)?;
        if sv.load_merges && sv.merges.is_empty() {
            sv.read_merges_txt(dir)?;
        }
        Ok(sv)
    }

    /// `_set_special_token`: JSON integers (and booleans, which Python counts as integers)
    /// only; the first id of a type wins.
    pub(crate) fn set_special_token(&mut self, typ: &str, tid: &Value, file: &Path) -> Result<()> {
        let id = match tid {
            Value::Bool(b) => u64::from(*b),
            Value::Number(n) if n.is_u64() => n.as_u64().unwrap_or(u64::MAX),
            Value::Number(n) if n.is_i64() => {
                return Err(Error::invalid(Rule::BadField, format!("invalid value for special token type {typ}: {n}"))
                    .in_file(file));
            }
            _ => return Ok(()),
        };
        if self.n_vocab.is_none_or(|n| id < n) && !self.ids.iter().any(|(t, _)| t == typ) {
            self.ids.push((typ.to_string(), id));
        }
        Ok(())
    }

    /// `add_special_token.setdefault(typ, value)`.
    fn add_default(&mut self, typ: &str, value: bool) {
        if !self.add.iter().any(|(t, _)| t == typ) {
            self.add.push((typ.to_string(), value));
        }
    }

    /// `add_special_token[typ] = value`.
    fn add_set(&mut self, typ: &str, value: bool) {
        match self.add.iter_mut().find(|(t, _)| t == typ) {
            Some(slot) => slot.1 = value,
            None => self.add.push((typ.to_string(), value)),
        }
    }

    /// `_parse_normalizer`.
    fn parse_normalizer(&mut self, normalizer: &Value, file: &Path) -> Result<()> {
        let Value::Object(m) = normalizer else {
            return Err(Error::invalid(Rule::BadField, "a normalizer is not an object").in_file(file));
        };
        match m.get("type").and_then(Value::as_str) {
            Some("Lowercase") => self.lowercase = Some(true),
            Some("StripAccents") => self.strip_accents = Some(true),
            Some("BertNormalizer") => {
                if let Some(v) = m.get("lowercase") {
                    self.lowercase = (!v.is_null()).then(|| truthy(v));
                }
                if let Some(v) = m.get("strip_accents") {
                    self.strip_accents = (!v.is_null()).then(|| truthy(v));
                }
            }
            Some("Sequence") => {
                if let Some(list_v) = m.get("normalizers") {
                    for n in list(list_v, "normalizers", file)? {
                        self.parse_normalizer(n, file)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `_try_load_from_tokenizer_json` (which also reads `tokenizer_config.json` and the chat
    /// template files).
    fn read_tokenizer_json(&mut self, dir: &Path) -> Result<()> {
        let tj_path = dir.join("tokenizer.json");
        let tc_path = dir.join("tokenizer_config.json");
        let tokenizer = read_json(&tj_path)?;
        let mut added_tokens: Vec<Value> = Vec::new();
        if let Some(tok) = &tokenizer {
            if !tok.is_object() {
                return Err(Error::invalid(Rule::BadField, "the tokenizer is not a JSON object").in_file(&tj_path));
            }
            if self.load_merges {
                let model = match tok.get("model") {
                    None => None,
                    Some(m @ Value::Object(_)) => Some(m),
                    Some(_) => {
                        return Err(Error::invalid(Rule::BadField, "`model` is not an object").in_file(&tj_path));
                    }
                };
                if let Some(Value::Array(merges)) = model.and_then(|m| m.get("merges")) {
                    self.merges = json_merges(merges).map_err(|e| e.in_file(&tj_path))?;
                }
            }
            if let Some(n) = tok.get("normalizer").filter(|n| truthy(n)) {
                self.parse_normalizer(n, &tj_path)?;
            }
            match tok.get("added_tokens") {
                None => {}
                Some(Value::Array(a)) => added_tokens = a.clone(),
                Some(Value::Object(m)) if m.is_empty() => {}
                Some(_) => return Err(Error::invalid(Rule::BadField, "`added_tokens` is not a list").in_file(&tj_path)),
            }
        }
        let mut tc = match read_json(&tc_path)? {
            None => Map::new(),
            Some(Value::Object(m)) => m,
            Some(v) if !truthy(&v) => Map::new(),
            Some(_) => {
                return Err(
                    Error::invalid(Rule::BadField, "the tokenizer config is not a JSON object").in_file(&tc_path)
                );
            }
        };
        if let Some(tok) = tokenizer.as_ref().filter(|t| truthy(t)) {
            self.post_processor(tok, &mut tc, &tj_path)?;
        }
        if tc.is_empty() {
            return Ok(());
        }
        let mut alt: Option<Value> = None;
        let jinja = dir.join("chat_template.jinja");
        let json = dir.join("chat_template.json");
        if jinja.is_file() {
            let default = Value::String(read_text(&jinja)?);
            let extra_dir = dir.join("additional_chat_templates");
            let mut extra: Vec<std::path::PathBuf> = Vec::new();
            for p in std::fs::read_dir(&extra_dir).into_iter().flatten().filter_map(|e| e.ok().map(|e| e.path())) {
                if p.extension().is_some_and(|x| x == "jinja") && p.file_stem().is_some() {
                    if extra.len() >= MAX_HF_CHAT_TEMPLATES {
                        return Err(Error::invalid(
                            Rule::TooManyEntries,
                            format!("more than {MAX_HF_CHAT_TEMPLATES} chat templates (limit MAX_HF_CHAT_TEMPLATES)"),
                        )
                        .in_file(&extra_dir));
                    }
                    extra.push(p);
                }
            }
            // Python's glob order is the folder's listing order; sorted here to be reproducible.
            extra.sort();
            if extra.is_empty() {
                alt = Some(default);
            } else {
                let mut choices = vec![serde_json::json!({"name": "default", "template": default})];
                // Each template is bounded as it is read, and all of them together.
                let mut total = default.as_str().map_or(0, str::len);
                for p in extra {
                    let name = p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
                    let template = read_text(&p)?;
                    total = total.saturating_add(template.len());
                    if total as u64 > MAX_HF_CONFIG_BYTES {
                        return Err(Error::invalid(
                            Rule::HeaderTooLarge,
                            format!(
                                "the chat templates together are over {MAX_HF_CONFIG_BYTES} bytes (limit MAX_HF_CONFIG_BYTES)"
                            ),
                        )
                        .in_file(&p));
                    }
                    choices.push(serde_json::json!({"name": name, "template": template}));
                }
                alt = Some(Value::Array(choices));
            }
        } else if json.is_file() {
            match read_json(&json)? {
                Some(Value::Object(m)) => alt = m.get("chat_template").cloned(),
                _ => {
                    return Err(
                        Error::invalid(Rule::BadField, "the chat template file is not a JSON object").in_file(&json)
                    );
                }
            }
        }
        let chat_template = match tc.get("chat_template") {
            Some(v) => Some(v.clone()),
            None => alt,
        };
        match chat_template {
            Some(Value::Null) | None => self.chat_template = None,
            Some(v @ (Value::String(_) | Value::Array(_))) => self.chat_template = Some(v),
            Some(_) => {} // "Bad type for chat_template field": ignored
        }
        for typ in self.types.clone() {
            if let Some(Value::Bool(b)) = tc.get(&format!("add_{typ}_token")) {
                self.add_default(&typ, *b);
            }
            let content = match tc.get(&format!("{typ}_token")) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Object(m)) => match m.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    _ => continue,
                },
                _ => continue,
            };
            let mut found = Value::Null;
            for atok in &added_tokens {
                let Value::Object(a) = atok else {
                    return Err(Error::invalid(Rule::BadField, "an added token is not an object").in_file(&tj_path));
                };
                if a.get("content").and_then(Value::as_str) == Some(content.as_str()) {
                    found = a.get("id").cloned().unwrap_or(Value::Null);
                    break;
                }
            }
            self.set_special_token(&typ, &found, &tc_path)?;
        }
        Ok(())
    }

    /// The `post_processor` part of `_try_load_from_tokenizer_json`, which may also rewrite the
    /// tokenizer config (in memory) and add `eot`/`eom` to the special token types.
    fn post_processor(&mut self, tok: &Value, tc: &mut Map<String, Value>, file: &Path) -> Result<()> {
        let get = |tc: &Map<String, Value>, k: &str| tc.get(k).cloned().unwrap_or(Value::Null);
        let mut bos = get(tc, "bos_token");
        let mut cls = get(tc, "cls_token");
        let mut eos = get(tc, "eos_token");
        let mut sep = get(tc, "sep_token");
        if !truthy(&bos) && truthy(&cls) && !tc.is_empty() {
            bos = cls.clone();
            tc.insert("bos_token".into(), bos.clone());
        }
        if !truthy(&eos) && truthy(&sep) && !tc.is_empty() {
            eos = sep.clone();
            tc.insert("eos_token".into(), eos.clone());
        }
        let Some(pp) = tok.get("post_processor").filter(|p| truthy(p)) else { return Ok(()) };
        if !pp.is_object() {
            return Err(Error::invalid(Rule::BadField, "`post_processor` is not an object").in_file(file));
        }
        let processors: Vec<Value> = match pp.get("processors") {
            Some(v) => list(v, "processors", file)?.to_vec(),
            None => vec![pp.clone()],
        };
        for processor in &processors {
            if !processor.is_object() {
                return Err(Error::invalid(Rule::BadField, "a post-processor is not an object").in_file(file));
            }
            match processor.get("type").and_then(Value::as_str) {
                Some("ByteLevel") => {
                    self.add_default("bos", false);
                    self.add_default("eos", false);
                }
                Some("RobertaProcessing") => {
                    self.add_set("bos", true);
                    self.add_set("eos", true);
                    self.add_set("sep", true);
                    let first = |key: &str, dflt: &Value| -> Result<Value> {
                        match processor.get(key) {
                            None => Ok(dflt.clone()),
                            Some(Value::Array(a)) => a.first().cloned().ok_or_else(|| {
                                Error::invalid(Rule::BadField, format!("`{key}` of RobertaProcessing is empty"))
                                    .in_file(file)
                            }),
                            Some(Value::String(s)) => {
                                Ok(s.chars().next().map(|c| Value::String(c.to_string())).ok_or_else(|| {
                                    Error::invalid(Rule::BadField, format!("`{key}` of RobertaProcessing is empty"))
                                        .in_file(file)
                                })?)
                            }
                            Some(_) => Err(Error::invalid(
                                Rule::BadField,
                                format!("`{key}` of RobertaProcessing is not a list"),
                            )
                            .in_file(file)),
                        }
                    };
                    if !truthy(&cls) && !tc.is_empty() {
                        cls = first("cls", &bos)?;
                        tc.insert("cls_token".into(), cls.clone());
                    }
                    if !truthy(&sep) && !tc.is_empty() {
                        sep = first("sep", &eos)?;
                        tc.insert("sep_token".into(), sep.clone());
                    }
                }
                Some("TemplateProcessing") => {
                    let empty = Value::Array(Vec::new());
                    let single = list(processor.get("single").unwrap_or(&empty), "single", file)?;
                    let pair_all = list(processor.get("pair").unwrap_or(&empty), "pair", file)?;
                    let mut special_first = Value::Null;
                    let mut special_last = Value::Null;
                    if single.len() > 1 {
                        special_first = inner_id(&single[0], "SpecialToken", file)?;
                        if truthy(&special_first) {
                            if tc.is_empty() {
                                bos = special_first.clone();
                            } else if special_first != bos && special_first != cls {
                                if !truthy(&bos) {
                                    bos = special_first.clone();
                                    tc.insert("bos_token".into(), bos.clone());
                                }
                                if !truthy(&cls) {
                                    cls = special_first.clone();
                                    tc.insert("cls_token".into(), cls.clone());
                                }
                            }
                            self.add_set("bos", special_first == bos || special_first == cls);
                        }
                        special_last = inner_id(&single[single.len() - 1], "SpecialToken", file)?;
                        if truthy(&special_last) {
                            if tc.is_empty() {
                                eos = special_last.clone();
                            } else if special_last != eos {
                                if !self.types.iter().any(|t| t == "eot") {
                                    self.types.push("eot".into());
                                    tc.insert("eot_token".into(), eos.clone());
                                } else if !self.types.iter().any(|t| t == "eom") {
                                    self.types.push("eom".into());
                                    tc.insert("eom_token".into(), eos.clone());
                                }
                                eos = special_last.clone();
                                tc.insert("eos_token".into(), eos.clone());
                            }
                            self.add_set("eos", special_last == eos);
                        }
                    }
                    if !pair_all.is_empty() {
                        let start = usize::from(
                            truthy(&special_first) && inner_id(&pair_all[0], "SpecialToken", file)? == special_first,
                        );
                        let drop_last = truthy(&special_last)
                            && inner_id(&pair_all[pair_all.len() - 1], "SpecialToken", file)? == special_last;
                        let stop = if drop_last { pair_all.len() - 1 } else { pair_all.len() };
                        let pair = if start < stop { &pair_all[start..stop] } else { &[][..] };
                        if !pair.is_empty() {
                            let a = inner_id(&pair[0], "Sequence", file)?;
                            let b = inner_id(&pair[pair.len() - 1], "Sequence", file)?;
                            let inner = if pair.len() >= 2 { &pair[1..pair.len() - 1] } else { &[][..] };
                            if a == "A" && b == "B" && !inner.is_empty() {
                                let mut add_sep = false;
                                let entry = inner_id(&inner[0], "SpecialToken", file)?;
                                if truthy(&entry) && (entry == sep || entry == eos) && !truthy(&special_last) {
                                    add_sep = true;
                                }
                                if inner.len() == 2 {
                                    let entry = inner_id(&inner[1], "SpecialToken", file)?;
                                    if truthy(&entry) && (entry == sep || entry == eos) {
                                        add_sep = true;
                                    }
                                }
                                self.add_set("sep", add_sep);
                                if add_sep && !truthy(&sep) && !tc.is_empty() {
                                    tc.insert("sep_token".into(), eos.clone());
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// `_try_load_from_config_json`: `{typ}_token_id`, at the root or under `text_config`.
    fn read_config_json(&mut self, dir: &Path) -> Result<()> {
        let path = dir.join("config.json");
        let Some(config) = read_json(&path)? else { return Ok(()) };
        if !config.is_object() {
            return Err(Error::invalid(Rule::BadField, "the config is not a JSON object").in_file(&path));
        }
        for typ in self.types.clone() {
            let key = format!("{typ}_token_id");
            let mut id = config.get(&key).cloned().unwrap_or(Value::Null);
            if id.is_null()
                && let Some(text) = config.get("text_config")
            {
                if !text.is_object() {
                    return Err(Error::invalid(Rule::BadField, "`text_config` is not an object").in_file(&path));
                }
                id = text.get(&key).cloned().unwrap_or(Value::Null);
            }
            self.set_special_token(&typ, &id, &path)?;
        }
        Ok(())
    }

    /// `_try_load_merges_txt`: `merges.txt`, a `#` first line skipped, lines of two
    /// whitespace-separated parts kept (joined by one space), others ignored.
    fn read_merges_txt(&mut self, dir: &Path) -> Result<()> {
        let path = dir.join("merges.txt");
        if !path.is_file() {
            return Ok(());
        }
        let text = read_text(&path)?;
        let mut lines = text.split_inclusive('\n').peekable();
        if lines.peek().is_some_and(|l| l.trim_matches(py_space).starts_with('#')) {
            lines.next();
        }
        self.merges = lines
            .filter_map(|line| {
                let parts: Vec<&str> = line.split(py_space).filter(|p| !p.is_empty()).take(3).collect();
                (parts.len() == 2).then(|| format!("{} {}", parts[0], parts[1]))
            })
            .collect();
        Ok(())
    }

    /// `add_to_gguf`: the merges (when loaded), then the special tokens' ids and flags, the
    /// chat template and the normalizer flags.
    pub(crate) fn add_to_gguf(&self, kvs: &mut Kvs) -> Result<()> {
        if !self.merges.is_empty() {
            kvs.set(
                "tokenizer.ggml.merges",
                crate::model::MetaValue::TypedArray(crate::model::TypedArray::Text(self.merges.clone())),
            );
        }
        for (typ, id) in &self.ids {
            let key = match typ.as_str() {
                "bos" => "tokenizer.ggml.bos_token_id",
                "eos" => "tokenizer.ggml.eos_token_id",
                "unk" => "tokenizer.ggml.unknown_token_id",
                "sep" => "tokenizer.ggml.seperator_token_id",
                "pad" => "tokenizer.ggml.padding_token_id",
                "mask" => "tokenizer.ggml.mask_token_id",
                "eot" => "tokenizer.ggml.eot_token_id",
                "eom" => "tokenizer.ggml.eom_token_id",
                _ => continue, // "No handler for special token type"
            };
            let id = u32::try_from(*id).map_err(|_| {
                Error::invalid(Rule::BadField, format!("special token id {id} does not fit in 32 bits"))
            })?;
            kvs.set(key, super::u32_value(id));
        }
        for (typ, value) in &self.add {
            let key = match typ.as_str() {
                "bos" => "tokenizer.ggml.add_bos_token",
                "eos" => "tokenizer.ggml.add_eos_token",
                "sep" => "tokenizer.ggml.add_sep_token",
                _ => continue,
            };
            kvs.set(key, crate::model::MetaValue::Bool(*value));
        }
        if let Some(t) = &self.chat_template {
            super::add_chat_template(kvs, t)?;
        }
        if let Some(v) = self.lowercase {
            kvs.set("tokenizer.ggml.normalizer.lowercase", crate::model::MetaValue::Bool(v));
        }
        if let Some(v) = self.strip_accents {
            kvs.set("tokenizer.ggml.normalizer.strip_accents", crate::model::MetaValue::Bool(v));
        }
        Ok(())
    }
}

/// Whitespace as Python's `str.split()` / `str.strip()` see it (`str.isspace`).
fn py_space(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{1c}'..='\u{1f}')
}

/// `tokenizer.json`'s `model.merges` as gguf-py keeps them: a list of strings as it is; a
/// list of pairs (transformers 4.45 and later) as each pair's parts joined by a space, a space
/// inside a part written as U+0120 (`chr(ord(' ') + 256)`); an empty list as none.
pub(crate) fn json_merges(merges: &[Value]) -> Result<Vec<String>> {
    let bad = || Error::invalid(Rule::BadField, "unknown tokenizer merges format");
    match merges.first() {
        None => Ok(Vec::new()),
        Some(Value::String(_)) => merges.iter().map(|m| m.as_str().map(str::to_string).ok_or_else(bad)).collect(),
        Some(Value::Array(first)) if first.len() == 2 && first[0].is_string() => merges
            .iter()
            .map(|pair| {
                let Value::Array(parts) = pair else { return Err(bad()) };
                let parts: Vec<String> = parts
                    .iter()
                    .map(|p| p.as_str().map(|p| p.replace(' ', "\u{120}")).ok_or_else(bad))
                    .collect::<Result<_>>()?;
                Ok(parts.join(" "))
            })
            .collect(),
        Some(_) => Err(bad()),
    }
}

/// The SentencePiece path's helpers, for the BPE path (`bpe.rs`), which shares them.
pub(crate) mod shared {
    use std::path::Path;

    use serde_json::Value;

    use super::super::Kvs;
    use crate::error::Result;
    use crate::model::MetaValue;

    /// Python's truthiness of a JSON value.
    pub(crate) fn truthy(v: &Value) -> bool {
        super::super::truthy(v)
    }

    /// A JSON file's value, `None` when there is no such file.
    pub(crate) fn read_json(path: &Path) -> Result<Option<Value>> {
        super::super::read_json(path)
    }

    /// A JSON integer as Python sees it (booleans included).
    pub(crate) fn json_int(v: &Value) -> Option<i128> {
        super::super::json_int(v)
    }

    /// The converter's `does_token_look_special`.
    pub(crate) fn looks_special(t: &str) -> bool {
        super::super::looks_special(t)
    }

    impl Kvs {
        /// `add_string`: empty text adds nothing.
        pub(crate) fn text(&mut self, key: &str, value: &str) {
            self.set_text(key, value);
        }

        /// The key/values, in order.
        pub(crate) fn into_vec(self) -> Vec<(String, MetaValue)> {
            self.0
        }
    }
}
