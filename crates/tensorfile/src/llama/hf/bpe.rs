//! BPE vocabularies (`tokenizer.json` alone) as the converter writes them: `LlamaModel.set_vocab`
//! fails over from SentencePiece and `LlamaHfVocab` to `_set_vocab_gpt2`, which reads the
//! vocabulary as transformers' `AutoTokenizer` sees it (`get_vocab_base`), names the
//! pre-tokenizer by the hash of the ids of a fixed text (`get_vocab_base_pre`, `pre.rs`) and
//! adds gguf-py's `SpecialVocab` with the merges. The ids come from Hugging Face's tokenizers
//! library, handed in as a [`Tokenizers`]; the rest is read here.

mod pre;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::spm::Kvs;
use super::spm::special::SpecialVocab;
use super::spm::special::shared::{json_int, looks_special, read_json, truthy};
use super::tokenizer::{Tokenizer, Tokenizers};
use crate::error::{Error, Result, Rule};
use crate::limits::MAX_ENTRIES;
use crate::model::{MetaValue, TypedArray};

/// `gguf.TokenType`: a normal token.
const NORMAL: i32 = 1;
/// A control token.
const CONTROL: i32 = 3;
/// A user-defined token.
const USER_DEFINED: i32 = 4;
/// An unused token (the padding).
const UNUSED: i32 = 5;

/// `chktxt` of `get_vocab_base_pre`, exactly.
pub(crate) const CHKTXT: &str = "\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n\u{1f680} (normal) \u{1f636}\u{200d}\u{1f32b}\u{fe0f} (multiple emojis concatenated) \u{2705} \u{1f999}\u{1f999} 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 \u{1780}\u{17b6}\u{1793}\u{17cb}\u{178f}\u{17c2}\u{1796}\u{17b7}\u{179f}\u{17c1}\u{179f}\u{17a2}\u{17b6}\u{1785}\u{1f601} ?\u{6211}\u{60f3}\u{5728}apple\u{5de5}\u{4f5c}1314151\u{5929}\u{ff5e} ------======= \u{43d}\u{435}\u{449}\u{43e} \u{43d}\u{430} \u{411}\u{44a}\u{43b}\u{433}\u{430}\u{440}\u{441}\u{43a}\u{438} ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL";

/// transformers' special token attributes (`SPECIAL_TOKENS_ATTRIBUTES`), in order.
const SPECIAL_ATTRIBUTES: [&str; 8] = [
    "bos_token",
    "eos_token",
    "unk_token",
    "sep_token",
    "pad_token",
    "cls_token",
    "mask_token",
    "additional_special_tokens",
];

/// The tokenizers library's `AddedToken` (equal when every field is).
#[derive(Debug, Clone, PartialEq, Eq)]
struct AddedToken {
    content: String,
    single_word: bool,
    lstrip: bool,
    rstrip: bool,
    normalized: bool,
    special: bool,
}

impl AddedToken {
    /// `AddedToken(**fields)`: `normalized` defaults to `not special`.
    fn from_json(v: &Map<String, Value>, file: &Path) -> Result<AddedToken> {
        let content = match v.get("content") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(Error::invalid(Rule::BadField, "an added token has no text `content`").in_file(file)),
        };
        let flag = |k: &str| v.get(k).is_some_and(truthy);
        let special = flag("special");
        let normalized = v.get("normalized").map_or(!special, truthy);
        Ok(AddedToken {
            content,
            single_word: flag("single_word"),
            lstrip: flag("lstrip"),
            rstrip: flag("rstrip"),
            normalized,
            special,
        })
    }
}

/// The vocabulary as transformers' fast tokenizer holds it after `from_pretrained`: the BPE
/// model's vocabulary and the added tokens (tokenizers' `AddedVocabulary`).
#[derive(Debug, Default)]
struct HfVocab {
    /// The model's `vocab` (text -> id).
    model: BTreeMap<String, u32>,
    /// The model's size (`get_vocab_size`: its entry count).
    model_size: u32,
    /// `added_tokens_map_r`: id -> token.
    added: BTreeMap<u32, AddedToken>,
    /// `added_tokens_map`: text -> id.
    added_ids: BTreeMap<String, u32>,
}

