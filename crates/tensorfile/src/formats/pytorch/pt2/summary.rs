//! The text `info` shows of an archive's models.

use serde_json::{Value as Json, json};

/// The description of an archive's models (its structure JSON) as text.
pub fn render(j: &Json) -> String {
    use std::fmt::Write;
    let mut s = format!("layout       {}\n", j["layout"].as_str().unwrap_or("?"));
    let list = |v: &Json| -> String {
        let items: Vec<String> = v
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| match t["dtype"].as_str() {
                Some(d) => format!("{d}{}", t["shape"]),
                None => t["type"].as_str().unwrap_or("?").to_string(),
            })
            .collect();
        items.join(", ")
    };
    for m in j["models"].as_array().into_iter().flatten() {
        let _ = writeln!(s, "model {}", m["name"].as_str().unwrap_or("?"));
        if let Some(e) = m["error"].as_str() {
            let _ = writeln!(s, "  error        {e}");
        }
        if !m["torch_version"].is_null() {
            let _ = writeln!(
                s,
                "  versions     schema {}, torch {}",
                m["schema_version"].as_str().unwrap_or("?"),
                m["torch_version"].as_str().unwrap_or("?")
            );
        }
        if let Some(a) = m.get("aotinductor") {
            let md = &a["metadata"];
            let field = |k: &str| md[k].as_str().filter(|v| !v.is_empty()).unwrap_or("?").to_string();
            let _ = writeln!(
                s,
                "  compiled     AOTInductor for {} ({} {}, {}), {} weights on disk",
                field("AOTI_DEVICE_KEY"),
                field("AOTI_PLATFORM"),
                field("AOTI_MACHINE"),
                field("AOTI_CPU_ISA"),
                a["weights_on_disk"]
            );
        }
        if m.get("inputs").is_some() {
            let _ = writeln!(s, "  inputs       {}", list(&m["inputs"]));
            let _ = writeln!(s, "  outputs      {}", list(&m["outputs"]));
        }
        if let Some(r) = m["range_constraints"].as_object().filter(|r| !r.is_empty()) {
            let ranges: Vec<String> = r.iter().map(|(k, v)| format!("{k} in [{}, {}]", v["min"], v["max"])).collect();
            let _ = writeln!(s, "  dynamic      {}", ranges.join(", "));
        }
        if !m["parameters"].is_null() {
            let _ = writeln!(
                s,
                "  weights      {} parameters, {} buffers, {} constants",
                m["parameters"], m["buffers"], m["constants"]
            );
        }
        if let Some(ops) = m["operators"].as_object() {
            let total: u64 = ops.values().filter_map(Json::as_u64).sum();
            let _ = writeln!(s, "  operators    {total} calls of {} operators", ops.len());
        }
        if let Some(si) = m["sample_inputs"].as_array().filter(|a| !a.is_empty()) {
            let _ = writeln!(s, "  sample input {}", list(&json!(si)));
        }
        if let Some(a) = m["artifacts"].as_array() {
            let _ = writeln!(
                s,
                "  artifacts    {} files ({})",
                a.len(),
                a.iter()
                    .filter_map(|x| x["name"].as_str())
                    .map(|n| n.rsplit('/').next().unwrap_or(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    s
}
