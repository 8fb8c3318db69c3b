//! Hugging Face model folders broken one way each, converted to GGUF: every one is refused
//! with an error that names the file (and the tensor, where there is one), the rule broken
//! and the problem, and leaves no output behind. Each case copies a fixture folder of
//! `tests/fixtures/hf-gguf/` into a temporary folder and breaks one thing.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tensorfile::formats::limits::{
    MAX_HF_CHAT_TEMPLATES, MAX_HF_CONFIG_BYTES, MAX_HF_README_BYTES, MAX_HF_TOKENIZER_BYTES,
};
use tensorfile::llama::{CheckpointOptions, convert_checkpoint};
use tensorfile::{Error, Rule};

use crate::common;

/// The single-file SentencePiece llama.
const PLAIN: &str = "TinyLlama-SPM-bf16";
/// The same model in three shards with an index.
const SHARDED: &str = "TinyLlama-SPM-bf16-sharded";
/// A llama with a BPE `tokenizer.json` (and no `tokenizer.model`).
const BPE: &str = "Llama-GPT2Tok-BPE-bf16-tied";

/// A copy of the fixture folder `name` in a temporary folder, to break.
struct Folder {
    tmp: tempfile::TempDir,
    dir: PathBuf,
}

impl Folder {
    fn of(name: &str) -> Folder {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        let from = common::fixtures_dir().join("hf-gguf").join(name);
        for e in std::fs::read_dir(&from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
            }
        }
        Folder { tmp, dir }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    fn remove(&self, file: &str) {
        std::fs::remove_file(self.path(file)).unwrap();
    }

    fn write(&self, file: &str, bytes: impl AsRef<[u8]>) {
        std::fs::write(self.path(file), bytes).unwrap();
    }

    fn json(&self, file: &str) -> Value {
        serde_json::from_slice(&std::fs::read(self.path(file)).unwrap()).unwrap()
    }

    fn write_json(&self, file: &str, value: &Value) {
        self.write(file, serde_json::to_vec_pretty(value).unwrap());
    }

    /// Edit `config.json`.
    fn config(&self, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) {
        let mut config = self.json("config.json");
        edit(config.as_object_mut().unwrap());
        self.write_json("config.json", &config);
    }

    /// `file` made `size` bytes of zeros without writing them (a sparse file).
    fn sparse(&self, file: &str, size: u64) {
        let f = std::fs::File::create(self.path(file)).unwrap();
        f.set_len(size).unwrap();
    }

    /// Convert the folder: the error, with the output checked absent (nor anything else
    /// left in the output folder).
    fn refused(&self) -> Error {
        let out_dir = self.tmp.path().join("out");
        std::fs::create_dir_all(&out_dir).unwrap();
        let dest = out_dir.join("model.gguf");
        let options = CheckpointOptions {
            tokenizers: Some(&tensorfile_tokenizers::HF_TOKENIZERS),
            ..CheckpointOptions::default()
        };
        let result = convert_checkpoint(&self.dir, &dest, &options, &mut |_| {});
        let left: Vec<_> = std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        match result {
            Ok(done) => panic!("{}: converted ({} tensors) though broken", self.dir.display(), done.tensors.len()),
            Err(e) => {
                assert!(left.is_empty(), "{e}: the output folder holds {left:?} after the error");
                e
            }
        }
    }
}

/// `e` is of `rule`, names the file `file` (by its path, or, where the error is about the
/// folder, in its text) and says each of `words`.
fn assert_error(e: &Error, rule: Option<Rule>, file: &str, words: &[&str]) {
    let text = e.to_string();
    assert_eq!(e.rule(), rule, "{text}: of another rule");
    assert!(text.contains(file), "{text}: does not name {file}");
    for w in words {
        assert!(text.contains(w), "{text}: does not say {w:?}");
    }
}

/// `e` names the tensor `tensor`.
fn assert_tensor(e: &Error, tensor: &str) {
    assert_eq!(e.tensor(), Some(tensor), "{e}: does not name the tensor {tensor}");
}

