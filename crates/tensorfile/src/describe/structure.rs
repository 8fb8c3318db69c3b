//! A format's own description (`info`'s structure, JSON) laid out as report sections without
//! knowing the format: facts as pairs, lists of records as tables, counts by name as bars.

use serde_json::{Map, Value as Json};

use super::section::{Bar, Section};

/// The most rows a table made from a list keeps (the rest are counted in its note).
const MAX_ROWS: usize = 10_000;
/// Cells longer than this are cut (with an ellipsis).
const MAX_CELL: usize = 200;
/// Nesting past this depth is shown as JSON text in its parent.
const MAX_DEPTH: usize = 4;

/// The sections of a description, headed under `title`.
pub fn sections(title: &str, json: &Json) -> Vec<Section> {
    let mut out = Vec::new();
    match json {
        Json::Object(o) => object(title, o, 0, &mut out),
        Json::Array(a) => array(title, a, 0, &mut out),
        other => out.push(Section::Pairs { title: title.into(), rows: vec![("value".into(), text(other))] }),
    }
    out
}

fn is_scalar(v: &Json) -> bool {
    !matches!(v, Json::Object(_) | Json::Array(_))
}

/// A list of scalars (a shape, a list of names) is one cell.
fn is_flat(v: &Json) -> bool {
    match v {
        Json::Array(a) => a.iter().all(is_scalar),
        other => is_scalar(other),
    }
}

/// Counts by name: an object of two or more integers, none of them a size (a record such as
/// `{"count": 3, "bytes": 96}` is facts, not counts of like things).
fn is_counts(o: &Map<String, Json>) -> bool {
    o.len() > 1 && o.values().all(|v| v.as_u64().is_some()) && !o.keys().any(|k| k == "bytes" || k.ends_with("_bytes"))
}

fn object(title: &str, o: &Map<String, Json>, depth: usize, out: &mut Vec<Section>) {
    let pairs: Vec<(String, String)> =
        o.iter().filter(|(_, v)| is_flat(v) || depth >= MAX_DEPTH).map(|(k, v)| (k.clone(), text(v))).collect();
    if !pairs.is_empty() {
        out.push(Section::Pairs { title: title.into(), rows: pairs });
    }
    if depth >= MAX_DEPTH {
        return;
    }
    for (k, v) in o.iter().filter(|(_, v)| !is_flat(v)) {
        let sub = format!("{title} › {k}");
        match v {
            Json::Object(inner) if is_counts(inner) => {
                let mut items: Vec<Bar> =
                    inner.iter().map(|(n, c)| Bar::new(n.clone(), c.as_u64().unwrap_or(0))).collect();
                Bar::sort(&mut items);
                out.push(Section::Bars { title: sub, unit: "count", items });
            }
            Json::Object(inner) => object(&sub, inner, depth + 1, out),
            Json::Array(a) => array(&sub, a, depth + 1, out),
            _ => {}
        }
    }
}

fn array(title: &str, a: &[Json], depth: usize, out: &mut Vec<Section>) {
    if a.is_empty() {
        return;
    }
    if !a.iter().all(|v| v.is_object()) {
        let rows = a.iter().take(MAX_ROWS).map(|v| vec![cell(v)]).collect();
        out.push(Section::table(title, &["value"], rows));
        return;
    }
    let records: Vec<&Map<String, Json>> = a.iter().filter_map(Json::as_object).collect();
    // Columns: every key holding a flat value in some record, in first-seen order.
    let mut columns: Vec<&str> = Vec::new();
    for r in &records {
        for (k, v) in r.iter() {
            if is_flat(v) && !columns.contains(&k.as_str()) {
                columns.push(k);
            }
        }
    }
    if !columns.is_empty() {
        let rows = records
            .iter()
            .take(MAX_ROWS)
            .map(|r| columns.iter().map(|c| r.get(*c).map_or(Json::Null, cell)).collect())
            .collect();
        let mut table = Section::table(title, &columns, rows);
        if records.len() > MAX_ROWS {
            if let Section::Table { note, .. } = &mut table {
                *note = Some(format!("the first {MAX_ROWS} of {}", records.len()));
            }
        }
        out.push(table);
    }
    if depth >= MAX_DEPTH {
        return;
    }
    // Nested lists and objects of each record, headed by the record's name.
    for (i, r) in records.iter().enumerate().take(MAX_ROWS) {
        let nested: Map<String, Json> =
            r.iter().filter(|(_, v)| !is_flat(v)).map(|(k, v)| (k.clone(), v.clone())).collect();
        if nested.is_empty() {
            continue;
        }
        let label = ["name", "id", "key"].iter().find_map(|k| r.get(*k).and_then(Json::as_str));
        let sub = match label {
            Some(l) => format!("{title} › {l}"),
            None => format!("{title} › {i}"),
        };
        object(&sub, &nested, depth + 1, out);
    }
}

