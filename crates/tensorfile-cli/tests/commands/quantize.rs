//! `convert --quantize` against llama.cpp's `llama-quantize`: every run recorded in
//! `tests/fixtures/gguf-quantize/runs/` (made by the real tool, built from the
//! llama-cpp-python 0.3.36 sdist: every preset on a tiny llama, an MoE, Falcon, an 80-layer
//! model, a split model and a quantized one, the architectures whose rules differ (qwen2, olmo,
//! deci, jais2, RWKV, Mamba, gemma3n, DeepSeek), with and without importance matrices, with
//! every option) is run again with the same arguments, and each output file must have the recorded
//! size and sha256: byte for byte llama-quantize's file. A run llama-quantize refused must be
//! refused too, with the problem the tool names and nothing written. Where the tool writes a broken file, ours deviates on purpose: see
//! `broken_by_the_tool`.

use crate::common::*;

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

fn runs() -> Vec<(String, Json)> {
    let dir = fixtures().join("gguf-quantize").join("runs");
    let mut runs: Vec<(String, Json)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            (p.file_stem().unwrap().to_string_lossy().into_owned(), json_of(&std::fs::read_to_string(&p).unwrap()))
        })
        .collect();
    runs.sort_by(|a, b| a.0.cmp(&b.0));
    runs
}

/// Our command for llama-quantize's `arguments` (`[OPTIONS] IN OUT PRESET [THREADS]`), run in
/// the fixtures' folder as llama-quantize was (an importance matrix's path, as given, is a
/// key of the output), the output in `dir`.
fn command(arguments: &[Json], dir: &Path) -> (Vec<String>, PathBuf) {
    let words: Vec<&str> = arguments.iter().map(|a| a.as_str().unwrap()).collect();
    let mut options = Vec::new();
    let mut i = 0;
    let takes_value = [
        "--imatrix",
        "--include-weights",
        "--exclude-weights",
        "--output-tensor-type",
        "--token-embedding-type",
        "--tensor-type",
        "--override-kv",
        "--prune-layers",
    ];
    while i < words.len() && words[i].starts_with("--") {
        options.push(words[i].to_string());
        if takes_value.contains(&words[i]) {
            i += 1;
            options.push(words[i].to_string());
        }
        i += 1;
    }
    let (input, output, preset) = (words[i], words[i + 1], words[i + 2]);
    let output = dir.join(output);
    let mut args = vec![
        "convert".to_string(),
        input.to_string(),
        output.display().to_string(),
        "--quantize".to_string(),
        preset.to_string(),
    ];
    args.extend(options);
    (args, output)
}

/// Inputs of which llama-quantize writes broken files: a tensor with a dimension of 0 loses it
/// (the tool writes the dimensions `ggml_n_dims` counts), so it claims a row's bytes over the
/// next tensor's. Ours keeps the 0.
const ZERO_DIMS_DROPPED_BY_THE_TOOL: &[&str] = &["empty.gguf"];

/// Whether llama-quantize's file `want` is one it wrote broken, where ours deviates on
/// purpose: a dimension of 0 dropped (above), or tensors laid out at 32 bytes where the file's
/// `general.alignment` says more (llama.cpp refuses to load such a file; ours is laid out at
/// the alignment it states).
fn broken_by_the_tool(input: &str, want: &Json) -> bool {
    let alignment = want["general_alignment"].as_u64().unwrap();
    let data = want["data_offset"].as_u64().unwrap();
    let misaligned =
        want["tensors"].as_array().unwrap().iter().any(|t| (data + t[3].as_u64().unwrap()) % alignment != 0);
    ZERO_DIMS_DROPPED_BY_THE_TOOL.contains(&input) || misaligned
}

