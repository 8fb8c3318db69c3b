//! The key/values compared with what llama.cpp's converter (run for real, with a recording
//! `GGUFWriter`) added for the same folders; hostile model files refused with their rule.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::*;

/// The shared checkpoint whose tokenizer is sentencepiece 0.2.1's `test_model.model`, saved by
/// transformers 4.57.6's `LlamaTokenizer.save_pretrained`.
fn tinyllama() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/hf-gguf/TinyLlama-SPM-bf16")
}

/// The sha256 of the canonical serialisation the recorder used: strings as u64 length + bytes,
/// floats and ints as 4 little-endian bytes.
fn digest(v: &MetaValue) -> String {
    let mut bytes = Vec::new();
    match v {
        MetaValue::TypedArray(TypedArray::Text(t)) => t.iter().for_each(|s| {
            bytes.extend((s.len() as u64).to_le_bytes());
            bytes.extend(s.as_bytes());
        }),
        MetaValue::TypedArray(TypedArray::F32(f)) => f.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        MetaValue::TypedArray(TypedArray::I32(i)) => i.iter().for_each(|x| bytes.extend(x.to_le_bytes())),
        other => panic!("not an array: {other:?}"),
    }
    hex::encode(Sha256::digest(&bytes))
}

/// The keys in order.
fn keys(kvs: &[(String, MetaValue)]) -> Vec<&str> {
    kvs.iter().map(|(k, _)| k.as_str()).collect()
}

/// The value of `key`.
fn get<'a>(kvs: &'a [(String, MetaValue)], key: &str) -> &'a MetaValue {
    &kvs.iter().find(|(k, _)| k == key).unwrap_or_else(|| panic!("no {key}")).1
}

#[test]
fn the_shared_checkpoint_gets_the_converters_key_values() {
    let dir = tinyllama();
    let hparams: Value = serde_json::from_slice(&std::fs::read(dir.join("config.json")).unwrap()).unwrap();
    let kvs = sentencepiece_vocab_kvs(&dir, &hparams, true).unwrap();
    assert_eq!(
        keys(&kvs),
        [
            "tokenizer.ggml.add_space_prefix",
            "tokenizer.ggml.model",
            "tokenizer.ggml.pre",
            "tokenizer.ggml.tokens",
            "tokenizer.ggml.scores",
            "tokenizer.ggml.token_type",
            "tokenizer.ggml.bos_token_id",
            "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.add_bos_token",
            "tokenizer.ggml.add_eos_token",
        ]
    );
    assert_eq!(get(&kvs, "tokenizer.ggml.add_space_prefix"), &MetaValue::Bool(true));
    assert_eq!(get(&kvs, "tokenizer.ggml.model"), &MetaValue::Text("llama".into()));
    assert_eq!(get(&kvs, "tokenizer.ggml.pre"), &MetaValue::Text("default".into()));
    let tokens = get(&kvs, "tokenizer.ggml.tokens");
    let MetaValue::TypedArray(TypedArray::Text(t)) = tokens else { panic!("{tokens:?}") };
    assert_eq!(
        (t.len(), &t[..5], t[999].as_str()),
        (1000, &["<unk>", "<s>", "</s>", "\r", "\u{2581}"].map(String::from)[..], "j")
    );
    assert_eq!(digest(tokens), "caa79ecda405fad1128a45471373e906584e494ccfa0a5517f5216cddad7480c");
    let scores = get(&kvs, "tokenizer.ggml.scores");
    let MetaValue::TypedArray(TypedArray::F32(s)) = scores else { panic!("{scores:?}") };
    assert_eq!(&s[..5], [-1000.0, -1000.0, -1000.0, -2.931_839_2, -3.333_458]);
    assert_eq!(digest(scores), "fc953e3e27a9986003e07bf38198ebe111c25133f35560e9cf6b4729789701c5");
    let types = get(&kvs, "tokenizer.ggml.token_type");
    let MetaValue::TypedArray(TypedArray::I32(ty)) = types else { panic!("{types:?}") };
    // <unk> is CONTROL, not UNKNOWN: tokenizer_config's added_tokens_decoder marks it special.
    assert_eq!(&ty[..5], [3, 3, 3, 1, 1]);
    assert_eq!(digest(types), "e1c17c1743b0144d48aacc2bfe40ba5791342050c06ebedabadee2165b97fcc8");
    // No tokenizer.json: the ids come from config.json alone.
    assert_eq!(get(&kvs, "tokenizer.ggml.bos_token_id"), &MetaValue::Number(Number::U32(1)));
    assert_eq!(get(&kvs, "tokenizer.ggml.eos_token_id"), &MetaValue::Number(Number::U32(2)));
    assert_eq!(get(&kvs, "tokenizer.ggml.add_bos_token"), &MetaValue::Bool(true));
    assert_eq!(get(&kvs, "tokenizer.ggml.add_eos_token"), &MetaValue::Bool(false));
}

