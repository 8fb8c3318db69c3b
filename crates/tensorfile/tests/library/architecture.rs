//! The library's layers, read from its source: every `crate::` path of every module outside
//! test code, resolved to the top-level module it names, must point down or sideways (never
//! up), and no two top-level modules may name each other, directly or through others. The
//! Python binding's modules form no circle either. docs/ARCHITECTURE.md draws these layers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first, and the top-level modules of each. A module names only modules of
/// its own layer or below (and, within a layer, no circle).
const LAYERS: &[(&str, &[&str])] = &[
    // Errors, and the leaf helpers they may use (nothing of the library beneath them).
    ("errors", &["error", "limits", "units"]),
    // Bytes: where they come from and where they go.
    ("bytes", &["checked", "cursor", "sizes", "source", "output", "ahead", "swap"]),
    // The format-neutral model, and the vocabulary formats describe their files in.
    ("model", &["model", "describe"]),
    // Containers formats are built of (flatbuffers, pickles, zip archives).
    ("containers", &["flatbuf", "pickle", "zip"]),
    // One unit per format, and their registry.
    ("formats", &["formats"]),
    // The opened file and sets of files, and what a file that does not open really is.
    ("file", &["file", "diagnose"]),
    // What is done with opened files.
    (
        "operations",
        &[
            "numbers",
            "stats",
            "compare",
            "show",
            "facts",
            "listing",
            "parameters",
            "export",
            "convert",
            "shards",
            "update",
            "meta",
            "report",
            "dump",
            "executorch",
            "stage",
        ],
    ),
    // Toolchains built on the operations: llama.cpp's (llama-quantize, llama-gguf-split),
    // the only code beside the GGUF unit that knows GGUF.
    ("toolchains", &["llama"]),
    // The jobs the shells build: they decide which operation or toolchain does the work.
    ("jobs", &["convert_job"]),
    // What the library shows users of the layers beneath, gathered by subject.
    ("facades", &["io", "inspect", "threads"]),
];

/// Modules that only this workspace's tests and fuzz targets see (feature `internals`): they
/// may name any layer.
const TEST_ONLY: &[&str] = &["fuzzing"];

fn src_dir(krate: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join(krate).join("src")
}

/// The `.rs` files under `dir`, test code left out (`tests.rs`, anything under a `tests`
/// folder).
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "tests" {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") && name != "tests.rs" {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The code of a file without comments, string literals' contents, and inline test modules
/// (`#[cfg(test)]` before a `mod ... {`).
fn code_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed == "#[cfg(test)]"
            && lines.peek().is_some_and(|l| l.trim_start().starts_with("mod ") && l.contains('{'))
        {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    strip_comments_and_strings(&out)
}

fn strip_comments_and_strings(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' && !(i > 0 && b[i - 1] == b'\'') {
            // A string literal (raw strings in this code base hold no `crate::`).
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.extend_from_slice(b"\"\"");
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The top-level module a file belongs to (`formats` for `src/formats/gguf/read.rs`); `None`
/// for the crate root.
fn top_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_string_lossy().into_owned();
    match first.strip_suffix(".rs") {
        Some("lib" | "main") => None,
        Some(stem) => Some(stem.to_string()),
        None => Some(first),
    }
}

/// The first segments of every path a `use crate::{...}` group or a `crate::x` path names.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `$crate::` or another word ending in `crate`
        }
        if let Some(group) = rest.strip_prefix('{') {
            // The names at the group's first level: `crate::{a, b::{c, d}}` names a and b.
            let mut depth = 0;
            let mut current = String::new();
            let mut at_start = true;
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        at_start = true;
                        if !current.is_empty() {
                            names.push(std::mem::take(&mut current));
                        }
                    }
                    c if depth == 0 && at_start && (c.is_alphanumeric() || c == '_') => current.push(c),
                    c if depth == 0 && !c.is_whitespace() => {
                        at_start = false;
                    }
                    _ => {}
                }
            }
            if !current.is_empty() {
                names.push(current);
            }
        } else {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            names.push(name);
        }
    }
    names
}