/// A cell: numbers stay numbers, the rest is text.
fn cell(v: &Json) -> Json {
    match v {
        Json::Number(_) => v.clone(),
        other => Json::String(text(other)),
    }
}

/// A value as one line of text, cut past [`MAX_CELL`] characters.
fn text(v: &Json) -> String {
    let s = match v {
        Json::String(s) => s.clone(),
        Json::Null => String::new(),
        other => other.to_string(),
    };
    if s.chars().count() > MAX_CELL {
        let cut: String = s.chars().take(MAX_CELL).collect();
        format!("{cut}…")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn facts_records_and_counts_become_pairs_tables_and_bars() {
        let j = json!({
            "layout": "torch >= 2.9",
            "models": [{"name": "model", "parameters": 3, "inputs": [{"name": "x", "shape": [1, 3]}],
                        "operators": {"aten.add": 2, "aten.mul": 5}}],
        });
        let s = sections("Program", &j);
        let titles: Vec<&str> = s.iter().map(Section::title).collect();
        assert_eq!(
            titles,
            [
                "Program",
                "Program › models",
                "Program › models › model › inputs",
                "Program › models › model › operators"
            ]
        );
        assert_eq!(
            s[0],
            Section::Pairs { title: "Program".into(), rows: vec![("layout".into(), "torch >= 2.9".into())] }
        );
        let Section::Table { columns, rows, .. } = &s[1] else { panic!("{:?}", s[1]) };
        assert_eq!(
            (columns.as_slice(), rows.as_slice()),
            (&["name".to_string(), "parameters".into()][..], &[vec![json!("model"), json!(3)]][..])
        );
        let Section::Table { rows, .. } = &s[2] else { panic!() };
        assert_eq!(rows, &[vec![json!("x"), json!("[1,3]")]]);
        let Section::Bars { items, unit, .. } = &s[3] else { panic!() };
        assert_eq!(*unit, "count");
        assert_eq!((items[0].label.as_str(), items[0].value), ("aten.mul", 5));
    }

    #[test]
    fn a_record_with_a_size_is_facts_not_counts() {
        let s = sections(
            "T",
            &json!({ "data": {"constant": {"count": 1, "bytes": 8}, "mutable": {"count": 2, "bytes": 4}} }),
        );
        assert!(s.iter().all(|s| !matches!(s, Section::Bars { .. })), "{s:?}");
        assert_eq!(s[0].title(), "T › data › constant");
    }

    #[test]
    fn long_cells_are_cut_and_deep_nesting_is_text() {
        let long = "x".repeat(500);
        let s = sections("T", &json!({ "k": long, "a": {"b": {"c": {"d": {"e": {"f": 1}}}}} }));
        let Section::Pairs { rows, .. } = &s[0] else { panic!() };
        assert_eq!(rows[0].1.chars().count(), MAX_CELL + 1);
        let deepest = s.last().unwrap();
        let Section::Pairs { rows, .. } = deepest else { panic!("{deepest:?}") };
        assert_eq!(rows[0], ("e".to_string(), "{\"f\":1}".to_string()));
    }
}
