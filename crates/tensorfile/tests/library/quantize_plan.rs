//! The quantization planner against llama-quantize (`tests/fixtures/gguf-quantize/`, made by
//! `scripts/fixturegen/gguf_quantize.py` with the real tool): for every recorded run, the plan
//! of the same input and options has the output's tensors (names, types, dimensions, offsets,
//! in order), its key/values (keys, order, types, values), its data offset, header bytes and
//! size; a run llama-quantize refused, the plan refuses, naming the same tensor.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tensorfile::llama::{
    Imatrix, KvOverride, PlannedFile, Preset, QuantizeInput, QuantizePlan, QuantizeRequest, QuantizeTarget, plan,
};
use tensorfile::model::quant::GgmlType;
use tensorfile::model::{MetaValue, Number, TypedArray};
use tensorfile::{OpenOptions, TensorFile};

fn dir() -> PathBuf {
    crate::common::fixtures_dir().join("gguf-quantize")
}

/// Every run record, by name.
fn runs() -> Vec<(String, Value)> {
    let runs = dir().join("runs");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&runs).unwrap_or_else(|e| panic!("{}: {e} (run scripts/fixtures)", runs.display())) {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        let record: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        out.push((name, record));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(out.len(), 353, "runs recorded in tests/fixtures/gguf-quantize/runs/");
    out
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect()).unwrap_or_default()
}

fn ggml(name: &str) -> GgmlType {
    GgmlType::from_name(name).unwrap_or_else(|| panic!("type {name}"))
}

/// The request a run's options state (as llama-quantize's arguments).
fn request(o: &Value) -> QuantizeRequest {
    let preset = Preset::parse(o["preset"].as_str().unwrap()).unwrap();
    let mut r = QuantizeRequest::new(QuantizeTarget::Preset(preset));
    r.imatrix = o["imatrix"].as_str().map(PathBuf::from);
    r.imatrix_include = strings(&o["include_weights"]);
    r.imatrix_exclude = strings(&o["exclude_weights"]);
    for pair in o["tensor_types"].as_array().into_iter().flatten() {
        let text = format!("{}={}", pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
        r.tensor_types.push(QuantizeRequest::parse_tensor_type(&text).unwrap());
    }
    r.output_tensor_type = o["output_tensor_type"].as_str().map(ggml);
    r.token_embedding_type = o["token_embedding_type"].as_str().map(ggml);
    r.leave_output_tensor = o["leave_output_tensor"].as_bool().unwrap_or(false);
    r.pure = o["pure"].as_bool().unwrap_or(false);
    r.allow_requantize = o["allow_requantize"].as_bool().unwrap_or(false);
    r.keep_split = o["keep_split"].as_bool().unwrap_or(false);
    r.override_kv = strings(&o["override_kv"]).iter().map(|t| KvOverride::parse(t).unwrap()).collect();
    r.prune_layers = o["prune_layers"].as_array().into_iter().flatten().map(|v| v.as_u64().unwrap() as u32).collect();
    r
}

/// The model a run quantized: one file, or every file of a split model (`X-00001-of-0000N.gguf`,
/// each opened alone: the key/values of the first, the tensors of all with their file's number).
fn input_of(name: &str) -> QuantizeInput {
    let Some(prefix) = name.strip_suffix(".gguf").and_then(|n| n.rsplit_once("-00001-of-")) else {
        return QuantizeInput::from_file(&TensorFile::open(dir().join(name)).unwrap()).unwrap();
    };
    let count: u16 = prefix.1.parse().unwrap();
    let mut input = QuantizeInput::default();
    for no in 0..count {
        let path = dir().join(tensorfile::llama::split_path(prefix.0, no, count));
        // A part opened by its path is the whole model: as a list of one file, the part alone.
        let mut part = QuantizeInput::from_file(&OpenOptions::new().open_set(&[&path]).unwrap()).unwrap();
        if no == 0 {
            input.metadata = part.metadata;
        }
        part.tensors.iter_mut().for_each(|t| t.split = no);
        input.tensors.extend(part.tensors);
    }
    input
}

/// The plan of a run, its input and importance matrix read from the committed files.
fn plan_of(record: &Value, inputs: &mut BTreeMap<String, QuantizeInput>) -> tensorfile::Result<QuantizePlan> {
    let name = record["input"].as_str().unwrap();
    let input = inputs.entry(name.to_string()).or_insert_with(|| input_of(name));
    let request = request(&record["options"]);
    let imatrix = request.imatrix.as_ref().map(|p| Imatrix::read(&dir().join(p)).unwrap());
    plan(input, &request, imatrix.as_ref())
}

/// A GGUF value type's name, as the records spell it.
fn number_type(n: &Number) -> &'static str {
    match n {
        Number::U8(_) => "u8",
        Number::I8(_) => "i8",
        Number::U16(_) => "u16",
        Number::I16(_) => "i16",
        Number::U32(_) => "u32",
        Number::I32(_) => "i32",
        Number::U64(_) => "u64",
        Number::I64(_) => "i64",
        Number::F32(_) => "f32",
        Number::F64(_) => "f64",
        _ => "?",
    }
}