/// What each name the crate root declares or re-exports belongs to: its modules, and the items
/// its `pub use` lines bring up from them (`TensorFile` is `file`'s).
fn root_names(src: &Path) -> BTreeMap<String, String> {
    let lib = code_of(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut names = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let module = name.strip_suffix(".rs").unwrap_or(&name).to_string();
        if module != "lib" {
            names.insert(module.clone(), module);
        }
    }
    for statement in lib.split(';') {
        let statement = statement.trim();
        let Some(path) = statement.strip_prefix("pub use ") else { continue };
        let path = path.trim_start_matches("crate::");
        let Some((module, items)) = path.split_once("::") else { continue };
        let items = items.trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let item = item.trim().rsplit("::").next().unwrap().split(" as ").last().unwrap().trim();
            if !item.is_empty() && item != "self" {
                names.insert(item.to_string(), module.to_string());
            }
        }
    }
    names
}

/// Which top-level modules each top-level module names, with a file that does it.
fn edges(src: &Path) -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let names = root_names(src);
    let mut edges: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for file in sources(src) {
        let Some(from) = top_of(src, &file) else { continue };
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        let targets = edges.entry(from.clone()).or_default();
        for name in crate_paths(&code) {
            let Some(to) = names.get(&name) else { continue };
            if *to != from {
                targets.entry(to.clone()).or_insert_with(|| file.clone());
            }
        }
    }
    edges
}

