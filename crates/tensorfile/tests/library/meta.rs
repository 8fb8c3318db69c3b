//! `edit_metadata`: keys set and deleted in GGUF files made by gguf-py and safetensors files
//! made by the safetensors library (`tests/fixtures/`); the tensor data copied byte for byte,
//! the new values read back with their types, an edit undone giving the original bytes, and
//! the value parser's refusals, each naming the key and the rule.

use crate::common;

use std::path::{Path, PathBuf};

use tensorfile::model::{MetaValue, Number, TypedArray};
use tensorfile::{Assignment, MetaEdit, MetaType, TensorFile, edit_metadata};

fn fixture(dir: &str, name: &str) -> PathBuf {
    common::fixtures_dir().join(dir).join(name)
}

fn edit(input: &Path, out: &Path, set: &[&str], delete: &[&str]) -> tensorfile::Result<tensorfile::MetaReport> {
    let mut e = MetaEdit::default();
    for s in set {
        e = e.set(s)?;
    }
    for d in delete {
        e = e.delete(*d);
    }
    edit_metadata(&TensorFile::open(input)?, out, &e)
}

fn metadata(path: &Path) -> Vec<(String, MetaValue)> {
    TensorFile::open(path).unwrap().summary().metadata
}

fn value(path: &Path, key: &str) -> Option<MetaValue> {
    metadata(path).into_iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Every tensor's stored bytes, by name.
fn tensor_bytes(path: &Path) -> Vec<(String, Vec<u8>)> {
    let file = TensorFile::open(path).unwrap();
    let bytes = std::fs::read(path).unwrap();
    file.entries()
        .iter()
        .map(|e| {
            let (at, n) = (e.storage().offset() as usize, e.storage().len() as usize);
            (e.info().name().to_string(), bytes[at..at + n].to_vec())
        })
        .collect()
}

/// gguf-py's files, the big-endian one (`endianess=BIG`) included.
const GGUF_FILES: &[&str] = &["metadata.gguf", "alignment.gguf", "blocks.gguf", "big_endian.gguf"];

#[test]
fn an_edit_of_nothing_gives_gguf_py_s_bytes_back() {
    let dir = tempfile::tempdir().unwrap();
    for name in GGUF_FILES {
        let input = fixture("gguf", name);
        let out = dir.path().join(name);
        let report = edit(&input, &out, &[], &[]).unwrap();
        assert!(report.changes.is_empty());
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&input).unwrap(), "{name}");
    }
}