/// What is wrong with our output `file` of a run where llama-quantize wrote `want` broken: it
/// must differ from the tool's file, hold its tensors in its order, each byte for byte, and
/// verify. (The library's planner test checks every tensor info and key of these runs.)
fn deviation(name: &str, file: &Path, bytes: &[u8], want: &Json) -> Option<String> {
    if sha256(bytes) == want["sha256"].as_str().unwrap() {
        return Some(format!("{name}: now equal to llama-quantize's file, which it wrote broken"));
    }
    let verified = tensorfile(&[&"verify", &file]);
    if code(&verified) != 0 {
        return Some(format!("{name}: our file does not verify: {}", stderr(&verified).trim()));
    }
    let ours = tensorfile::TensorFile::open(file).unwrap();
    let names: Vec<&str> = ours.entries().iter().map(|e| e.info().name()).collect();
    let theirs: Vec<&str> = want["tensors"].as_array().unwrap().iter().map(|t| t[0].as_str().unwrap()).collect();
    if names != theirs {
        return Some(format!("{name}: tensors {names:?}, llama-quantize wrote {theirs:?}"));
    }
    for (tensor, sha) in theirs.iter().zip(want["tensor_sha256"].as_array().unwrap()) {
        let data = ours.read(tensor).unwrap();
        let stored = match data.part("blocks") {
            Some(blocks) => blocks.to_vec(),
            None => data.as_dense().unwrap().to_vec(),
        };
        // A tensor of no values has no bytes (the tool's `[256]` claims a row's, the next
        // tensor's: its recorded sha256 is of those).
        let empty = ours.entries().iter().any(|e| e.info().name() == *tensor && e.info().shape().contains(&0));
        if empty && !stored.is_empty() {
            return Some(format!("{name}: {tensor} has no values but {} bytes", stored.len()));
        }
        if !empty && sha256(&stored) != sha.as_str().unwrap() {
            return Some(format!("{name}: the bytes of {tensor} differ from llama-quantize's"));
        }
    }
    None
}

/// The tool's messages that ours words otherwise (lowercase): the tool's, then ours. A NaN
/// in the importance matrix is named by its entry; quantized data the tool finds invalid once
/// written is refused before, for its cause (rows that are not whole blocks of the type).
const REWORDED: &[(&str, &str)] = &[
    ("imatrix contains non-finite value nan", "a value that is not finite (nan)"),
    ("quantized data validation failed", "are not whole q4_k blocks"),
];

/// What is wrong with our refusal `o` of a run llama-quantize refused, in words: it must exit
/// 1 or 2 (README: a failure or a usage error; a panic is 101), say on stderr, as
/// `tensorfile: INPUT: ...` with no panic, the problem the tool's `error` says (its words, an
/// imatrix called an importance matrix, or ours in `REWORDED`) and the `tensor` it names, and
/// leave nothing in `folder`, the output's own (no file, no temporary file).
fn refusal_differs(name: &str, run: &Json, o: &std::process::Output, folder: &Path) -> Option<String> {
    let (err, input) = (stderr(o), run["input"].as_str().unwrap());
    let said = err.to_lowercase();
    let tool = run["error"].as_str().unwrap().to_lowercase();
    let tool = match run["tensor"].as_str() {
        Some(tensor) => tool.trim_end_matches(&format!(" for {tensor}")).to_string(),
        None => tool,
    };
    let problem = REWORDED.iter().find(|(theirs, _)| *theirs == tool).map(|(_, ours)| ours.to_string());
    let problem = problem.unwrap_or_else(|| tool.trim_end_matches('!').replace("imatrix", "importance matrix"));
    let left: Vec<_> = std::fs::read_dir(folder).unwrap().map(|e| e.unwrap().file_name()).collect();
    if ![1, 2].contains(&code(o)) {
        Some(format!("{name}: llama-quantize refused it, we exit {}: {}", code(o), err.trim()))
    } else if err.contains("panicked") || !err.starts_with(&format!("tensorfile: {input}: ")) {
        Some(format!("{name}: not an error naming {input}: {}", err.trim()))
    } else if !said.contains(&problem) {
        Some(format!("{name}: llama-quantize said {}, we say {}", run["error"], err.trim()))
    } else if run["tensor"].as_str().is_some_and(|tensor| !err.contains(&format!("tensor \"{tensor}\""))) {
        Some(format!("{name}: llama-quantize named {}, we say {}", run["tensor"], err.trim()))
    } else if !left.is_empty() {
        Some(format!("{name}: refused, but left {left:?} in the output's folder"))
    } else {
        None
    }
}