/// The circles of a graph (its strongly connected parts of more than one node).
fn circles(edges: &BTreeMap<String, BTreeMap<String, PathBuf>>) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = edges.keys().chain(edges.values().flat_map(|t| t.keys())).collect();
    let reaches = |from: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(n) = stack.pop() {
            for next in edges.get(&n).into_iter().flat_map(|t| t.keys()) {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> = nodes.iter().map(|n| (*n, reaches(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for n in &nodes {
        if done.contains(*n) {
            continue;
        }
        let circle: Vec<String> =
            nodes.iter().filter(|m| reach[*n].contains(**m) && reach[**m].contains(*n)).map(|m| (*m).clone()).collect();
        if circle.len() > 1 {
            done.extend(circle.iter().cloned());
            out.push(circle);
        }
    }
    out
}

fn describe_circle(edges: &BTreeMap<String, BTreeMap<String, PathBuf>>, circle: &[String], src: &Path) -> String {
    let mut lines = vec![format!("circle: {}", circle.join(", "))];
    for a in circle {
        for (b, file) in edges.get(a).into_iter().flatten() {
            if circle.contains(b) {
                lines.push(format!("  {a} -> {b} ({})", file.strip_prefix(src).unwrap().display()));
            }
        }
    }
    lines.join("\n")
}

#[test]
fn every_arrow_of_the_library_points_down() {
    let src = src_dir("tensorfile");
    let rank: BTreeMap<&str, usize> =
        LAYERS.iter().enumerate().flat_map(|(i, (_, modules))| modules.iter().map(move |m| (*m, i))).collect();
    let edges = edges(&src);
    let mut problems = Vec::new();
    for (from, targets) in &edges {
        if TEST_ONLY.contains(&from.as_str()) {
            continue;
        }
        let Some(&from_rank) = rank.get(from.as_str()) else {
            problems.push(format!("{from}: a top-level module in no layer (add it to LAYERS and ARCHITECTURE.md)"));
            continue;
        };
        for (to, file) in targets {
            if TEST_ONLY.contains(&to.as_str()) {
                problems.push(format!("{from} names {to}, which only tests see ({})", file.display()));
                continue;
            }
            let Some(&to_rank) = rank.get(to.as_str()) else { continue };
            if to_rank > from_rank {
                problems.push(format!(
                    "{from} ({}) names {to} ({}), a layer above it: {}",
                    LAYERS[from_rank].0,
                    LAYERS[to_rank].0,
                    file.strip_prefix(&src).unwrap().display()
                ));
            }
        }
    }
    for circle in circles(&edges) {
        problems.push(describe_circle(&edges, &circle, &src));
    }
    assert!(problems.is_empty(), "the library's arrows:\n{}", problems.join("\n"));
}

#[test]
fn the_python_bindings_modules_form_no_circle() {
    let src = src_dir("tensorfile-py");
    let edges = edges(&src);
    let found: Vec<String> = circles(&edges).iter().map(|c| describe_circle(&edges, c, &src)).collect();
    assert!(found.is_empty(), "the binding's modules:\n{}", found.join("\n"));
}

/// The reader of paths above must see what the compiler sees: a hand-made file with each kind
/// of path, comment and test module.
/// Dead code is not hidden: no `allow(dead_code)` in the library without its reason (an item
/// only the tests use is compiled for them alone: `#[cfg(any(test, feature = "internals"))]`).
#[test]
fn no_dead_code_is_allowed_without_a_reason() {
    let src = src_dir("tensorfile");
    let mut unexplained = Vec::new();
    for file in sources(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (k, line) in text.lines().enumerate() {
            if line.contains("allow(dead_code") && !line.contains("reason =") {
                unexplained.push(format!("{}:{}: {}", file.display(), k + 1, line.trim()));
            }
        }
    }
    assert!(unexplained.is_empty(), "allow(dead_code) without a reason:\n{}", unexplained.join("\n"));
}

/// `internals` is for tests alone: no package of the workspace enables it through a normal
/// dependency (which would put it into every workspace build of the shells), only through
/// dev-dependencies.
#[test]
fn internals_come_only_through_dev_dependencies() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members: Vec<&str> = workspace
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("the workspace lists its members")
        .split('"')
        .skip(1)
        .step_by(2)
        .collect();
    assert!(members.len() >= 3, "{members:?}");
    for member in members {
        let manifest = root.join(member).join("Cargo.toml");
        let mut section = String::new();
        for line in std::fs::read_to_string(&manifest).unwrap().lines() {
            let line = line.trim();
            if line.starts_with('[') {
                section = line.to_string();
            } else if line.contains("\"internals\"") && !line.starts_with('#') {
                assert!(
                    section.contains("dev-dependencies") || section == "[features]",
                    "{}: `internals` enabled under {section}: only dev-dependencies may",
                    manifest.display()
                );
            }
        }
    }
}

#[test]
fn paths_are_read_from_code_only() {
    let text = r#"
use crate::error::Result;
use crate::{model::{DType, Kind}, source};
// use crate::report::Section;
/// [`crate::file::TensorFile`]
fn f() { let _ = crate::limits::MAX; let s = "crate::update"; }
#[cfg(test)]
mod tests {
    use crate::convert;
}
"#;
    let names = crate_paths(&code_of(text));
    assert_eq!(names, ["error", "model", "source", "limits"]);
}

/// A circle is found, and its members named.
#[test]
fn a_circle_is_found() {
    let mut edges: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        edges.entry(a.into()).or_default().insert(b.into(), PathBuf::from(format!("{a}.rs")));
    }
    assert_eq!(circles(&edges), vec![vec!["a".to_string(), "b".into(), "c".into()]]);
}

/// The paths a shell's code names in the library: `tensorfile::a::b...`, their first two
/// segments (`use tensorfile::{a, b::c}` groups too).
fn library_paths(code: &str) -> Vec<(String, Option<String>)> {
    let mut found = Vec::new();
    let word = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut rest = code;
    while let Some(at) = rest.find("tensorfile::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "tensorfile::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let heads: Vec<String> = match rest.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(group.len())]
                .split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect(),
            None => vec![rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect()],
        };
        for head in heads {
            let mut parts = head.split("::");
            let first = word(parts.next().unwrap_or(""));
            let second = parts.next().map(word).filter(|s| !s.is_empty());
            found.push((first, second));
        }
    }
    found
}

