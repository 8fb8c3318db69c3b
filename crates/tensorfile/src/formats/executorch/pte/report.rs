//! What a report shows of a program: where its bytes go (program, delegate payloads, named
//! data, constants, mutable state, padding; by method), its methods, the operators each runs
//! and where (in a delegate, or in the program's own kernels: fallen back), its delegates.

use std::collections::BTreeMap;

use serde_json::{Value as Json, json};

use super::program::{Program, ProgramTensor};
use crate::describe::{Bar, Section};
use crate::model::Entry;

/// Where the kernel calls of a program run: its own kernels, not a delegate.
const PROGRAM_KERNELS: &str = "program kernels (not delegated)";

/// The report's sections of a program (of a file of `file_len` bytes, whose entries are
/// `entries`, each of the program tensor of the same index in `tensors`), from its
/// description (`summary::describe`'s JSON).
pub fn sections(
    program: &Program,
    file_len: u64,
    tensors: &[ProgramTensor],
    entries: &[Entry],
    description: &Json,
) -> Vec<Section> {
    let mut out = Vec::new();
    if let Some(bars) = program_bytes(program, file_len) {
        out.push(Section::Bars { title: "Where the bytes go: program".into(), unit: "bytes", items: bars });
    }
    if let Some(e) = description["error"].as_str() {
        out.push(Section::Pairs { title: "Program".into(), rows: vec![("error".into(), e.into())] });
        return out;
    }
    let methods = description["methods"].as_array().cloned().unwrap_or_default();
    out.push(by_method(tensors, entries, &methods));
    out.push(methods_table(&methods));
    out.push(operators_table(&methods));
    let delegates = delegates_table(&methods);
    if let Section::Table { rows, .. } = &delegates {
        if !rows.is_empty() {
            out.push(delegates);
        }
    }
    out
}

/// Bytes of the file (`file_len` of them) by what holds them; `None` when the program's tables
/// do not decode.
fn program_bytes(p: &Program, file_len: u64) -> Option<Vec<Bar>> {
    let root = &p.root;
    // Each segment's owner, by index.
    let mut owner: BTreeMap<u64, (&'static str, String)> = BTreeMap::new();
    for plan in root.tables("execution_plan").ok()? {
        let method = plan.str("name").ok().flatten().unwrap_or("").to_string();
        for (i, d) in plan.tables("delegates").ok()?.iter().enumerate() {
            let id = d.str("id").ok().flatten().unwrap_or("?");
            if let Some(processed) = d.table("processed").ok().flatten() {
                if processed.int("location").ok()? == 1 {
                    let index = processed.uint("index").ok()?;
                    owner.insert(index, ("delegate payloads", format!("{method} #{i} {id}")));
                }
            }
        }
    }
    if let Some(cs) = root.table("constant_segment").ok().flatten() {
        owner.entry(cs.uint("segment_index").ok()?).or_insert(("constants", "constant segment".into()));
    }
    for (k, m) in root.tables("mutable_data_segments").ok()?.iter().enumerate() {
        owner.entry(m.uint("segment_index").ok()?).or_insert(("mutable state", format!("list {k}")));
    }
    for nd in root.tables("named_data").ok()? {
        let key = nd.str("key").ok().flatten().unwrap_or("?").to_string();
        owner.entry(nd.uint("segment_index").ok()?).or_insert(("named data", key));
    }
    let mut groups: BTreeMap<&str, Vec<Bar>> = BTreeMap::new();
    let mut used = p.layout.program_size;
    for (i, &(_, size)) in p.segments.iter().enumerate() {
        let (group, label) = owner.get(&(i as u64)).cloned().unwrap_or(("other segments", format!("segment {i}")));
        groups.entry(group).or_default().push(Bar::new(label, size));
        used = used.saturating_add(size);
    }
    let mut bars = vec![Bar::new("program (flatbuffer)", p.layout.program_size)];
    for (group, children) in groups {
        let total = Bar::total(&children);
        let children = if children.len() > 1 { Bar::largest(children) } else { Vec::new() };
        bars.push(Bar { label: group.to_string(), value: total, children });
    }
    // What no segment holds: alignment between segments and after the program.
    bars.push(Bar::new("padding", file_len.saturating_sub(used)));
    Bar::sort(&mut bars);
    Some(bars)
}

/// Bytes each method owns: its delegates' payloads and the tensors it uses first; named
/// data, which delegates share by key, apart.
fn by_method(tensors: &[ProgramTensor], entries: &[Entry], methods: &[Json]) -> Section {
    let mut owned: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for m in methods {
        let name = m["name"].as_str().unwrap_or("?").to_string();
        let slot = owned.entry(name).or_default();
        for (i, d) in m["delegates"].as_array().into_iter().flatten().enumerate() {
            let label = format!("delegate #{i} {}", d["id"].as_str().unwrap_or("?"));
            *slot.entry(label).or_default() += d["bytes"].as_u64().unwrap_or(0);
        }
    }
    let mut shared = 0u64;
    for (t, e) in tensors.iter().zip(entries) {
        match &t.used_by {
            Some((method, _)) => {
                let slot =
                    owned.entry(method.clone()).or_default().entry(format!("{} tensors", t.source.kind())).or_default();
                *slot = slot.saturating_add(e.storage().len());
            }
            None => shared = shared.saturating_add(e.storage().len()),
        }
    }
    let mut items: Vec<Bar> = owned
        .into_iter()
        .map(|(method, parts)| {
            let children: Vec<Bar> = parts.into_iter().map(|(k, v)| Bar::new(k, v)).collect();
            let value = Bar::total(&children);
            Bar { label: method, value, children }
        })
        .collect();
    if shared > 0 {
        items.push(Bar::new("named data (shared by key)", shared));
    }
    Bar::sort(&mut items);
    Section::Bars { title: "Where the bytes go: by method".into(), unit: "bytes", items }
}

fn io_text(list: &Json) -> String {
    let items: Vec<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| match (v["type"].as_str(), v["dtype"].as_str()) {
            (Some("Tensor"), Some(d)) => format!("{d}{}", v["shape"]),
            (Some(t), _) => t.to_string(),
            _ => "?".into(),
        })
        .collect();
    items.join(", ")
}