impl HfVocab {
    /// tokenizers' `AddedVocabulary::add_tokens` (0.22): an identical token is skipped; a known
    /// text keeps its id (added first, then the model's) with the new flags; a new one takes
    /// the next id past the model and the added tokens.
    fn add_tokens(&mut self, tokens: &[AddedToken]) {
        let mut next = match self.added.keys().next_back() {
            None => self.model_size,
            Some(&max) if max >= self.model_size || self.model_size == 0 => max + 1,
            Some(_) => self.model_size,
        };
        for t in tokens {
            if t.content.is_empty() || self.added.values().any(|a| a == t) {
                continue;
            }
            let id = match self.added_ids.get(&t.content).or_else(|| self.model.get(&t.content)) {
                Some(&id) => id,
                None => {
                    next += 1;
                    next - 1
                }
            };
            self.added_ids.insert(t.content.clone(), id);
            self.added.insert(id, t.clone());
        }
    }

    /// `len(tokenizer.vocab)`: the distinct texts of the model and the added tokens.
    fn len(&self) -> usize {
        self.model.len() + self.added_ids.keys().filter(|k| !self.model.contains_key(*k)).count()
    }
}

/// A special token attribute's value as transformers keeps it: text, or an `AddedToken`.
fn special_value(v: &Value, file: &Path) -> Result<Option<AddedToken>> {
    Ok(match v {
        // AddedToken(text, special=True): not normalized
        Value::String(s) => Some(AddedToken {
            content: s.clone(),
            single_word: false,
            lstrip: false,
            rstrip: false,
            normalized: false,
            special: true,
        }),
        Value::Object(m) => Some(AddedToken::from_json(m, file)?),
        _ => None,
    })
}

/// `AutoTokenizer.from_pretrained(dir)`'s vocabulary for a folder with `tokenizer.json`:
/// its model vocabulary and added tokens, then (`PreTrainedTokenizerFast.__init__`) every
/// token of `tokenizer_config.json`'s `added_tokens_decoder` in id order and the special
/// tokens (`bos_token`..., `additional_special_tokens`; `special_tokens_map.json`'s when the
/// config has no `added_tokens_decoder`) not among the added tokens, added as special.
fn hf_vocab(
    tokenizer: &Value,
    tc: Option<&Map<String, Value>>,
    stm: Option<&Map<String, Value>>,
    dir: &Path,
) -> Result<HfVocab> {
    let tj = dir.join("tokenizer.json");
    let tc_path = dir.join("tokenizer_config.json");
    let bad = |what: &str| Error::invalid(Rule::BadField, what.to_string()).in_file(&tj);
    let mut v = HfVocab::default();
    let model_vocab = match tokenizer.get("model").and_then(|m| m.get("vocab")) {
        Some(Value::Object(m)) => m,
        _ => return Err(bad("`model.vocab` is not an object (a BPE vocabulary is expected)")),
    };
    if model_vocab.len() > MAX_ENTRIES {
        return Err(Error::invalid(Rule::TooManyEntries, format!("{} tokens", model_vocab.len())).in_file(&tj));
    }
    for (text, id) in model_vocab {
        let id =
            id.as_u64().and_then(|i| u32::try_from(i).ok()).ok_or_else(|| bad("a token id is not a 32-bit integer"))?;
        v.model.insert(text.clone(), id);
    }
    v.model_size = model_vocab.len() as u32;
    match tokenizer.get("added_tokens") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => {
            for t in a {
                let Value::Object(m) = t else { return Err(bad("an added token is not an object")) };
                let id = m.get("id").and_then(Value::as_u64).and_then(|i| u32::try_from(i).ok());
                let id = id.ok_or_else(|| bad("an added token's id is not a 32-bit integer"))?;
                let t = AddedToken::from_json(m, &tj)?;
                v.added_ids.insert(t.content.clone(), id);
                v.added.insert(id, t);
            }
        }
        Some(_) => return Err(bad("`added_tokens` is not a list")),
    }
    let empty = Map::new();
    let tc = tc.unwrap_or(&empty);
    let mut to_add: Vec<AddedToken> = Vec::new();
    let mut specials: Map<String, Value> = Map::new();
    for k in SPECIAL_ATTRIBUTES {
        if let Some(x) = tc.get(k).filter(|x| !x.is_null()) {
            specials.insert(k.to_string(), x.clone());
        }
    }
    match tc.get("added_tokens_decoder") {
        Some(Value::Object(decoder)) => {
            let mut entries: Vec<(i128, AddedToken)> = Vec::new();
            for (key, data) in decoder {
                let k = key.trim();
                let id: i128 = k.strip_prefix('+').unwrap_or(k).parse().map_err(|_| {
                    Error::invalid(Rule::BadField, format!("added token id {key:?} is not an integer"))
                        .in_file(&tc_path)
                })?;
                let Value::Object(m) = data else {
                    return Err(
                        Error::invalid(Rule::BadField, format!("added token {key} is not an object")).in_file(&tc_path)
                    );
                };
                entries.push((id, AddedToken::from_json(m, &tc_path)?));
            }
            entries.sort_by_key(|e| e.0);
            to_add.extend(entries.into_iter().map(|e| e.1));
        }
        Some(_) => {
            return Err(Error::invalid(Rule::BadField, "`added_tokens_decoder` is not an object").in_file(&tc_path));
        }
        None => {
            // legacy: special_tokens_map.json's values replace the config's
            for (k, x) in stm.into_iter().flatten() {
                specials.insert(k.clone(), x.clone());
            }
        }
    }
    // all_special_tokens_extended: in attribute order, first of each text
    let mut extended: Vec<AddedToken> = Vec::new();
    for k in SPECIAL_ATTRIBUTES {
        let Some(x) = specials.get(k) else { continue };
        let values: Vec<&Value> = match x {
            Value::Array(a) if k == "additional_special_tokens" => a.iter().collect(),
            x => vec![x],
        };
        for x in values {
            if let Some(t) = special_value(x, &tc_path)?
                && !extended.iter().any(|e| e.content == t.content)
            {
                extended.push(t);
            }
        }
    }
    let special_texts: Vec<String> = extended.iter().map(|t| t.content.clone()).collect();
    let encoder: Vec<String> = v.added_ids.keys().cloned().chain(to_add.iter().map(|t| t.content.clone())).collect();
    for t in extended {
        if !encoder.contains(&t.content) && !to_add.iter().any(|a| a.content == t.content) {
            to_add.push(t);
        }
    }
    for t in &mut to_add {
        t.special = t.special || special_texts.contains(&t.content);
    }
    v.add_tokens(&to_add);
    Ok(v)
}