/// The command line and the Python binding reach the library through its curated API only:
/// its public modules and root re-exports, and of `formats` the registry, never a format's
/// own module (what a workspace build with the `internals` feature would let them name).
#[test]
fn the_shells_use_only_the_curated_api() {
    let lib = code_of(&std::fs::read_to_string(src_dir("tensorfile").join("lib.rs")).unwrap());
    let public: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod ").map(|m| m.trim_end_matches(['{', ';']).trim().to_string()))
        // Not the macro's template, nor what only the workspace's own tests see.
        .filter(|m| m.chars().all(|c| c.is_alphanumeric() || c == '_') && m != "internals")
        .collect();
    assert!(public.len() <= 10, "at most 10 public modules at the root: {public:?}");
    // What the root re-exports (`update` the function, though a module is named so too).
    let reexported: BTreeSet<String> = lib
        .split(';')
        .filter_map(|statement| statement.trim().strip_prefix("pub use "))
        .filter_map(|path| path.trim_start_matches("crate::").split_once("::").map(|(_, items)| items.to_string()))
        .flat_map(|items| {
            let items = items.trim_start_matches('{').trim_end_matches('}').to_string();
            items
                .split(',')
                .map(|item| item.trim().rsplit("::").next().unwrap().split(" as ").last().unwrap().trim().to_string())
                .filter(|item| !item.is_empty() && item != "self")
                .collect::<Vec<_>>()
        })
        .collect();
    let units: BTreeSet<String> = std::fs::read_dir(src_dir("tensorfile").join("formats"))
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            e.file_type().unwrap().is_dir().then(|| e.file_name().to_string_lossy().into_owned())
        })
        .collect();
    let mut problems = Vec::new();
    for krate in ["tensorfile-cli", "tensorfile-py"] {
        let src = src_dir(krate);
        for file in sources(&src) {
            let code = code_of(&std::fs::read_to_string(&file).unwrap());
            for (first, second) in library_paths(&code) {
                let allowed = public.contains(&first) || reexported.contains(&first);
                let into_a_unit = first == "formats" && second.as_ref().is_some_and(|s| units.contains(s));
                if !allowed || into_a_unit {
                    let path = [Some(first), second].into_iter().flatten().collect::<Vec<_>>().join("::");
                    problems.push(format!(
                        "{krate}/src/{}: tensorfile::{path}",
                        file.strip_prefix(&src).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "beyond the curated API:\n{}", problems.join("\n"));
}

/// A file's module path (`["convert", "shards"]` for `src/convert/shards.rs`, `[]` for the
/// root).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut segments: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    if matches!(segments.last().map(String::as_str), Some("mod" | "lib")) {
        segments.pop();
    }
    segments
}

/// Every path a piece of code names from `prefix` (`crate` or `super`), each as its segments
/// after the prefix, groups expanded: `crate::a::{b, c::{d, self}}` names `a::b`, `a::c::d`, `a::c`.
fn full_paths(code: &str, prefix: &str) -> Vec<Vec<String>> {
    fn tree(text: &[char], at: &mut usize, base: &[String], out: &mut Vec<Vec<String>>) {
        let mut path = base.to_vec();
        loop {
            while text.get(*at).is_some_and(|c| c.is_whitespace()) {
                *at += 1;
            }
            if text.get(*at) == Some(&'{') {
                *at += 1;
                loop {
                    tree(text, at, &path, out);
                    while text.get(*at).is_some_and(|c| c.is_whitespace()) {
                        *at += 1;
                    }
                    match text.get(*at) {
                        Some(',') => *at += 1,
                        Some('}') => {
                            *at += 1;
                            return;
                        }
                        _ => return,
                    }
                    if text.get(*at..).is_some_and(|r| r.iter().take_while(|c| c.is_whitespace()).count() < r.len())
                        && text[*at..].iter().find(|c| !c.is_whitespace()) == Some(&'}')
                    {
                        // A trailing comma.
                        while text[*at] != '}' {
                            *at += 1;
                        }
                        *at += 1;
                        return;
                    }
                }
            }
            let word: String = text[*at..].iter().take_while(|c| c.is_alphanumeric() || **c == '_').collect();
            *at += word.chars().count();
            if word.is_empty() {
                break;
            }
            if word != "self" {
                path.push(word);
            }
            if text.get(*at..*at + 2) == Some(&[':', ':']) {
                *at += 2;
            } else {
                break;
            }
        }
        out.push(path);
    }
    let chars: Vec<char> = code.chars().collect();
    let needle: Vec<char> = format!("{prefix}::").chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + needle.len() <= chars.len() {
        let before = i.checked_sub(1).map(|k| chars[k]);
        if chars[i..i + needle.len()] == needle[..]
            && !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$')
        {
            let mut at = i + needle.len();
            tree(&chars, &mut at, &[], &mut out);
            i = at.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Which files each file of the library names (a path resolved to the file of its longest
/// module prefix), leaving out a module's own ancestors and descendants: a parent declares and
/// re-exports its children, a child uses what its parent shares; the arrows that can make a
/// circle are between files neither of which holds the other.
fn file_edges(src: &Path) -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let files = sources(src);
    let by_module: BTreeMap<Vec<String>, String> =
        files.iter().map(|f| (module_of(src, f), f.strip_prefix(src).unwrap().display().to_string())).collect();
    let mut edges: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for file in &files {
        let module = module_of(src, file);
        let from = by_module[&module].clone();
        let code = code_of(&std::fs::read_to_string(file).unwrap());
        let parent: Vec<String> = module[..module.len().saturating_sub(1)].to_vec();
        let named = full_paths(&code, "crate")
            .into_iter()
            .chain(full_paths(&code, "super").into_iter().map(|p| parent.iter().cloned().chain(p).collect()));
        for path in named {
            let Some(to_module) = (0..=path.len()).rev().map(|n| &path[..n]).find(|m| by_module.contains_key(*m))
            else {
                continue;
            };
            let related = to_module.starts_with(&module) || module.starts_with(to_module);
            if !related {
                edges
                    .entry(from.clone())
                    .or_default()
                    .entry(by_module[to_module].clone())
                    .or_insert_with(|| file.clone());
            }
        }
    }
    edges
}

/// No two files of the library name each other, directly or through others (a module's own
/// parent and children aside): each file can be read knowing only those below it.
#[test]
fn no_files_of_the_library_form_a_circle() {
    let src = src_dir("tensorfile");
    let edges = file_edges(&src);
    let found: Vec<String> = circles(&edges).iter().map(|c| describe_circle(&edges, c, &src)).collect();
    assert!(found.is_empty(), "files naming each other:\n{}", found.join("\n"));
}

#[test]
fn paths_expand_to_the_files_they_name() {
    let code =
        "use crate::a::{b, c::{d, self}, e::F};\nlet x = super::g::h(); let y = $crate::no; fn f(s: my_crate::z) {}";
    let paths = |prefix| full_paths(code, prefix).into_iter().map(|p| p.join("::")).collect::<Vec<_>>();
    assert_eq!(paths("crate"), ["a::b", "a::c::d", "a::c", "a::e::F"]);
    assert_eq!(paths("super"), ["g::h"]);
}

/// Files outside the GGUF unit and llama.cpp's toolchain that may name GGUF, and why.
const NAMES_GGUF: &[(&str, &str)] = &[
    ("formats/registry.rs", "the registry lists every unit"),
    ("file/open.rs", "a part of a split model, opened by path, opens the whole model"),
    ("file/sets/split_gguf.rs", "the parts of a split model read as one file, as llama.cpp's loader reads them"),
    ("fuzzing.rs", "the split model's fuzz target (tests only)"),
];

/// GGUF is special only in its unit (`formats/gguf/`) and in llama.cpp's toolchain (`llama/`):
/// no other code names `Format::Gguf` or the unit, but the few files [`NAMES_GGUF`] allows.
#[test]
fn gguf_is_named_only_by_its_unit_and_llama() {
    let src = src_dir("tensorfile");
    let mut problems = Vec::new();
    for file in sources(&src) {
        let rel = file.strip_prefix(&src).unwrap().display().to_string();
        if rel.starts_with("formats/gguf/") || rel.starts_with("llama/") || NAMES_GGUF.iter().any(|(f, _)| *f == rel) {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&file).unwrap());
        let named = full_paths(&code, "crate").into_iter().any(|p| p.starts_with(&["formats".into(), "gguf".into()]));
        if named || code.contains("Format::Gguf") || code.contains("gguf::") {
            problems.push(rel);
        }
    }
    assert!(problems.is_empty(), "GGUF named outside its unit and crate::llama:\n{}", problems.join("\n"));
    for (file, _) in NAMES_GGUF {
        assert!(src.join(file).exists(), "{file}, allowed to name GGUF, is gone: take it off NAMES_GGUF");
    }
}