#[test]
fn a_folder_without_config_json() {
    let f = Folder::of(PLAIN);
    f.remove("config.json");
    let e = f.refused();
    assert_error(&e, None, PLAIN, &["config.json", "none here"]);
}

#[test]
fn a_config_json_that_is_not_json() {
    let f = Folder::of(PLAIN);
    f.write("config.json", "{\"architectures\": [\"LlamaForCausalLM\"");
    let e = f.refused();
    assert_error(&e, Some(Rule::BadJson), "config.json", &["not JSON"]);
}

#[test]
fn a_config_json_that_is_not_an_object() {
    let f = Folder::of(PLAIN);
    f.write("config.json", "[\"LlamaForCausalLM\"]");
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "config.json", &["no object"]);
}

#[test]
fn a_config_json_nested_past_the_limit() {
    let f = Folder::of(PLAIN);
    f.write("config.json", format!("{}{}", "[".repeat(200), "]".repeat(200)));
    let e = f.refused();
    assert_error(&e, Some(Rule::TooDeep), "config.json", &["recursion limit"]);
}

#[test]
fn an_architecture_not_converted() {
    let f = Folder::of(PLAIN);
    f.config(|c| {
        c.insert("architectures".into(), json!(["FrobnicatorForCausalLM"]));
    });
    let e = f.refused();
    // Named, and the architectures converted listed.
    assert_error(&e, Some(Rule::Unsupported), "config.json", &["FrobnicatorForCausalLM", "LlamaForCausalLM"]);
}

#[test]
fn a_config_naming_no_architecture() {
    let f = Folder::of(PLAIN);
    f.config(|c| {
        c.remove("architectures");
    });
    let e = f.refused();
    assert_error(&e, Some(Rule::MissingField), "config.json", &["architectures"]);
}

/// A config lacking `key`, which transformers' default then fills in (`hidden_size` 4096,
/// 32 layers, 32 heads for a llama) and the model's own shapes contradict.
fn lacking(key: &str) -> (Error, Folder) {
    let f = Folder::of(PLAIN);
    f.config(|c| {
        c.remove(key);
    });
    (f.refused(), f)
}

/// `e` is of some rule, is about the checkpoint (not the output being written) and says each
/// of `words`: for the cases whose exact rule the fix will choose.
fn assert_about_input(e: &Error, f: &Folder, words: &[&str]) {
    let text = e.to_string();
    assert!(e.rule().is_some(), "{text}: of no rule");
    assert!(e.path().is_some_and(|p| p.starts_with(&f.dir)), "{text}: does not name a file of the checkpoint");
    for w in words {
        assert!(text.contains(w), "{text}: does not say {w:?}");
    }
}

#[test]
fn a_config_lacking_num_attention_heads() {
    let (e, f) = lacking("num_attention_heads");
    assert_about_input(&e, &f, &["config.json", "num_attention_heads"]);
    assert_eq!(e.rule(), Some(Rule::MissingField), "{e}");
}

#[test]
fn a_config_lacking_num_hidden_layers() {
    let (e, f) = lacking("num_hidden_layers");
    assert_about_input(&e, &f, &["config.json", "num_hidden_layers"]);
    assert_eq!(e.rule(), Some(Rule::MissingField), "{e}");
}

#[test]
fn a_config_lacking_hidden_size() {
    let (e, f) = lacking("hidden_size");
    assert_about_input(&e, &f, &["config.json", "hidden_size"]);
    assert_eq!(e.rule(), Some(Rule::MissingField), "{e}");
}

#[test]
fn a_config_whose_vocab_size_is_past_the_limit() {
    let f = Folder::of(PLAIN);
    f.config(|c| {
        c.insert("vocab_size".into(), json!(1u64 << 40));
    });
    let e = f.refused();
    assert_about_input(&e, &f, &["config.json", "vocab_size"]);
}