#[test]
fn every_gguf_type_is_set_and_read_back_with_the_tensors_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("gguf", "metadata.gguf");
    let out = dir.path().join("out.gguf");
    let template = dir.path().join("template.jinja");
    std::fs::write(&template, "{% for m in messages %}{{ m['content'] }}\n{% endfor %}").unwrap();
    let template_arg = format!("tokenizer.chat_template=@{}", template.display());
    let set = [
        "scalar.u8=7",
        "scalar.i8=-7",
        "scalar.u16=700",
        "scalar.i16=-700",
        "scalar.u32=70000",
        "scalar.i32=-70000",
        "scalar.u64=18446744073709551614",
        "scalar.i64=-5",
        "scalar.f32=2.5",
        "scalar.f64=-0.125",
        "scalar.true=false",
        "general.name=renamed",
        "new.u16:u16=9",
        "new.int=12",
        "new.big=5000000000",
        "new.float=1.5",
        "new.flag=true",
        "new.text=hello world",
        "new.ints=[1, -2, 3]",
        "new.u8s:[u8]=[1,2,255]",
        "new.f64s:[f64]=[0.5, 1e300]",
        "new.strs=[\"a\", \"b,c\"]",
        "new.empty:[str]=[]",
        "new.colon:in=key",
        template_arg.as_str(),
    ];
    let report = edit(&input, &out, &set, &["scalar.false"]).unwrap();
    assert_eq!(report.changes.len(), set.len() + 1);
    let expect = [
        ("scalar.u8", MetaValue::Number(Number::U8(7))),
        ("scalar.i8", MetaValue::Number(Number::I8(-7))),
        ("scalar.u16", MetaValue::Number(Number::U16(700))),
        ("scalar.i16", MetaValue::Number(Number::I16(-700))),
        ("scalar.u32", MetaValue::Number(Number::U32(70000))),
        ("scalar.i32", MetaValue::Number(Number::I32(-70000))),
        ("scalar.u64", MetaValue::Number(Number::U64(u64::MAX - 1))),
        ("scalar.i64", MetaValue::Number(Number::I64(-5))),
        ("scalar.f32", MetaValue::Number(Number::F32(2.5))),
        ("scalar.f64", MetaValue::Number(Number::F64(-0.125))),
        ("scalar.true", MetaValue::Bool(false)),
        ("general.name", MetaValue::Text("renamed".into())),
        ("new.u16", MetaValue::Number(Number::U16(9))),
        ("new.int", MetaValue::Number(Number::I32(12))),
        ("new.big", MetaValue::Number(Number::I64(5_000_000_000))),
        ("new.float", MetaValue::Number(Number::F32(1.5))),
        ("new.flag", MetaValue::Bool(true)),
        ("new.text", MetaValue::Text("hello world".into())),
        ("new.ints", MetaValue::TypedArray(TypedArray::I32(vec![1, -2, 3]))),
        ("new.u8s", MetaValue::TypedArray(TypedArray::U8(vec![1, 2, 255]))),
        ("new.f64s", MetaValue::TypedArray(TypedArray::F64(vec![0.5, 1e300]))),
        ("new.strs", MetaValue::TypedArray(TypedArray::Text(vec!["a".into(), "b,c".into()]))),
        ("new.empty", MetaValue::TypedArray(TypedArray::Text(vec![]))),
        ("new.colon:in", MetaValue::Text("key".into())),
        ("tokenizer.chat_template", MetaValue::Text("{% for m in messages %}{{ m['content'] }}\n{% endfor %}".into())),
    ];
    // Exactly the old key/values, in order, with these changed, then the new keys.
    let mut want = metadata(&input);
    want.retain(|(k, _)| k != "scalar.false");
    for (key, v) in &expect {
        match want.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = v.clone(),
            None => want.push((key.to_string(), v.clone())),
        }
    }
    assert_eq!(metadata(&out), want);
    assert_eq!(tensor_bytes(&out), tensor_bytes(&input));
    let existing_array = metadata(&input).into_iter().find(|(_, v)| matches!(v, MetaValue::TypedArray(_)));
    assert!(existing_array.is_some(), "the fixture has arrays");
}

#[test]
fn an_edit_undone_gives_the_original_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("gguf", "metadata.gguf");
    let (a, b) = (dir.path().join("a.gguf"), dir.path().join("b.gguf"));
    edit(&input, &a, &["added.key:[u32]=[1,2]", "scalar.u16=1", "general.name=x"], &[]).unwrap();
    assert_ne!(std::fs::read(&a).unwrap(), std::fs::read(&input).unwrap());
    let old_name = value(&input, "general.name").unwrap();
    let old_name = old_name.as_text().unwrap();
    edit(&a, &b, &["scalar.u16=65000", &format!("general.name={old_name}")], &["added.key"]).unwrap();
    assert_eq!(std::fs::read(&b).unwrap(), std::fs::read(&input).unwrap());
}

