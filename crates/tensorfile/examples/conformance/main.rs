//! The conformance corpus: for every format tensorfile reads, files that must read and files
//! that must be refused with an exact [`tensorfile::Rule`], generated from this code.
//!
//! `cargo run -p tensorfile --example conformance` (re)writes `tests/conformance/` (the files
//! and `MANIFEST.json`); `cargo run -p tensorfile --example conformance -- --check` generates
//! everything in memory and fails, naming the files, when what is on disk differs. `crates/tensorfile/tests/conformance.rs` reads the
//! manifest and asserts every case. The output is deterministic: no clocks, no random seeds,
//! no hash-map ordering, and no compressor whose output could change with its version (the
//! deflate and zstd streams are written by hand in `build/`).

mod build;
mod case;
mod formats;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use case::Case;

/// Files under the corpus root the generator does not own.
const KEPT: [&str; 2] = ["README.md", ".gitattributes"];

fn usage() -> ExitCode {
    eprintln!("usage: conformance [--check] [--root REPOSITORY]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut check = false;
    let mut root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--check" => check = true,
            "--root" => match args.next() {
                Some(r) => root = PathBuf::from(r),
                None => return usage(),
            },
            _ => return usage(),
        }
    }
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let files = match generate(&root) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::FAILURE;
        }
    };
    let dir = root.join("tests/conformance");
    let result = if check { compare(&dir, &files) } else { write(&dir, &files) };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Every file of the corpus, by path relative to `tests/conformance/`.
fn generate(root: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let fixtures = formats::Fixtures::new(root.join("tests/fixtures"));
    let cases: Vec<Case> = formats::all(&fixtures)?;
    let mut files = BTreeMap::new();
    for c in &cases {
        if files.insert(c.path(), c.bytes.clone()).is_some() {
            return Err(format!("two cases are named {}", c.path()));
        }
        for (path, (_, bytes)) in c.beside_paths().into_iter().zip(c.beside.iter().flatten()) {
            if files.insert(path.clone(), bytes.clone()).is_some() {
                return Err(format!("two files are named {path}"));
            }
        }
    }
    let mut sorted: Vec<&Case> = cases.iter().collect();
    sorted.sort_by_key(|c| c.path());
    files.insert("MANIFEST.json".to_string(), case::manifest(&sorted).into_bytes());
    Ok(files)
}

/// Paths of the files under `dir`, relative to it, with `/` separators.
fn on_disk(dir: &Path) -> Result<Vec<String>, String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), String> {
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        };
        for e in rd {
            let p = e.map_err(|e| format!("{}: {e}", dir.display()))?.path();
            if p.is_dir() {
                walk(base, &p, out)?;
            } else {
                let rel = p.strip_prefix(base).map_err(|e| e.to_string())?;
                let parts: Vec<String> =
                    rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
                out.push(parts.join("/"));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.retain(|p| !KEPT.contains(&p.as_str()));
    out.sort();
    Ok(out)
}

fn compare(dir: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), String> {
    let mut problems = Vec::new();
    for (path, bytes) in files {
        match std::fs::read(dir.join(path)) {
            Ok(b) if b == *bytes => {}
            Ok(_) => problems.push(format!("changed: {path}")),
            Err(_) => problems.push(format!("missing: {path}")),
        }
    }
    for path in on_disk(dir)? {
        if !files.contains_key(&path) {
            problems.push(format!("extra: {path}"));
        }
    }
    if problems.is_empty() {
        println!("conformance: {} files under {} are as generated", files.len(), dir.display());
        return Ok(());
    }
    for p in &problems {
        eprintln!("{p}");
    }
    Err(format!(
        "{} file(s) under {} differ from what the generator writes: run `cargo run -p tensorfile --example conformance` and review the diff",
        problems.len(),
        dir.display()
    ))
}

fn write(dir: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<(), String> {
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    for path in on_disk(dir)? {
        if !files.contains_key(&path) {
            let p = dir.join(&path);
            std::fs::remove_file(&p).map_err(|e| io(&p, e))?;
        }
    }
    for (path, bytes) in files {
        let p = dir.join(path);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        if std::fs::read(&p).ok().as_deref() != Some(bytes.as_slice()) {
            std::fs::write(&p, bytes).map_err(|e| io(&p, e))?;
        }
    }
    let total: usize = files.values().map(Vec::len).sum();
    println!("conformance: wrote {} files ({total} bytes) under {}", files.len(), dir.display());
    Ok(())
}