#[test]
fn a_config_json_past_its_limit() {
    let f = Folder::of(PLAIN);
    f.sparse("config.json", MAX_HF_CONFIG_BYTES + 1);
    let e = f.refused();
    assert_error(
        &e,
        Some(Rule::HeaderTooLarge),
        "config.json",
        &["MAX_HF_CONFIG_BYTES", &MAX_HF_CONFIG_BYTES.to_string()],
    );
}

#[test]
fn a_generation_config_past_its_limit() {
    let f = Folder::of(PLAIN);
    f.sparse("generation_config.json", MAX_HF_CONFIG_BYTES + 1);
    let e = f.refused();
    assert_error(&e, Some(Rule::HeaderTooLarge), "generation_config.json", &["MAX_HF_CONFIG_BYTES"]);
}

#[test]
fn an_index_naming_a_missing_shard() {
    let f = Folder::of(SHARDED);
    f.remove("model-00002-of-00003.safetensors");
    let e = f.refused();
    assert_error(&e, Some(Rule::MissingFile), "model-00002-of-00003.safetensors", &["not in the folder"]);
}

#[test]
fn an_index_that_is_not_json() {
    let f = Folder::of(SHARDED);
    f.write("model.safetensors.index.json", "{\"weight_map\": ");
    let e = f.refused();
    assert_error(&e, Some(Rule::BadJson), "model.safetensors.index.json", &[]);
}

#[test]
fn an_index_without_a_weight_map() {
    let f = Folder::of(SHARDED);
    f.write_json("model.safetensors.index.json", &json!({"metadata": {}}));
    let e = f.refused();
    assert_error(&e, Some(Rule::MissingField), "model.safetensors.index.json", &["weight_map"]);
}

#[test]
fn an_index_naming_a_shard_outside_the_folder() {
    let f = Folder::of(SHARDED);
    let mut index = f.json("model.safetensors.index.json");
    index["weight_map"]["lm_head.weight"] = json!("../model-00003-of-00003.safetensors");
    f.write_json("model.safetensors.index.json", &index);
    let e = f.refused();
    assert_error(&e, Some(Rule::UnsafePath), "model.safetensors.index.json", &["../model-00003-of-00003.safetensors"]);
}

#[test]
fn an_index_naming_a_tensor_no_shard_holds() {
    let f = Folder::of(SHARDED);
    let mut index = f.json("model.safetensors.index.json");
    index["weight_map"]["model.layers.7.self_attn.q_proj.weight"] = json!("model-00001-of-00003.safetensors");
    f.write_json("model.safetensors.index.json", &index);
    let e = f.refused();
    assert_error(&e, Some(Rule::ShardMismatch), "model.safetensors.index.json", &["model-00001-of-00003.safetensors"]);
    assert_tensor(&e, "model.layers.7.self_attn.q_proj.weight");
}

#[test]
fn a_shard_holding_a_tensor_the_index_does_not_name() {
    // The converter refuses it too ("Mismatch between weight map and model parts").
    let f = Folder::of(SHARDED);
    let mut index = f.json("model.safetensors.index.json");
    index["weight_map"].as_object_mut().unwrap().remove("model.norm.weight");
    f.write_json("model.safetensors.index.json", &index);
    let e = f.refused();
    assert_error(&e, Some(Rule::ShardMismatch), "model.safetensors.index.json", &["model-00002-of-00003.safetensors"]);
    assert_tensor(&e, "model.norm.weight");
}

#[test]
fn a_tensor_in_two_weight_files() {
    // Without an index, two parts holding one tensor: refused (the converter would keep
    // the last one read).
    let f = Folder::of(SHARDED);
    f.remove("model.safetensors.index.json");
    std::fs::copy(f.path("model-00001-of-00003.safetensors"), f.path("model-00004-of-00003.safetensors")).unwrap();
    let e = f.refused();
    assert_error(
        &e,
        Some(Rule::DuplicateName),
        "model-00004-of-00003.safetensors",
        &["model-00001-of-00003.safetensors"],
    );
    assert_tensor(&e, "model.embed_tokens.weight");
}

