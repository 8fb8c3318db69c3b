//! What `update`, `convert` and `externalize` write, against what the real consumers read back from the same
//! outputs (`tests/fixtures/rewritten/`, made by `scripts/fixturegen/rewritten.py` with torch,
//! ExecuTorch, onnx and gguf-py; none of them is needed here). For each record the command is
//! run again and its output must be, byte for byte, the one those tools read:
//!
//! - every output file has the recorded sha256;
//! - `update` changed nothing but the replaced tensors: every byte of a GGUF, ONNX (model and
//!   external data) or `.pte` output equals the input's outside the replaced tensors' ranges
//!   (located by the producing tool), which hold exactly the new bytes; every member of a `.pt`
//!   or `.pt2` archive equals the input's, but the storages of the replaced tensors, which hold
//!   the new bytes where torch's view of each tensor lies and the old ones elsewhere;
//! - tensorfile reads back every tensor as the consumer read it (dtype, shape, sha256).

mod plain_readers;

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use crate::common::*;
use plain_readers::{safetensors_tensors, zip_members};
use tensorfile::TensorFile;

fn text<'a>(v: &'a Json, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("no text {key:?} in {v}"))
}

fn items<'a>(v: &'a Json, key: &str) -> &'a Vec<Json> {
    v[key].as_array().unwrap_or_else(|| panic!("no array {key:?} in {v}"))
}

fn numbers(v: &Json) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect()
}

/// The records of one command (`update` or `convert`), by case name.
fn records(command: &str) -> Vec<Json> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixtures().join("rewritten"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".record.json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| json_of(&std::fs::read_to_string(p).unwrap()))
        .filter(|r| text(r, "command") == command)
        .collect()
}

/// The case names of `records`, in order: each test checks them against the records committed,
/// so a record that vanishes fails.
fn case_names(records: &[Json]) -> Vec<&str> {
    records.iter().map(|r| text(r, "case")).collect()
}

/// Every output file of the case, with the recorded size and sha256, and nothing else.
fn outputs_match(record: &Json, folder: &Path) {
    let case = text(record, "case");
    let expected: Vec<&str> = items(record, "outputs").iter().map(|o| text(o, "file")).collect();
    assert_eq!(names_in(folder), expected, "{case}: the files written");
    for o in items(record, "outputs") {
        let bytes = std::fs::read(folder.join(text(o, "file"))).unwrap();
        assert_eq!(bytes.len() as u64, o["size"].as_u64().unwrap(), "{case}: size of {}", text(o, "file"));
        assert_eq!(sha256(&bytes), text(o, "sha256"), "{case}: {} is not the file the consumer read", text(o, "file"));
    }
}

/// tensorfile reads back every tensor the consumer read, with its dtype, shape and bytes.
fn read_back_as_recorded(record: &Json, output: &Path) {
    let file = TensorFile::open(output).unwrap_or_else(|e| panic!("{}: {e}", text(record, "case")));
    tensors_as_recorded(text(record, "case"), &file, items(record, "tensors"));
}

fn tensors_as_recorded(case: &str, file: &TensorFile, tensors: &[Json]) {
    assert!(!tensors.is_empty(), "{case}: an empty record");
    for t in tensors {
        let name = text(t, "name");
        let entry = file.entry(name).unwrap_or_else(|| panic!("{case}: {name:?} is not read"));
        if text(t, "layout") == "blob" {
            // Named data, bytes to ExecuTorch, which tensorfile types from the delegate using it.
            assert_eq!(vec![entry.nbytes()], numbers(&t["shape"]), "{case}: size of {name}");
        } else {
            assert_eq!(entry.info().dtype().name(), text(t, "dtype"), "{case}: dtype of {name}");
            assert_eq!(entry.info().shape(), &numbers(&t["shape"])[..], "{case}: shape of {name}");
        }
        let data = file.read(name).unwrap_or_else(|e| panic!("{case}: {name}: {e}"));
        assert_eq!(sha256(data.as_dense().unwrap()), text(t, "sha256"), "{case}: bytes of {name}");
    }
}

/// The first position where two byte strings differ, for messages.
fn first_difference(a: &[u8], b: &[u8]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(at) => format!("first difference at byte {at}"),
        None => format!("lengths {} and {}", a.len(), b.len()),
    }
}

/// The new bytes of a replaced tensor as the file stores them: the weights file's
/// (little-endian) bytes, each element reversed where the range says `swap`.
fn stored_bytes(new: &[u8], range: &Json) -> Vec<u8> {
    match range["swap"].as_u64() {
        Some(width) => new.chunks(width as usize).flat_map(|e| e.iter().rev().copied()).collect(),
        None => new.to_vec(),
    }
}