/// What `LlamaHfVocab.__init__` decides of `tokenizer.json`: `true` when it takes the
/// vocabulary (a byte-fallback BPE with a `Sequence` decoder: the converter writes a
/// "llama" vocabulary then), `false` when it raises the `TypeError` (Llama 3: BPE with
/// `ignore_merges` and no byte fallback; a `null` decoder) or `FileNotFoundError` that
/// send the converter on to `_set_vocab_gpt2`.
fn llama_hf_takes(tokenizer: &Value, file: &Path) -> Result<bool> {
    let bad = |what: &str| Error::invalid(Rule::MissingField, what.to_string()).in_file(file);
    let model = tokenizer.get("model").ok_or_else(|| bad("`model` is missing"))?;
    let Value::Object(model) = model else { return Err(bad("`model` is not an object")) };
    let typ = model.get("type").ok_or_else(|| bad("`model.type` is missing"))?;
    let is_bpe = typ.as_str() == Some("BPE");
    let is_llama3 =
        is_bpe && model.get("ignore_merges").is_some_and(truthy) && !model.get("byte_fallback").is_none_or(truthy);
    if is_llama3 || !is_bpe || !model.get("byte_fallback").is_some_and(truthy) {
        return Ok(false);
    }
    match tokenizer.get("decoder") {
        None => Err(bad("`decoder` is missing")),
        Some(Value::Object(d)) => match d.get("type") {
            None => Err(bad("`decoder.type` is missing")),
            Some(t) => Ok(t.as_str() == Some("Sequence")),
        },
        // None['type'] and the like: a TypeError
        Some(_) => Ok(false),
    }
}

/// Python's `str(list_of_ints)`: `[1, 2, 3]`.
fn py_list(ids: &[u32]) -> String {
    let parts: Vec<String> = ids.iter().map(u32::to_string).collect();
    format!("[{}]", parts.join(", "))
}