#[test]
fn a_new_alignment_lays_the_tensors_out_again() {
    let dir = tempfile::tempdir().unwrap();
    for name in GGUF_FILES {
        let input = fixture("gguf", name);
        let (wide, back) = (dir.path().join("wide.gguf"), dir.path().join("back.gguf"));
        let had = value(&input, "general.alignment");
        edit(&input, &wide, &["general.alignment:u32=256"], &[]).unwrap();
        let file = TensorFile::open(&wide).unwrap();
        assert!(file.verify().is_empty(), "{name}");
        assert!(file.entries().iter().all(|e| e.storage().offset() % 256 == 0), "{name}");
        assert_eq!(tensor_bytes(&wide), tensor_bytes(&input), "{name}");
        match had {
            Some(MetaValue::Number(Number::U32(a))) => edit(&wide, &back, &[&format!("general.alignment={a}")], &[]),
            _ => edit(&wide, &back, &[], &["general.alignment"]),
        }
        .unwrap();
        assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&input).unwrap(), "{name}");
    }
    let err = edit(&fixture("gguf", "metadata.gguf"), &dir.path().join("x.gguf"), &["general.alignment:u32=48"], &[])
        .unwrap_err();
    assert!(err.to_string().contains("power of two"), "{err}");
}

#[test]
fn the_input_is_replaced_only_when_it_is_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.gguf");
    std::fs::copy(fixture("gguf", "metadata.gguf"), &input).unwrap();
    let original = std::fs::read(&input).unwrap();
    edit(&input, &dir.path().join("out.gguf"), &["general.name=other"], &[]).unwrap();
    assert_eq!(std::fs::read(&input).unwrap(), original);
    edit(&input, &input, &["general.name=other"], &[]).unwrap();
    assert_eq!(value(&input, "general.name"), Some(MetaValue::Text("other".into())));
    // A failed edit leaves it as it was.
    assert!(edit(&input, &input, &["scalar.u8=300"], &[]).is_err());
    assert_eq!(value(&input, "general.name"), Some(MetaValue::Text("other".into())));
}

#[test]
fn a_big_endian_gguf_stays_big_endian_and_formats_without_an_editor_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("gguf", "big_endian.gguf");
    let out = dir.path().join("x.gguf");
    edit(&input, &out, &["added.count=7", "added.name=big", "general.alignment:u32=64"], &[]).unwrap();
    let edited = TensorFile::open(&out).unwrap();
    assert_eq!(edited.entries()[0].storage().byte_order(), tensorfile::model::ByteOrder::Big);
    assert_eq!(value(&out, "added.count"), Some(MetaValue::Number(Number::I32(7))));
    assert_eq!(value(&out, "added.name"), Some(MetaValue::Text("big".into())));
    // Every other key/value as gguf-py wrote it, every tensor's bytes as they were (laid out
    // again at the new alignment).
    let kept: Vec<_> =
        metadata(&out).into_iter().filter(|(k, _)| !k.starts_with("added.") && k != "general.alignment").collect();
    let before: Vec<_> = metadata(&input).into_iter().filter(|(k, _)| k != "general.alignment").collect();
    assert_eq!(kept, before);
    assert_eq!(tensor_bytes(&out), tensor_bytes(&input));
    let npy = std::fs::read_dir(common::fixtures_dir().join("numpy"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "npy"))
        .unwrap();
    let err = edit(&npy, &dir.path().join("x.npy"), &["a=1"], &[]).unwrap_err();
    assert!(err.to_string().contains("gguf, safetensors"), "{err}");
}