fn methods_table(methods: &[Json]) -> Section {
    let rows = methods
        .iter()
        .map(|m| {
            let kinds = m["instructions_by_kind"].as_object();
            let count = |k: &str| kinds.and_then(|o| o.get(k)).cloned().unwrap_or(json!(0));
            vec![
                m["name"].clone(),
                json!(io_text(&m["inputs"])),
                json!(io_text(&m["outputs"])),
                m["instructions"].clone(),
                count("KernelCall"),
                count("DelegateCall"),
                m["planned_memory_bytes"].clone(),
            ]
        })
        .collect();
    Section::table(
        "Methods",
        &["method", "inputs", "outputs", "instructions", "kernel calls", "delegate calls", "planned memory bytes"],
        rows,
    )
}

/// Every operator of every method with where it runs: the delegate that holds it (as its
/// decoded payload says), or the program's kernels (an operator no delegate took).
fn operators_table(methods: &[Json]) -> Section {
    let mut rows = Vec::new();
    let mut undecoded = 0;
    for m in methods {
        let method = m["name"].clone();
        for (i, d) in m["delegates"].as_array().into_iter().flatten().enumerate() {
            match d["operators"].as_object() {
                Some(ops) => {
                    let place = json!(format!("{} #{i}", d["id"].as_str().unwrap_or("?")));
                    for (op, n) in ops {
                        rows.push(vec![method.clone(), json!(op), place.clone(), n.clone()]);
                    }
                }
                None => undecoded += 1,
            }
        }
        for (op, n) in m["kernel_calls_by_operator"].as_object().into_iter().flatten() {
            rows.push(vec![method.clone(), json!(op), json!(PROGRAM_KERNELS), n.clone()]);
        }
    }
    let mut note = "Operators a delegate runs come from its decoded payload; the rest run in the program's own \
                    kernels: they fell back from the delegates, or none was asked for."
        .to_string();
    if undecoded > 0 {
        note.push_str(&format!(" {undecoded} delegate payload(s) not decoded (a backend tensorfile does not read)."));
    }
    Section::Table {
        title: "Operators".into(),
        note: Some(note),
        columns: ["method", "operator", "runs in", "count"].iter().map(|c| c.to_string()).collect(),
        rows,
    }
}

fn delegates_table(methods: &[Json]) -> Section {
    let mut rows = Vec::new();
    for m in methods {
        for (i, d) in m["delegates"].as_array().into_iter().flatten().enumerate() {
            let specs: Vec<&str> =
                d["compile_specs"].as_array().into_iter().flatten().filter_map(|s| s["key"].as_str()).collect();
            let nodes = d["operators"].as_object().map(|o| o.values().filter_map(Json::as_u64).sum::<u64>());
            rows.push(vec![
                m["name"].clone(),
                json!(i),
                d["id"].clone(),
                d["location"].clone(),
                d["bytes"].clone(),
                json!(nodes),
                json!(specs.join(", ")),
                d["error"].clone(),
            ]);
        }
    }
    Section::table("Delegates", &["method", "#", "backend", "stored", "bytes", "nodes", "compile specs", "error"], rows)
}
