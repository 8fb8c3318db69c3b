//! The parts of a report read off the file: its summary, its tensor table with statistics,
//! and its comparison with another file.

use std::collections::HashMap;

use serde_json::{Value as Json, json};

use super::bytes::sorted;
use crate::compare::{self, Metrics, Tolerance};
use crate::describe::Section;
use crate::facts::FileFacts;
use crate::listing::{self, EntryRow};
use crate::stats::{self, StatsOptions};
use crate::{Kind, TensorFile};

/// `info`'s lines, the file line left out (the page names the file in its title).
pub fn summary(facts: &FileFacts, file: &TensorFile) -> Json {
    let lines: Vec<(String, String)> = facts
        .lines("")
        .into_iter()
        .filter(|(k, _)| k != "file")
        .map(|(k, v)| if k == "format" { (k, format!("{} ({})", file.format().unit().title(), v)) } else { (k, v) })
        .collect();
    json!(lines)
}

/// Elements by dtype, as bars (when the file holds more than one dtype).
pub fn parameter_sections(facts: &FileFacts) -> Vec<Section> {
    if facts.parameters.by_dtype.len() < 2 {
        return Vec::new();
    }
    let items = sorted(facts.parameters.by_dtype.clone().into_iter().collect());
    vec![Section::Bars { title: "Parameters by dtype".into(), unit: "count", items }]
}

/// The table of readable entries: `name`, `dtype`, `shape`, `bytes` (decoded), `stored`,
/// `kind`, `layout`, `encoding`, `offset`, then `source` (programs) and `file` (a set of
/// files) when they say something.
pub fn tensor_table(file: &TensorFile) -> Json {
    let rows = listing::rows(file);
    let readable: Vec<Json> =
        rows.iter().filter(|r| matches!(r, EntryRow::Readable { .. })).map(EntryRow::to_json).collect();
    let has_source = readable.iter().any(|r| !r["source"].is_null());
    let has_file = file.is_set();
    let mut columns = vec!["name", "dtype", "shape", "bytes", "stored", "kind", "layout", "encoding", "offset"];
    if has_source {
        columns.push("source");
    }
    if has_file {
        columns.push("file");
    }
    let cells: Vec<Json> = readable
        .iter()
        .map(|r| {
            let mut row = vec![
                r["name"].clone(),
                r["dtype"].clone(),
                r["shape"].clone(),
                r["nbytes"].clone(),
                r["stored_bytes"].clone(),
                r["kind"].clone(),
                r["layout"].clone(),
                r["encoding"].clone(),
                r["offset"].clone(),
            ];
            if has_source {
                row.push(r["source"].clone());
            }
            if has_file {
                let shard = r["shard"].as_str().map(|s| {
                    std::path::Path::new(s).file_name().map_or(s.to_string(), |n| n.to_string_lossy().into_owned())
                });
                row.push(json!(shard));
            }
            Json::Array(row)
        })
        .collect();
    json!({ "columns": columns, "rows": cells })
}

/// Statistics of every readable entry, in file order: `stats --json`'s record, or
/// `{"error": why}` for an entry not summarised or failing to read.
pub fn stats(file: &TensorFile, bins: usize, progress: &(dyn Fn(u64) + Sync)) -> crate::Result<Vec<Json>> {
    let options = StatsOptions { names: Vec::new(), hist: Some(bins) };
    Ok(stats::summarise_each(file, &options, progress)?
        .into_iter()
        .map(|s| match s {
            Ok(s) => match &s.summary {
                Ok(_) => {
                    let mut record = s.to_json();
                    if let Some(o) = record.as_object_mut() {
                        for k in ["name", "dtype", "shape", "dequantized", "summarised"] {
                            o.remove(k);
                        }
                    }
                    record
                }
                Err(reason) => json!({ "numel": s.numel, "error": reason }),
            },
            Err(e) => json!({ "error": e.message() }),
        })
        .collect())
}

/// Every name of either file with how it compares: `identical`, `changed` (with the metrics
/// when the values compare as numbers), `only-here`, `only-other` or `unreadable`.
pub fn compare(a: &TensorFile, b: &TensorFile, b_name: &str, tolerance: Tolerance) -> Json {
    let diff = compare::compare_with(a, b, tolerance);
    let changed: HashMap<&str, Option<&Metrics>> =
        diff.changed.iter().map(|t| (t.name.as_str(), t.metrics.as_ref())).collect();
    let unreadable: HashMap<&str, &str> =
        diff.unreadable.iter().map(|u| (u.name.as_str(), u.message.as_str())).collect();
    let only_a: std::collections::HashSet<&str> = diff.only_in_a.iter().map(String::as_str).collect();
    let dtype = |f: &TensorFile, name: &str| -> Json {
        f.entry(name).map_or(Json::Null, |e| {
            if e.info().kind() == Kind::Blob { json!("blob") } else { json!(e.info().dtype().name()) }
        })
    };
    let metric_cells = |m: Option<&Metrics>| -> [Json; 5] {
        match m {
            Some(m) => {
                let j = m.to_json();
                [
                    j["max_abs_diff"].clone(),
                    j["max_rel_diff"].clone(),
                    j["cosine"].clone(),
                    j["nmse"].clone(),
                    j["over_tolerance"].clone(),
                ]
            }
            None => Default::default(),
        }
    };
    let mut rows = Vec::new();
    let mut names: Vec<&str> = a.entries().iter().map(|e| e.info().name()).collect();
    names.extend(a.unreadable().iter().map(|u| u.name()));
    for name in names {
        let (status, metrics) = if only_a.contains(name) {
            ("only-here", None)
        } else if unreadable.contains_key(name) {
            ("unreadable", None)
        } else if let Some(m) = changed.get(name) {
            ("changed", *m)
        } else {
            ("identical", None)
        };
        let mut row = vec![json!(name), json!(status), dtype(a, name), dtype(b, name)];
        row.extend(metric_cells(metrics));
        rows.push(Json::Array(row));
    }
    for name in &diff.only_in_b {
        let mut row = vec![json!(name), json!("only-other"), Json::Null, dtype(b, name)];
        row.extend(metric_cells(None));
        rows.push(Json::Array(row));
    }
    json!({
        "other": b_name,
        "atol": tolerance.atol,
        "rtol": tolerance.rtol,
        "columns": ["name", "status", "dtype", "other_dtype", "max_abs", "max_rel", "cosine", "nmse", "over_tolerance"],
        "rows": rows,
        "unreadable": unreadable.iter().map(|(n, m)| json!([n, m])).collect::<Vec<_>>(),
    })
}