/// GGUF, ONNX, `.pte`: each output file is its input with the ranges replaced, nothing else.
fn only_ranges_changed(record: &Json, input: &Path, folder: &Path, new: &NewTensors) {
    let case = text(record, "case");
    let program = text(record, "output");
    for o in items(record, "outputs") {
        let name = text(o, "file");
        let old_path = if name == program { input.to_path_buf() } else { input.with_file_name(name) };
        let mut expected = std::fs::read(&old_path).unwrap();
        let in_this_file = |r: &&Json| r["file"].as_str().unwrap_or(program) == name;
        for range in items(record, "ranges").iter().filter(in_this_file) {
            let tensor = text(range, "name");
            let (offset, nbytes) =
                (range["offset"].as_u64().unwrap() as usize, range["nbytes"].as_u64().unwrap() as usize);
            let bytes = stored_bytes(&new.bytes(tensor), range);
            assert_eq!(bytes.len(), nbytes, "{case}: {tensor} has {} new bytes for {nbytes}", bytes.len());
            expected[offset..offset + nbytes].copy_from_slice(&bytes);
        }
        let got = std::fs::read(folder.join(name)).unwrap();
        assert!(
            got == expected,
            "{case}: {name} differs from its input outside the replaced tensors, or in them: {}",
            first_difference(&got, &expected)
        );
    }
}

/// `.pt`, `.pt2`: the same members in the same order, each with the input's bytes but where a
/// replaced tensor's view lies in its storage, which holds the new bytes.
fn only_views_changed(record: &Json, input: &Path, output: &Path, new: &NewTensors) {
    let case = text(record, "case");
    let mut expected = zip_members(&std::fs::read(input).unwrap());
    for view in items(record, "views") {
        let tensor = text(view, "name");
        let member = text(view, "member");
        let storage =
            &mut expected.iter_mut().find(|(n, _)| n == member).unwrap_or_else(|| panic!("{case}: no {member}")).1;
        scatter(storage, view, &new.bytes(tensor));
    }
    let got = zip_members(&std::fs::read(output).unwrap());
    let names = |m: &[(String, Vec<u8>)]| m.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&got), names(&expected), "{case}: the archive's members");
    for ((name, got), (_, expected)) in got.iter().zip(&expected) {
        assert!(got == expected, "{case}: member {name}: {}", first_difference(got, expected));
    }
}