/// `get_vocab_base_pre`: the pre-tokenizer's name from the sha256 of the ids of [`CHKTXT`]
/// (special tokens added); an unknown hash is refused, as the converter refuses it.
fn pre_tokenizer(tokenizer: &dyn Tokenizer, file: &Path) -> Result<&'static str> {
    let ids = tokenizer.encode(CHKTXT, true)?;
    let chkhsh = hex::encode(Sha256::digest(py_list(&ids).as_bytes()));
    pre_name(&chkhsh).ok_or_else(|| {
        Error::unsupported(format!(
            "BPE pre-tokenizer was not recognized (chkhsh {chkhsh}): llama.cpp's get_vocab_base_pre does not know it"
        ))
        .in_file(file)
    })
}

/// The name of a `chkhsh` (the converter tests every entry: the last match wins).
fn pre_name(chkhsh: &str) -> Option<&'static str> {
    pre::PRE_TOKENIZERS.iter().rev().find(|(h, _)| *h == chkhsh).map(|(_, n)| *n)
}

/// transformers' `clean_up_tokenization`.
fn clean_up(s: &str) -> String {
    s.replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re")
}

/// `get_vocab_base`'s tokens and token types: every id below `vocab_size`, `[PAD{i}]` where
/// none; an added token made CONTROL when special or looking special, else USER_DEFINED with
/// `▁` written as a space, a not-normalized one first put through `decode(encode(..))`.
fn tokens_and_types(
    v: &HfVocab,
    vocab_size: usize,
    round_trip: &mut dyn FnMut(&str) -> Result<String>,
) -> Result<(Vec<String>, Vec<i32>)> {
    let mut reverse: BTreeMap<u32, &str> = BTreeMap::new();
    for (text, id) in &v.model {
        reverse.insert(*id, text);
    }
    for (text, id) in &v.added_ids {
        reverse.insert(*id, text);
    }
    let mut tokens = Vec::with_capacity(vocab_size);
    let mut types = Vec::with_capacity(vocab_size);
    for i in 0..vocab_size {
        let Some(text) = u32::try_from(i).ok().and_then(|i| reverse.get(&i)) else {
            tokens.push(format!("[PAD{i}]"));
            types.push(UNUSED);
            continue;
        };
        let mut token = text.to_string();
        if v.added_ids.contains_key(&token) {
            let added = v
                .added
                .get(&(i as u32))
                .ok_or_else(|| Error::invalid(Rule::BadField, format!("added token {token:?} is not at id {i}")))?;
            if !added.normalized {
                token = round_trip(&token)?;
            }
            if added.special || looks_special(&token) {
                types.push(CONTROL);
            } else {
                token = token.replace('\u{2581}', " ");
                types.push(USER_DEFINED);
            }
        } else {
            types.push(NORMAL);
        }
        tokens.push(token);
    }
    Ok((tokens, types))
}

/// A JSON object file, `None` when absent.
fn read_object(path: &Path) -> Result<Option<Map<String, Value>>> {
    match read_json(path)? {
        None => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(Error::invalid(Rule::BadField, "not a JSON object").in_file(path)),
    }
}

/// Every key/value `LlamaModel.set_vocab` adds for the folder `dir` (`hparams`: its
/// `config.json`) on the GPT-2 BPE path, in order: `add_space_prefix`, the model ("gpt2")
/// and pre-tokenizer names, tokens, token types (`i32`), then `SpecialVocab` with the
/// merges, and the CodeLlama / Granite fix-ups.
pub(crate) fn gpt2_vocab_kvs(
    dir: &Path,
    hparams: &Value,
    tokenizers: &dyn Tokenizers,
    llama: bool,
) -> Result<Vec<(String, MetaValue)>> {
    vocab_kvs(dir, hparams, Some(tokenizers), llama)
}

/// [`gpt2_vocab_kvs`] without the tokenizers library, for the fuzz targets: every file read
/// and checked as the conversion reads it, the pre-tokenizer named `fuzz` and the added
/// tokens taken as they are (no round trip).
#[cfg(feature = "internals")]
pub(super) fn vocab_kvs_without_tokenizers(
    dir: &Path,
    hparams: &Value,
    llama: bool,
) -> Result<Vec<(String, MetaValue)>> {
    vocab_kvs(dir, hparams, None, llama)
}