/// An array's element type name and its elements as GGUF stores them (after the count).
fn array_bytes(a: &TypedArray) -> (&'static str, Vec<u8>) {
    fn each<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| f(x)).collect()
    }
    match a {
        TypedArray::U8(v) => ("u8", v.clone()),
        TypedArray::I8(v) => ("i8", each(v, i8::to_le_bytes)),
        TypedArray::U16(v) => ("u16", each(v, u16::to_le_bytes)),
        TypedArray::I16(v) => ("i16", each(v, i16::to_le_bytes)),
        TypedArray::U32(v) => ("u32", each(v, u32::to_le_bytes)),
        TypedArray::I32(v) => ("i32", each(v, i32::to_le_bytes)),
        TypedArray::U64(v) => ("u64", each(v, u64::to_le_bytes)),
        TypedArray::I64(v) => ("i64", each(v, i64::to_le_bytes)),
        TypedArray::F32(v) => ("f32", each(v, f32::to_le_bytes)),
        TypedArray::F64(v) => ("f64", each(v, f64::to_le_bytes)),
        TypedArray::Bool(v) => ("bool", v.iter().map(|&b| u8::from(b)).collect()),
        TypedArray::Text(v) => {
            ("string", v.iter().flat_map(|s| (s.len() as u64).to_le_bytes().into_iter().chain(s.bytes())).collect())
        }
        _ => ("?", Vec::new()),
    }
}

/// A planned key/value as the records write it.
fn recorded(key: &str, v: &MetaValue) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("key".into(), key.into());
    match v {
        MetaValue::Number(n) => {
            out.insert("type".into(), number_type(n).into());
            let value = match *n {
                Number::F32(f) => Value::from(f64::from(f)),
                Number::F64(f) => Value::from(f),
                other => other.to_json(),
            };
            out.insert("value".into(), value);
        }
        MetaValue::Bool(b) => {
            out.insert("type".into(), "bool".into());
            out.insert("value".into(), (*b).into());
        }
        MetaValue::Text(s) => {
            out.insert("type".into(), "string".into());
            out.insert("value".into(), s.as_str().into());
        }
        MetaValue::TypedArray(a) => {
            let (element, bytes) = array_bytes(a);
            out.insert("type".into(), "array".into());
            out.insert("element".into(), element.into());
            out.insert("len".into(), a.len().into());
            out.insert("sha256".into(), hex(&Sha256::digest(&bytes)).into());
            if a.len() <= 16 {
                let items = (0..a.len()).filter_map(|i| a.get(i)).map(|item| recorded("", &item)["value"].clone());
                out.insert("value".into(), Value::Array(items.collect()));
            }
        }
        other => panic!("{key}: a value GGUF has no type for: {other:?}"),
    }
    Value::Object(out)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The differences between a planned file and what llama-quantize wrote.
