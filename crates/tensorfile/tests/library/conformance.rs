//! The conformance corpus (`tests/conformance/`, written by `cargo run -p tensorfile --example conformance`):
//! every valid file opens, verifies clean and reads; every invalid file is refused with the
//! exact rule its manifest names, at the stage it names.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tensorfile::llama::Imatrix;
use tensorfile::source::Bytes;
use tensorfile::{Format, Rule, TensorFile};

/// The folders of the corpus: one per format, `gguf-split` (split GGUF models, each case a part
/// opened by its path), `pickle` (pickles inside `.pt` files) and `imatrix` (importance
/// matrices).
const FOLDERS: [&str; 13] =
    ["zt", "zt2", "zt1", "safetensors", "gguf", "gguf-split", "onnx", "pte", "ptd", "pt", "pt2", "pickle", "imatrix"];

/// The families of attacks the corpus must cover, at least one case each.
const REQUIRED_FAMILIES: [&str; 20] = [
    "valid",
    "truncation",
    "past-end",
    "overflow",
    "overlap",
    "misaligned",
    "duplicate-name",
    "bad-utf8",
    "deep-nesting",
    "malformed-cbor",
    "malformed-flatbuffer",
    "out-of-range-index",
    "zip-bomb",
    "zstd-bomb",
    "path-escape",
    "forbidden-global",
    "memo-explosion",
    "malformed-pickle",
    "malformed-zip",
    "checksum",
];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance")
}

/// What reads a case.
enum Subject {
    Format(Format),
    /// An importance matrix: read at `open`, its weights made at `verify`.
    Imatrix,
}

struct Case {
    file: String,
    subject: Subject,
    family: String,
    /// `None` for a valid file.
    expect: Option<(Rule, String)>,
    /// For a file opened by its path: the files beside it (the other parts of its split
    /// model); `None` for a file opened from its bytes.
    beside: Option<Vec<String>>,
}

fn text<'a>(v: &'a Value, key: &str, what: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("{what}: no string {key:?}"))
}

fn text_of(v: &Value, what: &str) -> String {
    v.as_str().unwrap_or_else(|| panic!("{what}: a file beside it is not a string")).to_string()
}

fn manifest() -> (Vec<Case>, BTreeSet<String>) {
    let path = corpus().join("MANIFEST.json");
    let raw = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("{}: {e} (generate it: cargo run -p tensorfile --example conformance)", path.display())
    });
    let m: Value = serde_json::from_str(&raw).expect("MANIFEST.json is JSON");
    let families: BTreeSet<String> =
        m["families"].as_array().expect("families").iter().map(|f| text(f, "id", "family").to_string()).collect();
    let cases = m["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let file = text(c, "file", "case").to_string();
            let subject = match text(c, "format", &file) {
                "imatrix" => Subject::Imatrix,
                name => Subject::Format(Format::from_name(name).unwrap_or_else(|| panic!("{file}: unknown format"))),
            };
            let stage = text(c, "stage", &file).to_string();
            let expect = match text(c, "expect", &file) {
                "valid" => None,
                id => Some((Rule::from_id(id).unwrap_or_else(|| panic!("{file}: unknown rule {id:?}")), stage)),
            };
            let family = text(c, "family", &file).to_string();
            let beside = c["beside"].as_array().map(|b| b.iter().map(|p| text_of(p, &file)).collect());
            Case { file, subject, family, expect, beside }
        })
        .collect();
    (cases, families)
}

/// What happens to one case (the error that refuses it), or why that is not what the
/// manifest says.
fn check(c: &Case) -> Result<String, String> {
    let data = std::fs::read(corpus().join(&c.file)).map_err(|e| format!("missing: {e}"))?;
    // Whatever the format says, no file may panic any reader.
    tensorfile::internals::exercise(&data, None);
    let rule_of = |e: &tensorfile::Error| e.rule().map_or_else(|| format!("no rule ({e})"), |r| r.id().to_string());
    let format = match c.subject {
        Subject::Format(f) => f,
        Subject::Imatrix => return check_imatrix(c, &data),
    };
    let opened = match &c.beside {
        None => tensorfile::OpenOptions::new().format(format).open_bytes(Bytes::from_vec(data.clone())),
        Some(_) => TensorFile::open(corpus().join(&c.file)),
    };
    match &c.expect {
        None => {
            let f = opened.map_err(|e| format!("valid file refused: {} [{}]", e, rule_of(&e)))?;
            if let Some(p) = f.verify().first() {
                return Err(format!("valid file fails verify: {p} [{}]", rule_of(p)));
            }
            for i in 0..f.entries().len() {
                f.read_verified(i).map_err(|e| format!("valid file: entry {i} does not read: {e}"))?;
            }
            let detected = Format::detect(&data).map_err(|e| format!("valid file not recognised: {e}"))?;
            if detected != format {
                return Err(format!("valid file recognised as {detected}, not {format}"));
            }
            Ok(format!("{} entries read", f.entries().len()))
        }
        Some((rule, stage)) => {
            let error = match (stage.as_str(), opened) {
                ("open", Ok(_)) => return Err("accepted: expected to be refused at open".into()),
                ("open", Err(e)) => e,
                ("verify", Err(e)) => {
                    return Err(format!("refused at open ({}), expected at verify: {e}", rule_of(&e)));
                }
                ("verify", Ok(f)) => match f.verify().into_iter().next() {
                    None => return Err("accepted: verify found nothing".into()),
                    Some(e) => e,
                },
                (other, _) => return Err(format!("unknown stage {other:?}")),
            };
            let got = rule_of(&error);
            if got == rule.id() {
                Ok(error.to_string())
            } else {
                Err(format!("refused for {got}, expected {}: {error}", rule.id()))
            }
        }
    }
}