/// [`gpt2_vocab_kvs`], the tokenizers library optional (see [`vocab_kvs_without_tokenizers`]).
fn vocab_kvs(
    dir: &Path,
    hparams: &Value,
    tokenizers: Option<&dyn Tokenizers>,
    llama: bool,
) -> Result<Vec<(String, MetaValue)>> {
    let mut kvs = Kvs::default();
    let tc_path = dir.join("tokenizer_config.json");
    let tj_path = dir.join("tokenizer.json");
    let tc = read_object(&tc_path)?;
    if let Some(tc) = tc.as_ref().filter(|_| llama) {
        if let Some(v) = tc.get("add_prefix_space").filter(|v| !v.is_null()) {
            kvs.set("tokenizer.ggml.add_space_prefix", MetaValue::Bool(truthy(v)));
        }
        if tc.get("tokenizer_class").and_then(Value::as_str) == Some("HybridDNATokenizer") {
            return Err(Error::unsupported("a HybridDNATokenizer vocabulary").in_file(&tc_path));
        }
    }
    let tokenizer = read_json(&tj_path)?
        .ok_or_else(|| Error::invalid(Rule::MissingFile, "tokenizer.json is not in the folder").in_file(&tj_path))?;
    if !tokenizer.is_object() {
        return Err(Error::invalid(Rule::BadField, "the tokenizer is not a JSON object").in_file(&tj_path));
    }
    if llama && llama_hf_takes(&tokenizer, &tj_path)? {
        return Err(Error::unsupported(
            "a byte-fallback BPE tokenizer.json (the converter's LlamaHfVocab \"llama\" vocabulary)",
        )
        .in_file(&tj_path));
    }
    let stm = read_object(&dir.join("special_tokens_map.json"))?;
    let vocab = hf_vocab(&tokenizer, tc.as_ref(), stm.as_ref(), dir)?;
    let cfg = dir.join("config.json");
    let vocab_size = match hparams.get("vocab_size") {
        None => vocab.len(),
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
    let max_id = vocab.model.values().chain(vocab.added_ids.values()).max().copied();
    if let Some(max_id) = max_id.filter(|&m| m as usize >= vocab_size) {
        return Err(Error::invalid(
            Rule::OutOfBounds,
            format!("token id {max_id} is not below vocab_size {vocab_size}"),
        )
        .in_file(&cfg));
    }
    let tokenizer = tokenizers.map(|t| t.load(&tj_path)).transpose()?;
    let pre = match &tokenizer {
        Some(tokenizer) => pre_tokenizer(tokenizer.as_ref(), &tj_path)?,
        None => "fuzz",
    };
    let clean = tc.as_ref().and_then(|tc| tc.get("clean_up_tokenization_spaces")).is_some_and(truthy);
    let mut round_trip = |text: &str| -> Result<String> {
        let Some(tokenizer) = &tokenizer else { return Ok(text.to_string()) };
        let decoded = tokenizer.decode(&tokenizer.encode(text, false)?)?;
        Ok(if clean { clean_up(&decoded) } else { decoded })
    };
    let (tokens, types) = tokens_and_types(&vocab, vocab_size, &mut round_trip)?;
    kvs.text("tokenizer.ggml.model", "gpt2");
    kvs.text("tokenizer.ggml.pre", pre);
    kvs.set("tokenizer.ggml.tokens", MetaValue::TypedArray(TypedArray::Text(tokens)));
    kvs.set("tokenizer.ggml.token_type", MetaValue::TypedArray(TypedArray::I32(types)));
    let default_types = ["bos", "eos", "unk", "sep", "pad", "cls", "mask"];
    SpecialVocab::load_with(dir, &default_types, None, true)?.add_to_gguf(&mut kvs)?;
    if !llama {
        return Ok(kvs.into_vec());
    }
    // hparams.get("vocab_size", 32000) == 32016 / == 49152, as Python compares numbers
    let hp_vocab = hparams.get("vocab_size").map_or(Some(32000.0), |v| match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => v.as_f64(),
    });
    if hp_vocab == Some(32016.0) {
        let fim = ["prefix", "suffix", "middle", "eot"];
        let mut sv = SpecialVocab::load(dir, &fim, None)?;
        for (typ, id) in fim.iter().zip([32007u32, 32008, 32009, 32010]) {
            sv.set_special_token(typ, &Value::from(id), &cfg)?;
        }
        sv.add_to_gguf(&mut kvs)?;
    }
    if hp_vocab == Some(49152.0) {
        kvs.set("tokenizer.ggml.add_bos_token", MetaValue::Bool(false));
    }
    Ok(kvs.into_vec())
}

#[cfg(test)]
mod tests;