///
/// Where the tool writes a broken file, the plan deviates on purpose, and only there: a
/// dimension of 0 that the tool drops (it writes what ggml_n_dims counts, a tensor that claims
/// bytes it does not have) is kept; tensors the tool lays out at 32 bytes under a
/// `general.alignment` of more (a file llama.cpp refuses to load) are laid out at the
/// alignment. Then the tensors, types and keys must still be the tool's; the header and sizes
/// differ.
fn compare(file: &PlannedFile, out: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let tensors = out["tensors"].as_array().unwrap();
    let (data_offset, size) = (out["data_offset"].as_u64().unwrap(), out["size"].as_u64().unwrap());
    let alignment = out["general_alignment"].as_u64().unwrap();
    let misaligned = tensors.iter().any(|t| (data_offset + t[3].as_u64().unwrap()) % alignment != 0);
    if tensors.len() != file.tensors.len() {
        problems.push(format!("{} tensors planned, {} written", file.tensors.len(), tensors.len()));
    }
    let mut deviates = misaligned;
    for (t, want) in file.tensors.iter().zip(tensors) {
        let offset = if misaligned { want[3].as_u64().unwrap() } else { t.offset };
        let got = serde_json::json!([t.name, t.to.name(), t.ne, offset]);
        let counted = t.ne.iter().skip(1).rposition(|&d| d > 1).map_or(1, |i| i + 2);
        let as_ggml_writes = serde_json::json!([t.name, t.to.name(), t.ne[..counted], offset]);
        if &got != want && t.ne.contains(&0) && &as_ggml_writes == want {
            deviates = true;
        } else if &got != want {
            problems.push(format!("tensor planned {got}, written {want}"));
        }
        if (file.data_offset + t.offset) % file.alignment != 0 {
            problems.push(format!("{} planned at {}, not a multiple of {}", t.name, t.offset, file.alignment));
        }
    }
    if misaligned && file.alignment != alignment {
        problems.push(format!("laid out at {}, where the file says {alignment}", file.alignment));
    }
    let metadata = out["metadata"].as_array().unwrap();
    let planned: Vec<Value> = file.metadata.iter().map(|(k, v)| recorded(k, v)).collect();
    if planned.len() != metadata.len() {
        problems.push(format!("{} keys planned, {} written", planned.len(), metadata.len()));
    }
    for (got, want) in planned.iter().zip(metadata) {
        if got != want {
            problems.push(format!("key planned {got}, written {want}"));
        }
    }
    if deviates {
        return problems;
    }
    if file.data_offset != data_offset {
        problems.push(format!("data at {} planned, at {data_offset} written", file.data_offset));
    }
    match file.header() {
        Ok(h) if hex(&Sha256::digest(&h)) == out["header_sha256"].as_str().unwrap() => {}
        Ok(_) => problems.push("the header bytes differ".into()),
        Err(e) => problems.push(format!("no header: {e}")),
    }
    if file.size() != size {
        problems.push(format!("{} bytes planned, {size} written", file.size()));
    }
    problems
}