#[test]
fn safetensors_metadata_is_text_and_the_data_is_copied() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("safetensors", "metadata.safetensors");
    let same = dir.path().join("same.safetensors");
    edit(&input, &same, &[], &[]).unwrap();
    assert_eq!(std::fs::read(&same).unwrap(), std::fs::read(&input).unwrap());
    let out = dir.path().join("out.safetensors");
    let first = metadata(&input)[0].0.clone();
    edit(&input, &out, &["format=pt", "count=7", "at.note=@@at"], &[&first]).unwrap();
    let got = metadata(&out);
    assert_eq!(got.iter().find(|(k, _)| k == "count").map(|(_, v)| v.clone()), Some(MetaValue::Text("7".into())));
    assert_eq!(got.iter().find(|(k, _)| k == "at.note").map(|(_, v)| v.clone()), Some(MetaValue::Text("@at".into())));
    assert!(got.iter().all(|(k, _)| *k != first));
    assert_eq!(tensor_bytes(&out), tensor_bytes(&input));
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(u64::from_le_bytes(bytes[..8].try_into().unwrap()) % 8, 0);
    let err = edit(&input, &out, &["count:u32=7"], &[]).unwrap_err();
    assert!(err.to_string().contains("text values only"), "{err}");
    // Metadata added to a file without any, and all of it deleted again.
    let plain = fixture("safetensors", "dtypes.safetensors");
    let (with, without) = (dir.path().join("with.safetensors"), dir.path().join("without.safetensors"));
    edit(&plain, &with, &["k=v"], &[]).unwrap();
    assert_eq!(metadata(&with), vec![("k".to_string(), MetaValue::Text("v".into()))]);
    edit(&with, &without, &[], &["k"]).unwrap();
    assert_eq!(std::fs::read(&without).unwrap(), std::fs::read(&plain).unwrap());
}

/// What the value parser refuses, and the words its error has (the key and the rule).
#[test]
fn the_value_parser_refuses_by_rule() {
    let cases: &[(&str, Option<MetaValue>, &str)] = &[
        ("no-equals", None, "expected KEY=VALUE"),
        ("=1", None, "an empty key"),
        ("k:u33=1", None, "unknown type \"u33\""),
        ("k:[[u8]]=[]", None, "unknown type"),
        ("k=@", None, "@ without a file name"),
        ("k:u8=256", None, "\"256\" is not a u8"),
        ("k:i8=-129", None, "is not a i8"),
        ("k:bool=yes", None, "not a bool"),
        ("k:f32=x", None, "not a f32"),
        ("k:[u8]=[1,x]", None, "element 1, \"x\", is not a u8"),
        ("k:[u8]=1,2", None, "an array is written"),
        ("k:[str]=[a]", None, "an array of strings is written"),
        ("k=[]", None, "an empty array needs a type"),
        ("k=[1, true]", None, "elements are of different types"),
        ("k=hello", Some(MetaValue::Number(Number::U32(1))), "\"hello\" is not a u32"),
        ("k=[1,2]", Some(MetaValue::TypedArray(TypedArray::Text(vec![]))), "an array of strings is written"),
        ("k:u32=@file", None, "@FILE gives text"),
    ];
    for (arg, existing, words) in cases {
        let err = Assignment::parse(arg)
            .and_then(|a| {
                let text = match &a.given {
                    tensorfile::Given::Text(t) => t.clone(),
                    tensorfile::Given::File(_) => String::new(),
                };
                a.resolve(&text, existing.as_ref(), true)
            })
            .expect_err(arg);
        let message = err.to_string();
        assert!(message.contains(words), "{arg}: {message}");
        if !arg.starts_with("no-") && !arg.starts_with('=') {
            assert!(message.contains("--set k"), "{arg}: {message}");
        }
    }
    assert_eq!(MetaType::parse("[u32]"), Some(MetaType::Array(Box::new(MetaType::U32))));
    assert_eq!(MetaType::parse("[u32]").unwrap().name(), "[u32]");
}

#[test]
fn edits_name_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let input = fixture("gguf", "metadata.gguf");
    let out = dir.path().join("x.gguf");
    let err = edit(&input, &out, &[], &["no.such.key"]).unwrap_err();
    assert!(err.to_string().contains("--delete no.such.key"), "{err}");
    let err = edit(&input, &out, &["general.name=a"], &["general.name"]).unwrap_err();
    assert!(err.to_string().contains("\"general.name\" is edited twice"), "{err}");
    assert!(!out.exists());
}

