//! The BPE path's pieces, with a fake tokenizers library.

use std::path::Path;

use serde_json::json;

use super::*;
use crate::llama::hf::spm::special::json_merges;

/// A tokenizer that gives fixed ids and decodes to a fixed text.
#[derive(Debug)]
struct Fake(Vec<u32>);

impl Tokenizer for Fake {
    fn encode(&self, _text: &str, _add_special_tokens: bool) -> Result<Vec<u32>> {
        Ok(self.0.clone())
    }
    fn decode(&self, _ids: &[u32]) -> Result<String> {
        Ok("decoded".into())
    }
}

#[derive(Debug)]
struct FakeLib(Vec<u32>);

impl Tokenizers for FakeLib {
    fn load(&self, _tokenizer_json: &Path) -> Result<Box<dyn Tokenizer>> {
        Ok(Box::new(Fake(self.0.clone())))
    }
}

#[test]
fn python_list_text() {
    assert_eq!(py_list(&[]), "[]");
    assert_eq!(py_list(&[1, 22, 333]), "[1, 22, 333]");
}

#[test]
fn chktxt_is_the_converters() {
    assert_eq!(CHKTXT.chars().count(), 350);
    assert!(CHKTXT.starts_with("\n \n\n \n\n\n \t \t\t \t\n  \n"));
    assert!(CHKTXT.ends_with("We'Ve a'lL"));
}

#[test]
fn merges_strings_and_pairs() {
    let strings = json_merges(&[json!("a b"), json!("c d")]).unwrap();
    assert_eq!(strings, ["a b", "c d"]);
    let pairs = json_merges(&[json!(["Ġ", "t"]), json!(["a b", "c"])]).unwrap();
    assert_eq!(pairs, ["Ġ t", "a\u{120}b c"]);
    assert!(json_merges(&[]).unwrap().is_empty());
    assert!(json_merges(&[json!(1)]).is_err());
}

#[test]
fn unknown_chkhsh_is_refused_naming_it() {
    let tok = Fake(vec![1, 2, 3]);
    let err = pre_tokenizer(&tok, Path::new("tokenizer.json")).unwrap_err();
    let want = hex::encode(Sha256::digest(b"[1, 2, 3]"));
    assert!(format!("{err}").contains(&want), "{err}");
}

#[test]
fn known_chkhsh_is_named_last_match_winning() {
    assert_eq!(pre_name("b6dc8df998e1cfbdc4eac8243701a65afe638679230920b50d6f17d81c098166"), Some("olmo"));
    assert_eq!(pre_name("0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f"), Some("jina-v2-en"));
}

#[test]
fn pad_fill_and_types() {
    let tj = json!({
        "added_tokens": [
            {"id": 3, "content": "<|end|>", "special": true, "normalized": false},
            {"id": 4, "content": "▁user", "special": false, "normalized": true},
        ],
        "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2}},
    });
    let tc = json!({"added_tokens_decoder": {"5": {"content": "<x>", "special": false, "normalized": false}}});
    let v = hf_vocab(&tj, tc.as_object(), None, Path::new(".")).unwrap();
    assert_eq!(v.len(), 6);
    let mut rt = |t: &str| -> Result<String> { Ok(t.to_string()) };
    let (tokens, types) = tokens_and_types(&v, 8, &mut rt).unwrap();
    assert_eq!(tokens, ["a", "b", "c", "<|end|>", " user", "<x>", "[PAD6]", "[PAD7]"]);
    assert_eq!(types, [NORMAL, NORMAL, NORMAL, CONTROL, USER_DEFINED, USER_DEFINED, UNUSED, UNUSED]);
}

#[test]
fn special_token_texts_are_added_as_special() {
    let tj = json!({"model": {"type": "BPE", "vocab": {"a": 0, "<s>": 1}}});
    let tc = json!({"bos_token": "<s>", "pad_token": "<pad>"});
    let v = hf_vocab(&tj, tc.as_object(), None, Path::new(".")).unwrap();
    assert_eq!(v.added_ids.get("<s>"), Some(&1));
    assert_eq!(v.added_ids.get("<pad>"), Some(&2));
    assert!(v.added[&1].special && !v.added[&1].normalized);
}

#[test]
fn llama_hf_decision() {
    let f = Path::new("tokenizer.json");
    let llama3 = json!({"model": {"type": "BPE", "ignore_merges": true, "byte_fallback": false}, "decoder": {"type": "ByteLevel"}});
    assert!(!llama_hf_takes(&llama3, f).unwrap());
    let gpt2 = json!({"model": {"type": "BPE", "byte_fallback": false}, "decoder": {"type": "ByteLevel"}});
    assert!(!llama_hf_takes(&gpt2, f).unwrap());
    let llama2 = json!({"model": {"type": "BPE", "byte_fallback": true}, "decoder": {"type": "Sequence"}});
    assert!(llama_hf_takes(&llama2, f).unwrap());
    let null_decoder = json!({"model": {"type": "BPE", "byte_fallback": true}, "decoder": null});
    assert!(!llama_hf_takes(&null_decoder, f).unwrap());
}

#[test]
fn fixture_with_fake_ids_is_refused_before_writing() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hf-gguf/Llama-GPT2Tok-BPE-bf16-tied");
    let hparams: Value = serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    let err = gpt2_vocab_kvs(&dir, &hparams, &FakeLib(vec![7]), true).unwrap_err();
    assert!(format!("{err}").contains("chkhsh"), "{err}");
}