/// What is wrong with the plan of one run.
fn check(record: &Value, inputs: &mut BTreeMap<String, QuantizeInput>) -> Result<(), String> {
    let planned = plan_of(record, inputs);
    let preset = Preset::parse(record["options"]["preset"].as_str().unwrap()).unwrap();
    if preset.default_type().is_none() {
        // A preset of a type the library does not know yet (Q2_0) is refused, by name.
        return match planned {
            Err(e) if e.to_string().contains(preset.name()) => Ok(()),
            other => Err(format!("a preset of an unknown type: {:?}", other.map(|_| ()))),
        };
    }
    if record["exit_code"].as_i64() != Some(0) {
        let error = record["error"].as_str().unwrap();
        return match planned {
            Ok(_) => Err(format!("planned, but llama-quantize refused: {error}")),
            Err(e) => match record["tensor"].as_str() {
                Some(t) if e.tensor() != Some(t) => {
                    Err(format!("refused for {:?} ({e}), llama-quantize for {t}", e.tensor()))
                }
                _ => Ok(()),
            },
        };
    }
    let plan = planned.map_err(|e| format!("refused: {e}"))?;
    let outputs = match record["outputs"].as_array() {
        Some(all) => all.clone(),
        None => vec![record["output"].clone()],
    };
    if plan.files.len() != outputs.len() {
        return Err(format!("{} files planned, {} written", plan.files.len(), outputs.len()));
    }
    let mut problems = Vec::new();
    for (file, out) in plan.files.iter().zip(&outputs) {
        if let (Some((no, count)), Some(name)) = (file.split, out["file"].as_str()) {
            // llama-quantize's arguments end: input, output, preset, threads.
            let output = record["arguments"].as_array().unwrap().iter().rev().nth(2).unwrap().as_str().unwrap();
            let stem = output.strip_suffix(".gguf").unwrap_or(output);
            if tensorfile::llama::split_path(stem, no, count) != name {
                problems.push(format!("split {no} of {count} is not {name}"));
            }
        }
        problems.extend(compare(file, out));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n    ")) }
}

#[test]
fn every_run_of_llama_quantize_is_planned_as_it_ran() {
    let mut inputs = BTreeMap::new();
    let mut failures = Vec::new();
    let runs = runs();
    for (name, record) in &runs {
        if let Err(why) = check(record, &mut inputs) {
            failures.push(format!("{name}:\n    {why}"));
        }
    }
    assert!(failures.is_empty(), "{} of {} runs differ:\n{}", failures.len(), runs.len(), failures.join("\n"));
}

#[test]
fn the_records_cover_every_preset_and_option() {
    let runs = runs();
    let ran = |f: &dyn Fn(&Value) -> bool| runs.iter().any(|(_, r)| r["exit_code"] == 0 && f(&r["options"]));
    for p in Preset::all() {
        assert!(runs.iter().any(|(_, r)| r["options"]["preset"] == p.name()), "no run of {}", p.name());
    }
    for option in
        ["imatrix", "tensor_types", "output_tensor_type", "token_embedding_type", "override_kv", "prune_layers"]
    {
        assert!(ran(&|o| !o[option].is_null()), "no run with {option}");
    }
    for flag in ["pure", "leave_output_tensor", "allow_requantize", "keep_split"] {
        assert!(ran(&|o| o[flag] == true), "no run with {flag}");
    }
    assert!(ran(&|o| o["imatrix"].as_str().is_some_and(|p| p.ends_with(".dat"))), "no legacy importance matrix");
}

/// The committed importance matrices, both layouts: what llama-imatrix wrote reads back.
#[test]
fn importance_matrices_of_both_layouts_read() {
    let gguf = Imatrix::read(&dir().join("imatrix-tiny.gguf")).unwrap();
    let dat = Imatrix::read(&dir().join("imatrix-tiny.dat")).unwrap();
    assert!(!gguf.is_legacy() && gguf.has_metadata() && dat.is_legacy());
    assert_eq!(gguf.datasets(), &[b"calibration.txt".to_vec()]);
    assert_eq!(dat.datasets(), gguf.datasets());
    assert_eq!(gguf.chunk_count(), dat.chunk_count());
    let names = |m: &Imatrix| m.entries().keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&gguf), names(&dat));
    // The legacy layout stores what the GGUF one's weights are, times the calls.
    let (g, d) = (gguf.weights().unwrap(), dat.weights().unwrap());
    for (name, w) in &g {
        let close = w.iter().zip(&d[name]).all(|(a, b)| (a - b).abs() <= 1e-5 * a.abs().max(1e-3));
        assert!(close, "{}: the two layouts disagree", String::from_utf8_lossy(name));
    }
    let moe = Imatrix::read(&dir().join("imatrix-moe.gguf")).unwrap();
    let w = moe.weights().unwrap();
    let experts = &w[&b"blk.6.ffn_up_exps.weight".to_vec()];
    assert_eq!(experts.len(), 256 * 8);
    assert!(experts[..256].iter().all(|&v| v == 1.0), "an expert never counted weighs 1");
    assert!(Path::new(&dir().join("imatrix-nan.dat")).exists());
}

fn record(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(dir().join("runs").join(format!("{name}.json"))).unwrap()).unwrap()
}

/// One type is its first preset with `--pure`: the plan of Q4_K is llama-quantize's `--pure
/// Q4_K` file; a type without a preset is refused.
#[test]
fn a_single_type_is_its_first_preset_made_pure() {
    let input = input_of("tiny.gguf");
    let plan = plan(&input, &QuantizeRequest::new(QuantizeTarget::Type(GgmlType::Q4_K)), None).unwrap();
    assert_eq!(plan.file_type, 15);
    let problems = compare(&plan.files[0], &record("tiny-Q4_K-pure")["output"]);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let refused = tensorfile::llama::plan(&input, &QuantizeRequest::new(QuantizeTarget::Type(GgmlType::Q8_1)), None);
    assert_eq!(refused.unwrap_err().rule(), Some(tensorfile::Rule::Unsupported));
}

/// `include`/`exclude` (tensorfile's, not llama-quantize's): what they leave out keeps its
/// type, and the rest is planned as without them.
#[test]
fn tensors_left_out_keep_their_type() {
    let input = input_of("tiny.gguf");
    let q4_k_m = QuantizeRequest::new(QuantizeTarget::Preset(Preset::parse("Q4_K_M").unwrap()));
    let all = plan(&input, &q4_k_m, None).unwrap();
    let mut some = q4_k_m.clone();
    some.exclude = vec!["blk.1.*".into()];
    let some = plan(&input, &some, None).unwrap();
    for (a, s) in all.files[0].tensors.iter().zip(&some.files[0].tensors) {
        assert_eq!(a.name, s.name);
        let want = if a.name.starts_with("blk.1.") { a.from } else { a.to };
        assert_eq!(s.to, want, "{}", a.name);
    }
    assert!(some.files[0].tensors.iter().any(|t| t.name.starts_with("blk.1.") && t.from == GgmlType::BF16));
}