/// Runs `run` as llama-quantize ran it and checks every file it wrote, or its refusal; what
/// differs, in words.
fn check(name: &str, run: &Json, dir: &Path) -> Option<String> {
    let refused = run["exit_code"] != 0;
    // A refused run writes into a folder of its own, which must stay empty.
    let own = tempfile::tempdir_in(dir).unwrap();
    let (args, output) = command(run["arguments"].as_array().unwrap(), if refused { own.path() } else { dir });
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_tensorfile"))
        .args(&args)
        .current_dir(fixtures().join("gguf-quantize"))
        .output()
        .unwrap();
    if refused {
        return refusal_differs(name, run, &o, own.path());
    }
    if code(&o) != 0 {
        return Some(format!("{name}: {}", stderr(&o).trim()));
    }
    let expected: Vec<&Json> = match run.get("outputs") {
        Some(Json::Array(files)) => files.iter().collect(),
        _ => vec![&run["output"]],
    };
    let written: Vec<PathBuf> = if expected.len() == 1 {
        vec![output.clone()]
    } else {
        let prefix = output.display().to_string();
        let prefix = prefix.strip_suffix(".gguf").unwrap_or(&prefix).to_string();
        (1..=expected.len()).map(|i| PathBuf::from(format!("{prefix}-{i:05}-of-{:05}.gguf", expected.len()))).collect()
    };
    let mut differs = None;
    for (file, want) in written.iter().zip(&expected) {
        let bytes = std::fs::read(file).unwrap_or_default();
        let input = run["input"].as_str().unwrap();
        if differs.is_none() && broken_by_the_tool(input, want) {
            differs = deviation(name, file, &bytes, want);
        } else if differs.is_none() && sha256(&bytes) != want["sha256"].as_str().unwrap() {
            differs = Some(format!(
                "{name}: {} differs from llama-quantize's ({} bytes, it wrote {})",
                file.display(),
                bytes.len(),
                want["size"]
            ));
        }
        let _ = std::fs::remove_file(file);
    }
    differs
}

#[test]
fn every_recorded_llama_quantize_run_is_made_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let runs = runs();
    assert_eq!(runs.len(), 353, "runs recorded in tests/fixtures/gguf-quantize/runs/");
    let refused = runs.iter().filter(|(_, run)| run["exit_code"] != 0).count();
    assert_eq!(refused, 26, "runs llama-quantize refused");
    // Two at a time: each run is its own process.
    let (even, odd): (Vec<_>, Vec<_>) = runs.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let failures: Vec<String> = std::thread::scope(|s| {
        let halves = [even, odd].map(|half| {
            let dir = dir.path();
            s.spawn(move || half.into_iter().filter_map(|(_, (name, run))| check(name, run, dir)).collect::<Vec<_>>())
        });
        halves.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{} of the recorded runs differ:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn threads_bound_the_work_and_not_the_bytes() {
    // `--threads 1` and `--threads 2` (before or after the command) write the same file; 0
    // threads is a usage error.
    let dir = tempfile::tempdir().unwrap();
    let tiny = fixtures().join("gguf-quantize").join("tiny.gguf");
    let (one, two) = (dir.path().join("one.gguf"), dir.path().join("two.gguf"));
    ok(&[&"--threads", &"1", &"convert", &tiny, &one, &"--quantize", &"Q4_K_M"]);
    ok(&[&"convert", &tiny, &two, &"--quantize", &"Q4_K_M", &"--threads", &"2"]);
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&two).unwrap());
    let refused = tensorfile(&[&"--threads", &"0", &"formats"]);
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
}