/// Writes `new` (row-major elements) into `storage` where the view (shape, strides and offset in
/// elements, as torch gives them) puts them.
fn scatter(storage: &mut [u8], view: &Json, new: &[u8]) {
    let (shape, stride) = (numbers(&view["shape"]), numbers(&view["stride"]));
    let (offset, item) = (view["storage_offset"].as_u64().unwrap(), view["itemsize"].as_u64().unwrap() as usize);
    let count: u64 = shape.iter().product();
    assert_eq!(new.len() as u64, count * item as u64, "{}: new bytes for its shape", text(view, "name"));
    let mut index = vec![0u64; shape.len()];
    for k in 0..count as usize {
        let element = offset + index.iter().zip(&stride).map(|(i, s)| i * s).sum::<u64>();
        let at = element as usize * item;
        storage[at..at + item].copy_from_slice(&new[k * item..(k + 1) * item]);
        // The next index in row-major order.
        for d in (0..shape.len()).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

/// The committed replacement weights, read as plain safetensors.
struct NewTensors(std::collections::BTreeMap<String, (String, Vec<u64>, Vec<u8>)>);

impl NewTensors {
    fn bytes(&self, name: &str) -> Vec<u8> {
        self.0.get(name).unwrap_or_else(|| panic!("no {name:?} in the weights")).2.clone()
    }
}

#[test]
fn update_writes_what_torch_executorch_onnx_and_gguf_py_read() {
    let cases = records("update");
    let formats: std::collections::BTreeSet<String> =
        cases.iter().map(|r| Path::new(text(r, "input")).extension().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(formats.into_iter().collect::<Vec<_>>(), ["gguf", "onnx", "pt", "pt2", "pte"], "every updatable format");
    let committed = [
        "gguf_big_endian",
        "gguf_plain",
        "onnx_external",
        "onnx_raw",
        "pt2_plain",
        "pt2_tied",
        "pt2_views",
        "pt_checkpoint",
        "pt_state_dict",
        "pte_constants",
        "pte_mutable",
        "pte_named_data",
    ];
    assert_eq!(case_names(&cases), committed, "the update records committed");
    let failed: Vec<&str> = cases
        .iter()
        .filter(|record| std::panic::catch_unwind(|| check_update(record)).is_err())
        .map(|record| text(record, "case"))
        .collect();
    assert!(failed.is_empty(), "cases failing (see their messages above): {failed:?}");
}

/// One `update` case: the command run again, its output checked against the record.
fn check_update(record: &Json) {
    let case = text(record, "case");
    let input = fixtures().join(text(record, "input"));
    let weights = fixtures().join("rewritten").join(text(record, "weights"));
    let new = NewTensors(safetensors_tensors(&std::fs::read(&weights).unwrap()));
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join(text(record, "output"));
    let replaced = json_of(&ok(&[&"update", &input, &"--weights", &weights, &"-o", &output, &"--json"]));
    let given: Vec<&String> = new.0.keys().collect();
    let mut said: Vec<&str> = items(&replaced, "replaced").iter().map(|n| n.as_str().unwrap()).collect();
    said.sort();
    assert_eq!(said, given, "{case}: the tensors reported replaced");

    outputs_match(record, dir.path());
    if record.get("views").is_some() {
        only_views_changed(record, &input, &output, &new);
    } else {
        only_ranges_changed(record, &input, dir.path(), &new);
    }
    read_back_as_recorded(record, &output);
    for (name, (_, _, bytes)) in &new.0 {
        let t = items(record, "tensors").iter().find(|t| text(t, "name") == name).unwrap();
        assert_eq!(text(t, "sha256"), sha256(bytes), "{case}: the consumer read back {name} as given");
    }
}

#[test]
fn convert_writes_the_pt_and_ptd_files_torch_and_executorch_read() {
    let cases = records("convert");
    let outputs: Vec<String> = cases
        .iter()
        .map(|r| Path::new(text(r, "output")).extension().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(outputs, ["pt", "pt", "ptd", "ptd"], "the outputs of the convert records");
    let committed = ["convert_pt", "convert_pt_names", "convert_ptd", "convert_ptd_dtypes"];
    assert_eq!(case_names(&cases), committed, "the convert records committed");
    let failed: Vec<&str> = cases
        .iter()
        .filter(|record| std::panic::catch_unwind(|| check_convert(record)).is_err())
        .map(|record| text(record, "case"))
        .collect();
    assert!(failed.is_empty(), "cases failing (see their messages above): {failed:?}");
}

/// One `convert` case: the command run again, its output checked against the record.
fn check_convert(record: &Json) {
    let input = fixtures().join(text(record, "input"));
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join(text(record, "output"));
    let arguments: Vec<&str> = items(record, "arguments").iter().map(|a| a.as_str().unwrap()).collect();
    let mut command: Vec<Arg<'_>> = vec![&"convert", &input, &output];
    command.extend(arguments.iter().map(|a| a as Arg<'_>));
    ok(&command);
    outputs_match(record, dir.path());
    read_back_as_recorded(record, &output);
}

#[test]
fn externalize_writes_programs_and_a_ptd_that_executorch_runs() {
    let cases = records("externalize");
    // One program and several.
    assert_eq!(case_names(&cases), ["externalize_one", "externalize_two"], "the externalize records committed");
    let failed: Vec<&str> = cases
        .iter()
        .filter(|record| std::panic::catch_unwind(|| check_externalize(record)).is_err())
        .map(|record| text(record, "case"))
        .collect();
    assert!(failed.is_empty(), "cases failing (see their messages above): {failed:?}");
}

/// One `externalize` case: the programs and the .ptd written again, checked against the
/// record, each program read back with the .ptd.
fn check_externalize(record: &Json) {
    let case = text(record, "case");
    let dir = tempfile::tempdir().unwrap();
    let inputs: Vec<PathBuf> = items(record, "inputs").iter().map(|i| fixtures().join(i.as_str().unwrap())).collect();
    let output = match text(record, "output") {
        "" => dir.path().to_path_buf(),
        file => dir.path().join(file),
    };
    let data = dir.path().join(text(record, "data"));
    let mut command: Vec<Arg<'_>> = vec![&"externalize"];
    command.extend(inputs.iter().map(|i| i as Arg<'_>));
    command.extend([&"-o" as Arg<'_>, &output, &"--data", &data]);
    ok(&command);
    outputs_match(record, dir.path());
    read_back_as_recorded(record, &data);
    for program in items(record, "programs") {
        let path = dir.path().join(text(program, "file"));
        let file = tensorfile::OpenOptions::new().data(&data).open(&path).unwrap_or_else(|e| panic!("{case}: {e}"));
        tensors_as_recorded(case, &file, items(program, "tensors"));
    }
}