/// A request that names an importance matrix must come with it, and the other way round;
/// includes and excludes of its entries do not go together.
#[test]
fn importance_matrix_requests_are_whole() {
    let input = input_of("tiny.gguf");
    let m = Imatrix::read(&dir().join("imatrix-tiny.gguf")).unwrap();
    let mut r = QuantizeRequest::new(QuantizeTarget::Preset(Preset::parse("Q4_0").unwrap()));
    assert!(plan(&input, &r, Some(&m)).is_err());
    r.imatrix = Some("imatrix-tiny.gguf".into());
    assert!(plan(&input, &r, None).is_err());
    assert!(plan(&input, &r, Some(&m)).is_ok());
    r.imatrix_include = vec!["attn".into()];
    r.imatrix_exclude = vec!["ffn".into()];
    assert!(plan(&input, &r, Some(&m)).is_err());
}

/// A dimension of 0 counts as ggml counts it (a `[256, 0]` matrix is one dimension, so it is
/// not quantized; an `[256, 0, 8]` expert tensor is, to no bytes) and is written, where
/// llama-quantize drops it and writes a tensor that claims bytes it does not have.
#[test]
fn dimensions_of_zero_are_counted_as_ggml_counts_them_and_kept() {
    let mut inputs = BTreeMap::new();
    for run in ["empty-Q8_0", "empty-Q4_K_M-imatrix"] {
        let record = record(run);
        let plan = plan_of(&record, &mut inputs).unwrap();
        let tensors: BTreeMap<&str, (GgmlType, &[u64])> =
            plan.files[0].tensors.iter().map(|t| (t.name.as_str(), (t.to, &t.ne[..]))).collect();
        assert_eq!(tensors["blk.0.attn_v.weight"], (GgmlType::F16, &[256, 0][..]), "{run}");
        assert_eq!(tensors["blk.0.ffn_up_exps.weight"].1, &[256, 0, 8], "{run}");
        assert_ne!(tensors["blk.0.ffn_up_exps.weight"].0, GgmlType::F16, "{run}");
        // The tool wrote the matrix as `[256]`: that is the only difference.
        let written = &record["output"]["tensors"];
        assert!(
            written
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t[0] == "blk.0.attn_v.weight" && t[2] == serde_json::json!([256]))
        );
        assert!(compare(&plan.files[0], &record["output"]).is_empty(), "{run}");
    }
    // Rows of no elements, on which llama-quantize dies (a division by zero: SIGFPE), are
    // refused, naming the tensor.
    let mut input = input_of("empty.gguf");
    input.tensors.iter_mut().find(|t| t.name == "blk.0.attn_v.weight").unwrap().ne = vec![0, 4];
    let err = plan(&input, &QuantizeRequest::new(QuantizeTarget::parse("Q8_0").unwrap()), None).unwrap_err();
    assert_eq!((err.rule(), err.tensor()), (Some(tensorfile::Rule::BadField), Some("blk.0.attn_v.weight")), "{err}");
}

/// A `general.alignment` of 64 (prequant.gguf's) lays the output out at 64, where
/// llama-quantize lays it out at 32 and writes a file llama.cpp refuses to load.
#[test]
fn the_output_is_laid_out_at_the_alignment_it_states() {
    let mut inputs = BTreeMap::new();
    let mut misaligned_by_the_tool = 0;
    for run in ["prequant-COPY", "prequant-Q8_0-pure-allow", "prequant-Q4_K_M-allow", "prequant-F16-allow"] {
        let record = record(run);
        let plan = plan_of(&record, &mut inputs).unwrap();
        let file = &plan.files[0];
        assert_eq!(file.alignment, 64, "{run}");
        assert_eq!(file.data_offset % 64, 0, "{run}");
        assert!(file.tensors.iter().all(|t| t.offset % 64 == 0), "{run}");
        let out = &record["output"];
        misaligned_by_the_tool +=
            out["tensors"].as_array().unwrap().iter().any(|t| t[3].as_u64().unwrap() % 64 != 0) as usize;
        assert!(compare(file, out).is_empty(), "{run}: {:?}", compare(file, out));
    }
    assert_eq!(misaligned_by_the_tool, 3, "the tool's files this test is about");
    // Without the key, 32.
    let record = record("tiny-Q4_K_M");
    assert_eq!(plan_of(&record, &mut inputs).unwrap().files[0].alignment, 32);
}