/// zTensor 2 file attributes, in files written by pip ztensor 2.1.2 and by tensorfile: an edit
/// of nothing gives the file back byte for byte, every blob before the manifest is copied,
/// values keep their types, and attributes all deleted leave no `attributes` map.
#[test]
fn zt2_attributes_are_any_value_and_the_blobs_are_copied() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["attributes.zt", "canonical.zt", "dtypes.zt", "gguf.zt"] {
        let input = fixture("zt2", name);
        let same = dir.path().join(format!("same-{name}"));
        edit(&input, &same, &[], &[]).unwrap();
        assert_eq!(std::fs::read(&same).unwrap(), std::fs::read(&input).unwrap(), "{name}");
        let out = dir.path().join(name);
        edit(&input, &out, &["general.name=tiny", "count:u32=7", "ratio:f64=0.5", r#"tags:[str]=["a", "b"]"#], &[])
            .unwrap();
        assert_eq!(value(&out, "general.name"), Some(MetaValue::Text("tiny".into())), "{name}");
        assert_eq!(value(&out, "count"), Some(MetaValue::Int(7)), "{name}");
        assert_eq!(value(&out, "ratio"), Some(MetaValue::Float(0.5)), "{name}");
        assert_eq!(
            value(&out, "tags"),
            Some(MetaValue::Array(vec![MetaValue::Text("a".into()), MetaValue::Text("b".into())])),
            "{name}"
        );
        let (old, new) = (std::fs::read(&input).unwrap(), std::fs::read(&out).unwrap());
        let manifest_at = u64::from_le_bytes(old[old.len() - 40..old.len() - 32].try_into().unwrap()) as usize;
        assert_eq!(new[..manifest_at], old[..manifest_at], "{name}: the blobs before the manifest");
        assert_eq!(tensor_bytes(&out), tensor_bytes(&input), "{name}");
        let keys: Vec<String> = metadata(&out).into_iter().map(|(k, _)| k).collect();
        let undone = dir.path().join(format!("undone-{name}"));
        edit(&out, &undone, &[], &keys.iter().map(String::as_str).collect::<Vec<_>>()).unwrap();
        assert!(metadata(&undone).is_empty(), "{name}");
    }
}

/// A GGUF v3 file of no tensors and one key/value (`a.key` = u32 7), then `tail`.
fn tensorless_gguf(tail: &[u8]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&1u64.to_le_bytes());
    b.extend_from_slice(&5u64.to_le_bytes());
    b.extend_from_slice(b"a.key");
    b.extend_from_slice(&4u32.to_le_bytes()); // UINT32
    b.extend_from_slice(&7u32.to_le_bytes());
    b.extend_from_slice(tail);
    b
}

#[test]
fn a_file_of_no_tensors_keeps_what_follows_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let head = tensorless_gguf(&[]).len();
    let padding = vec![0u8; head.next_multiple_of(32) - head];
    for (what, tail) in [
        ("nothing", Vec::new()),
        ("the padding", padding.clone()),
        ("the padding, then bytes of its own", [padding.clone(), b"extra bytes".to_vec()].concat()),
        ("bytes of its own", b"no padding first".to_vec()),
    ] {
        let input = dir.path().join("in.gguf");
        std::fs::write(&input, tensorless_gguf(&tail)).unwrap();
        let (a, b) = (dir.path().join("a.gguf"), dir.path().join("b.gguf"));
        edit(&input, &a, &["general.name=renamed"], &[]).unwrap();
        let edited = std::fs::read(&a).unwrap();
        if let Some(own) = tail.iter().position(|&x| x != 0) {
            assert!(edited.ends_with(&tail[own..]), "{what}: the tail is kept");
        }
        if tail.first() == Some(&0) {
            let end = edited.len() - tail.iter().position(|&x| x != 0).map_or(0, |own| tail.len() - own);
            assert_eq!(end % 32, 0, "{what}: padded again to the alignment");
        }
        // Undone, the original bytes.
        edit(&a, &b, &[], &["general.name"]).unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), std::fs::read(&input).unwrap(), "{what}");
    }
}