/// `file` (a safetensors file of the folder) with the shape of `tensor` replaced by `shape`
/// (of as many elements), its data untouched.
fn reshape(f: &Folder, file: &str, tensor: &str, shape: &[u64]) {
    let bytes = std::fs::read(f.path(file)).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    header[tensor]["shape"] = json!(shape);
    let text = serde_json::to_vec(&header).unwrap();
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    out.extend_from_slice(&bytes[8 + n..]);
    f.write(file, out);
}

#[test]
fn a_tensor_whose_shape_disagrees_with_the_config() {
    // q_proj is heads * head_dim (4 * 8) rows of hidden_size (32): 2 rows of 512 cannot be
    // cut into the 4 heads of 2 halves the rotary permutation needs.
    let f = Folder::of(PLAIN);
    reshape(&f, "model.safetensors", "model.layers.0.self_attn.q_proj.weight", &[2, 512]);
    let e = f.refused();
    assert_about_input(&e, &f, &["2 rows"]);
    assert_eq!(e.rule(), Some(Rule::SizeMismatch), "{e}");
    assert!(e.tensor().is_some_and(|t| t.contains("q")), "{e}: does not name the tensor");
}

#[test]
fn a_folder_without_tokenizer_model_or_tokenizer_json() {
    let f = Folder::of(PLAIN);
    f.remove("tokenizer.model");
    let e = f.refused();
    assert_error(&e, Some(Rule::MissingFile), "tokenizer.model", &["not in the folder"]);
}

#[test]
fn a_truncated_tokenizer_model() {
    let f = Folder::of(PLAIN);
    let bytes = std::fs::read(f.path("tokenizer.model")).unwrap();
    f.write("tokenizer.model", &bytes[..bytes.len() / 2]);
    let e = f.refused();
    assert_error(&e, Some(Rule::Truncated), "tokenizer.model", &["protobuf", "ends inside"]);
}

#[test]
fn a_tokenizer_model_past_its_limit() {
    let f = Folder::of(PLAIN);
    f.sparse("tokenizer.model", MAX_HF_TOKENIZER_BYTES + 1);
    let e = f.refused();
    assert_error(&e, Some(Rule::HeaderTooLarge), "tokenizer.model", &["MAX_HF_TOKENIZER_BYTES"]);
}

#[test]
fn a_tokenizer_json_past_its_limit() {
    let f = Folder::of(PLAIN);
    f.sparse("tokenizer.json", MAX_HF_TOKENIZER_BYTES + 1);
    let e = f.refused();
    assert_error(
        &e,
        Some(Rule::HeaderTooLarge),
        "tokenizer.json",
        &["MAX_HF_TOKENIZER_BYTES", &MAX_HF_TOKENIZER_BYTES.to_string()],
    );
}

#[test]
fn a_tokenizer_config_past_its_limit() {
    let f = Folder::of(PLAIN);
    f.sparse("tokenizer_config.json", MAX_HF_TOKENIZER_BYTES + 1);
    let e = f.refused();
    assert_error(&e, Some(Rule::HeaderTooLarge), "tokenizer_config.json", &["MAX_HF_TOKENIZER_BYTES"]);
}

#[test]
fn a_tokenizer_config_that_is_not_json() {
    let f = Folder::of(PLAIN);
    f.write("tokenizer_config.json", "{\"add_bos_token\": tru");
    let e = f.refused();
    assert_error(&e, Some(Rule::BadJson), "tokenizer_config.json", &["not JSON"]);
}

#[test]
fn a_tokenizer_config_that_is_not_an_object() {
    let f = Folder::of(PLAIN);
    f.write("tokenizer_config.json", "[1, 2]");
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "tokenizer_config.json", &["not a JSON object"]);
}

#[test]
fn a_tokenizer_config_whose_added_tokens_decoder_is_a_list() {
    let f = Folder::of(PLAIN);
    let mut tc = f.json("tokenizer_config.json");
    tc["added_tokens_decoder"] = json!([{"content": "<s>"}]);
    f.write_json("tokenizer_config.json", &tc);
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "tokenizer_config.json", &["added_tokens_decoder", "not an object"]);
}