/// The rich folder's files, as the recorder read them.
const TOKENIZER_JSON: &str = r#"{"added_tokens": [{"id": 1, "content": "<s>"}, {"id": 2, "content": "</s>"}, {"id": 0, "content": "<unk>"}],
 "normalizer": {"type": "Sequence", "normalizers": [{"type": "Lowercase"}]},
 "post_processor": {"type": "TemplateProcessing",
   "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
   "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "</s>", "type_id": 1}}]}}
"#;
/// `tokenizer_config.json` of the rich folder.
const TOKENIZER_CONFIG: &str = r#"{"add_bos_token":true,"add_eos_token":false,"add_prefix_space":false,"added_tokens_decoder":{"0":{"content":"<unk>","lstrip":false,"normalized":false,"rstrip":false,"single_word":false,"special":true},"1":{"content":"<s>","lstrip":false,"normalized":false,"rstrip":false,"single_word":false,"special":true},"2":{"content":"</s>","lstrip":false,"normalized":false,"rstrip":false,"single_word":false,"special":true},"1003":{"content":"<|user|>","special":false},"1004":{"content":"\u2581x\u2581y","special":false}},"bos_token":"<s>","clean_up_tokenization_spaces":false,"eos_token":"</s>","extra_special_tokens":{},"legacy":true,"pad_token":null,"sp_model_kwargs":{},"spaces_between_special_tokens":false,"tokenizer_class":"LlamaTokenizer","unk_token":"<unk>","use_default_system_prompt":false}"#;

/// A folder with every file this path reads: tokenizer.json (TemplateProcessing, a
/// normalizer), added_tokens.json, added tokens past the model, a CRLF chat_template.jinja,
/// config.json ids (one under text_config), and a vocab_size past the model's (padding).
fn rich() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::copy(tinyllama().join("tokenizer.model"), p.join("tokenizer.model")).unwrap();
    std::fs::write(p.join("tokenizer.json"), TOKENIZER_JSON).unwrap();
    std::fs::write(p.join("tokenizer_config.json"), TOKENIZER_CONFIG).unwrap();
    std::fs::write(p.join("added_tokens.json"), "{\"<|im_end|>\": 1001, \"\u{2581}hi\": 5}").unwrap();
    std::fs::write(p.join("chat_template.jinja"), "{% for m in messages %}{{ m }}\r\n{% endfor %}").unwrap();
    std::fs::write(
        p.join("config.json"),
        r#"{"pad_token_id": 3, "bos_token_id": 7, "text_config": {"mask_token_id": 4}}"#,
    )
    .unwrap();
    dir
}

#[test]
fn a_folder_with_every_tokenizer_file_gets_the_converters_key_values() {
    let dir = rich();
    let kvs = sentencepiece_vocab_kvs(dir.path(), &serde_json::json!({"vocab_size": 1006}), true).unwrap();
    assert_eq!(
        keys(&kvs),
        [
            "tokenizer.ggml.add_space_prefix",
            "tokenizer.ggml.model",
            "tokenizer.ggml.pre",
            "tokenizer.ggml.tokens",
            "tokenizer.ggml.scores",
            "tokenizer.ggml.token_type",
            "tokenizer.ggml.bos_token_id",
            "tokenizer.ggml.eos_token_id",
            "tokenizer.ggml.unknown_token_id",
            "tokenizer.ggml.padding_token_id",
            "tokenizer.ggml.mask_token_id",
            "tokenizer.ggml.add_bos_token",
            "tokenizer.ggml.add_eos_token",
            "tokenizer.ggml.add_sep_token",
            "tokenizer.chat_template",
            "tokenizer.ggml.normalizer.lowercase",
        ]
    );
    assert_eq!(get(&kvs, "tokenizer.ggml.add_space_prefix"), &MetaValue::Bool(false));
    let tokens = get(&kvs, "tokenizer.ggml.tokens");
    assert_eq!(digest(tokens), "eb32709f9fd945d93f65cfd6421e5c256a7fd97d408d6ae1c9bcd8df6f78c8c7");
    assert_eq!(
        digest(get(&kvs, "tokenizer.ggml.scores")),
        "b224f7d0533dc78e421607bf80bb0ac1e356f81349863394504035d3214d4e35"
    );
    assert_eq!(
        digest(get(&kvs, "tokenizer.ggml.token_type")),
        "d0332283794a5917ea9148714753f59068245fb964170d5211bd89487bfaa5d0"
    );
    let (
        MetaValue::TypedArray(TypedArray::Text(t)),
        MetaValue::TypedArray(TypedArray::F32(s)),
        MetaValue::TypedArray(TypedArray::I32(ty)),
    ) = (tokens, get(&kvs, "tokenizer.ggml.scores"), get(&kvs, "tokenizer.ggml.token_type"))
    else {
        panic!("array types")
    };
    let spot: Vec<(&str, f32, i32)> =
        [5, 1000, 1001, 1003, 1004, 1005].iter().map(|&i| (t[i].as_str(), s[i], ty[i])).collect();
    assert_eq!(
        spot,
        [
            ("\u{2581}hi", -1000.0, 4),
            ("[PAD1000]", -10000.0, 5),
            ("<|im_end|>", -1000.0, 4),
            ("<|user|>", -1000.0, 3),
            (" x y", -1000.0, 4),
            ("[PAD1005]", -10000.0, 5),
        ]
    );
    let u = |v| MetaValue::Number(Number::U32(v));
    // tokenizer.json's added tokens win over config.json's bos_token_id 7.
    assert_eq!(get(&kvs, "tokenizer.ggml.bos_token_id"), &u(1));
    assert_eq!(get(&kvs, "tokenizer.ggml.eos_token_id"), &u(2));
    assert_eq!(get(&kvs, "tokenizer.ggml.unknown_token_id"), &u(0));
    assert_eq!(get(&kvs, "tokenizer.ggml.padding_token_id"), &u(3));
    assert_eq!(get(&kvs, "tokenizer.ggml.mask_token_id"), &u(4));
    // The post-processor's template adds </s>: it wins over add_eos_token false.
    assert_eq!(get(&kvs, "tokenizer.ggml.add_eos_token"), &MetaValue::Bool(true));
    assert_eq!(get(&kvs, "tokenizer.ggml.add_sep_token"), &MetaValue::Bool(false));
    assert_eq!(
        get(&kvs, "tokenizer.chat_template"),
        &MetaValue::Text("{% for m in messages %}{{ m }}\n{% endfor %}".into())
    );
    assert_eq!(get(&kvs, "tokenizer.ggml.normalizer.lowercase"), &MetaValue::Bool(true));
}