/// An importance matrix case: read (`open`), then its weights made (`verify`).
fn check_imatrix(c: &Case, data: &[u8]) -> Result<String, String> {
    let rule_of = |e: &tensorfile::Error| e.rule().map_or_else(|| format!("no rule ({e})"), |r| r.id().to_string());
    let read = Imatrix::from_bytes(data);
    let weights = read.as_ref().ok().map(Imatrix::weights);
    let error = match (&c.expect, read, weights) {
        (None, Ok(m), Some(Ok(w))) => return Ok(format!("{} entries, {} weighed", m.entries().len(), w.len())),
        (None, Err(e), _) | (None, Ok(_), Some(Err(e))) => {
            return Err(format!("valid file refused: {e} [{}]", rule_of(&e)));
        }
        (Some((_, stage)), Err(e), _) if stage == "open" => e,
        (Some((_, stage)), Ok(_), Some(Err(e))) if stage == "verify" => e,
        (Some((_, stage)), Err(e), _) => return Err(format!("refused when read ({e}), expected at {stage}")),
        (Some((_, stage)), Ok(_), _) => return Err(format!("accepted: expected to be refused at {stage}")),
        (None, Ok(_), None) => unreachable!("weights are made of what was read"),
    };
    let (rule, _) = c.expect.as_ref().unwrap();
    let got = rule_of(&error);
    if got == rule.id() {
        Ok(error.to_string())
    } else {
        Err(format!("refused for {got}, expected {}: {error}", rule.id()))
    }
}

#[test]
fn every_case_gets_its_outcome() {
    let (cases, _) = manifest();
    let mut failures = Vec::new();
    for c in &cases {
        // Shown with `--nocapture`: what refuses each file.
        match check(c) {
            Ok(outcome) => println!("{}: {outcome}", c.file),
            Err(why) => failures.push(format!("{}: {why}", c.file)),
        }
    }
    assert!(failures.is_empty(), "{} of {} cases fail:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
fn the_manifest_covers_every_folder_and_family() {
    let (cases, declared) = manifest();
    for folder in FOLDERS {
        for kind in ["valid", "invalid"] {
            let prefix = format!("{kind}/{folder}/");
            assert!(cases.iter().any(|c| c.file.starts_with(&prefix)), "no {kind} case in {folder}/");
        }
    }
    for &format in Format::ALL {
        let of_format = |c: &&Case| matches!(c.subject, Subject::Format(f) if f == format);
        assert!(cases.iter().any(|c| of_format(&c)), "no case of format {format}");
    }
    let used: BTreeSet<&str> = cases.iter().map(|c| c.family.as_str()).collect();
    for f in &used {
        assert!(declared.contains(*f), "family {f} is not declared in the manifest");
    }
    for f in REQUIRED_FAMILIES {
        assert!(used.contains(f), "no case of the family {f}");
    }
    // Every file on disk is a case (the generator's --check also catches strays).
    let mut on_disk = Vec::new();
    for kind in ["valid", "invalid"] {
        for folder in std::fs::read_dir(corpus().join(kind)).expect("corpus folder").flatten() {
            for file in std::fs::read_dir(folder.path()).expect("folder").flatten() {
                let rel = file.path().strip_prefix(corpus()).expect("inside").to_string_lossy().replace('\\', "/");
                on_disk.push(rel);
            }
        }
    }
    let beside = cases.iter().flat_map(|c| c.beside.iter().flatten().map(String::as_str));
    let listed: BTreeSet<&str> = cases.iter().map(|c| c.file.as_str()).chain(beside).collect();
    for f in &on_disk {
        assert!(listed.contains(f.as_str()), "{f} is not in the manifest");
    }
    assert!(cases.iter().all(|c| c.file.starts_with("valid/") == c.expect.is_none()), "valid/ holds only valid files");
}