#[test]
fn a_tokenizer_config_whose_added_token_id_is_no_integer() {
    let f = Folder::of(PLAIN);
    let mut tc = f.json("tokenizer_config.json");
    tc["added_tokens_decoder"]["one"] = json!({"content": "<x>", "special": true});
    f.write_json("tokenizer_config.json", &tc);
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "tokenizer_config.json", &["\"one\"", "not an integer"]);
}

#[test]
fn a_tokenizer_config_whose_added_token_content_is_no_text() {
    let f = Folder::of(PLAIN);
    let mut tc = f.json("tokenizer_config.json");
    tc["added_tokens_decoder"]["1"]["content"] = json!(7);
    f.write_json("tokenizer_config.json", &tc);
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "tokenizer_config.json", &["content", "not text"]);
}

#[test]
fn an_added_tokens_json_that_is_a_list() {
    let f = Folder::of(PLAIN);
    f.write("added_tokens.json", "[\"<x>\"]");
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "added_tokens.json", &["not a JSON object"]);
}

#[test]
fn an_added_tokens_json_whose_id_is_text() {
    let f = Folder::of(PLAIN);
    f.write("added_tokens.json", "{\"<x>\": \"seven\"}");
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "added_tokens.json", &["\"<x>\"", "not an integer"]);
}

#[test]
fn an_added_tokens_json_whose_id_is_out_of_range() {
    let f = Folder::of(PLAIN);
    f.write("added_tokens.json", "{\"<x>\": -5000}");
    let e = f.refused();
    assert_error(&e, Some(Rule::OutOfBounds), "added_tokens.json", &["-5000"]);
}

#[test]
fn an_added_tokens_json_past_its_limit() {
    let f = Folder::of(PLAIN);
    f.sparse("added_tokens.json", MAX_HF_TOKENIZER_BYTES + 1);
    let e = f.refused();
    assert_error(&e, Some(Rule::HeaderTooLarge), "added_tokens.json", &["MAX_HF_TOKENIZER_BYTES"]);
}

#[test]
fn a_chat_template_that_is_not_utf8() {
    let f = Folder::of(PLAIN);
    f.write("chat_template.jinja", b"{{ messages }}\xff");
    let e = f.refused();
    assert_error(&e, Some(Rule::BadUtf8), "chat_template.jinja", &["UTF-8"]);
}

#[test]
fn a_chat_template_past_its_limit() {
    let f = Folder::of(PLAIN);
    f.sparse("chat_template.jinja", MAX_HF_CONFIG_BYTES + 1);
    let e = f.refused();
    assert_error(&e, Some(Rule::HeaderTooLarge), "chat_template.jinja", &["MAX_HF_CONFIG_BYTES"]);
}

#[test]
fn too_many_additional_chat_templates() {
    let f = Folder::of(PLAIN);
    f.write("chat_template.jinja", "{{ messages }}");
    std::fs::create_dir(f.path("additional_chat_templates")).unwrap();
    for i in 0..=MAX_HF_CHAT_TEMPLATES {
        f.write(&format!("additional_chat_templates/t{i}.jinja"), "{{ tools }}");
    }
    let e = f.refused();
    assert_error(&e, Some(Rule::TooManyEntries), "additional_chat_templates", &["MAX_HF_CHAT_TEMPLATES"]);
}

#[test]
fn additional_chat_templates_past_their_limit_together() {
    let f = Folder::of(PLAIN);
    f.write("chat_template.jinja", "{{ messages }}");
    std::fs::create_dir(f.path("additional_chat_templates")).unwrap();
    for name in ["a", "b"] {
        f.sparse(&format!("additional_chat_templates/{name}.jinja"), MAX_HF_CONFIG_BYTES / 2 + 1);
    }
    let e = f.refused();
    assert_error(&e, Some(Rule::HeaderTooLarge), "b.jinja", &["together", "MAX_HF_CONFIG_BYTES"]);
}