#[test]
fn a_folder_without_tokenizer_model_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let err = sentencepiece_vocab_kvs(dir.path(), &serde_json::json!({}), true).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("tokenizer.model") && text.contains("SentencePiece"), "{text}");
}

#[test]
fn an_absurd_vocab_size_is_refused_before_allocating() {
    let err = sentencepiece_vocab_kvs(&tinyllama(), &serde_json::json!({"vocab_size": 1u64 << 40}), true).unwrap_err();
    assert_eq!(err.rule(), Some(Rule::TooManyEntries), "{err}");
}

/// The rule `proto::pieces` refuses `bytes` with.
fn refused(bytes: &[u8]) -> Rule {
    let err = proto::pieces(bytes).unwrap_err();
    err.rule().unwrap_or_else(|| panic!("no rule: {err}"))
}

#[test]
fn hostile_model_files_are_refused_with_their_rule() {
    // A piece {piece "a", score 1.5, type CONTROL}.
    let good = [0x0a, 0x0a, 0x0a, 0x01, b'a', 0x15, 0x00, 0x00, 0xc0, 0x3f, 0x18, 0x03];
    assert_eq!(proto::pieces(&good).unwrap(), [proto::Piece { text: "a".into(), score: 1.5, kind: 3 }]);
    for cut in 1..good.len() {
        assert_eq!(refused(&good[..cut]), Rule::Truncated, "cut at {cut}");
    }
    // The piece's text claims more bytes than its message holds.
    assert_eq!(refused(&[0x0a, 0x03, 0x0a, 0x05, b'a']), Rule::BadProtobuf);
    // A top-level length past the end of the file.
    assert_eq!(refused(&[0x12, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]), Rule::Truncated);
    // Wire types 3 (start group) and 7.
    assert_eq!(refused(&[0x1b]), Rule::BadProtobuf);
    assert_eq!(refused(&[0x0f]), Rule::BadProtobuf);
    // A varint of 11 bytes.
    assert_eq!(refused(&[0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]), Rule::BadProtobuf);
    // Pieces given as a varint, a piece's text not UTF-8.
    assert_eq!(refused(&[0x08, 0x01]), Rule::BadProtobuf);
    assert_eq!(refused(&[0x0a, 0x03, 0x0a, 0x01, 0xff]), Rule::BadProtobuf);
    // Other fields (trainer_spec, a fixed64, a fixed32) are parsed past; unknown types read NORMAL.
    let skipped = [0x12, 0x01, 0x00, 0x19, 0, 0, 0, 0, 0, 0, 0, 0, 0x25, 0, 0, 0, 0, 0x0a, 0x02, 0x18, 0x09];
    assert_eq!(
        proto::pieces(&skipped).unwrap(),
        [proto::Piece { text: String::new(), score: 0.0, kind: proto::NORMAL }]
    );
}

#[test]
fn too_many_pieces_are_refused() {
    // MAX_ENTRIES + 1 empty pieces: two bytes each.
    let bytes = [0x0a, 0x00].repeat(MAX_ENTRIES + 1);
    assert_eq!(refused(&bytes), Rule::TooManyEntries);
}