#[test]
fn a_chat_template_json_that_is_not_an_object() {
    let f = Folder::of(PLAIN);
    f.write("chat_template.json", "\"{{ messages }}\"");
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "chat_template.json", &["not a JSON object"]);
}

#[test]
fn a_model_card_past_its_limit() {
    let f = Folder::of(PLAIN);
    f.sparse("README.md", MAX_HF_README_BYTES + 1);
    let e = f.refused();
    assert_error(&e, Some(Rule::HeaderTooLarge), "README.md", &["MAX_HF_README_BYTES"]);
}

#[test]
fn a_special_tokens_map_that_is_not_an_object() {
    // Read on the BPE path (transformers' legacy special tokens), not by gguf-py's SpecialVocab.
    let f = Folder::of(BPE);
    let mut tc = f.json("tokenizer_config.json");
    tc.as_object_mut().unwrap().remove("added_tokens_decoder");
    f.write_json("tokenizer_config.json", &tc);
    f.write("special_tokens_map.json", "[\"<s>\"]");
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "special_tokens_map.json", &["not a JSON object"]);
}

#[test]
fn a_tokenizer_json_whose_vocabulary_is_no_object() {
    let f = Folder::of(BPE);
    let mut tj = f.json("tokenizer.json");
    tj["model"]["vocab"] = json!(["a", "b"]);
    f.write_json("tokenizer.json", &tj);
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "tokenizer.json", &["model.vocab", "not an object"]);
}

#[test]
fn a_tokenizer_json_whose_token_id_is_negative() {
    let f = Folder::of(BPE);
    let mut tj = f.json("tokenizer.json");
    let vocab = tj["model"]["vocab"].as_object_mut().unwrap();
    let first = vocab.keys().next().unwrap().clone();
    vocab.insert(first, json!(-1));
    f.write_json("tokenizer.json", &tj);
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "tokenizer.json", &["token id", "32-bit"]);
}

#[test]
fn a_tokenizer_json_whose_added_tokens_are_not_a_list() {
    let f = Folder::of(BPE);
    let mut tj = f.json("tokenizer.json");
    tj["added_tokens"] = json!("<s>");
    f.write_json("tokenizer.json", &tj);
    let e = f.refused();
    assert_error(&e, Some(Rule::BadField), "tokenizer.json", &["added_tokens", "not a list"]);
}

/// The folder as copied converts: the cases above fail for what they break.
#[test]
fn the_copies_convert_unbroken() {
    for name in [PLAIN, SHARDED] {
        let f = Folder::of(name);
        let dest = f.tmp.path().join("out.gguf");
        convert_checkpoint(&f.dir, &dest, &CheckpointOptions::default(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(Path::new(&dest).is_file());
    }
}

/// A key/value the architecture's class sets again after the common ones (Command-R's
/// `rope.scaling.type` "none" after a yarn rope scaling's) is written once, where it first
/// came, with the later value, as gguf-py's `add_key_value` replaces it. Found by the
/// `hf_config` fuzz target.
#[test]
fn a_key_set_twice_is_written_once() {
    let f = Folder::of("CommandR-GPT2Tok-BPE-bf16-tied");
    f.config(|c| {
        let rope = json!({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 256});
        c.insert("rope_scaling".into(), rope);
    });
    let dest = f.tmp.path().join("out.gguf");
    let options =
        CheckpointOptions { tokenizers: Some(&tensorfile_tokenizers::HF_TOKENIZERS), ..CheckpointOptions::default() };
    convert_checkpoint(&f.dir, &dest, &options, &mut |_| {}).unwrap();
    let keys: Vec<String> =
        tensorfile::TensorFile::open(&dest).unwrap().summary().metadata.into_iter().map(|(k, _)| k).collect();
    for (i, k) in keys.iter().enumerate() {
        assert!(!keys[..i].contains(k), "{k} written twice");
    }
    let at = keys.iter().position(|k| k == "command-r.rope.scaling.type").expect("the rope scaling type");
    assert_eq!(keys[at + 1], "command-r.rope.scaling.factor", "the type kept where yarn's came");
}
