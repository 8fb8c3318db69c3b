//! What `info` shows of a program: its methods (inputs, outputs, instructions, operators,
//! delegates, planned memory) and where its data is.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Value as Json, json};

use super::delegates::DelegateGraph;
use super::program::{Origin, Program, ProgramTensor};
use crate::flatbuf::{Table, Value};
use crate::formats::executorch::TensorLayout;
use crate::formats::{Catalog, Structure};

/// A program described for `info`: its methods (with `graphs`, its decoded XNNPACK
/// delegates) and its data (`tensors`, the program tensor behind each entry of `catalog`).
pub fn describe(
    program: &Program,
    tensors: &[ProgramTensor],
    catalog: &Catalog,
    graphs: &[DelegateGraph],
) -> Structure {
    let json = match to_json(program, tensors, catalog, graphs) {
        Ok(j) => j,
        Err(e) => json!({ "error": e.message() }),
    };
    let text = render(&json);
    Structure { json, text }
}

fn evalue(values: &[Value], index: i64) -> Json {
    let v = usize::try_from(index).ok().and_then(|i| values.get(i));
    let Some(Value::Table(ev)) = v else {
        return json!({ "index": index, "type": "invalid" });
    };
    let Ok(Some(u)) = ev.union("val") else {
        return json!({ "index": index, "type": "None" });
    };
    let mut out = json!({ "index": index, "type": u.variant() });
    if let Some(t) = &u.value {
        match u.variant() {
            "Tensor" => {
                if let Ok(l) = TensorLayout::from_table(t) {
                    out["dtype"] = json!(l.dtype.name());
                    out["shape"] = json!(l.shape);
                    if !l.is_contiguous() {
                        out["dim_order"] = json!(l.dim_order);
                    }
                }
                let dynamism = ["static", "dynamic_bound", "dynamic_unbound"];
                if let Some(d) =
                    t.int("shape_dynamism").ok().and_then(|d| usize::try_from(d).ok()).and_then(|d| dynamism.get(d))
                {
                    out["dynamism"] = json!(d);
                }
            }
            "Int" => out["value"] = json!(t.int("int_val").unwrap_or(0)),
            "Bool" => out["value"] = json!(t.bool("bool_val").unwrap_or(false)),
            "Double" => out["value"] = json!(t.float("double_val").unwrap_or(0.0)),
            "String" => out["value"] = json!(t.str("string_val").ok().flatten()),
            _ => {}
        }
    }
    out
}

fn operator_name(op: &Table) -> String {
    let name = op.str("name").ok().flatten().unwrap_or("");
    match op.str("overload").ok().flatten().filter(|o| !o.is_empty()) {
        Some(o) => format!("{name}.{o}"),
        None => name.to_string(),
    }
}

fn method_json(program: &Program, graphs: &[DelegateGraph], plan: &Table) -> crate::Result<Json> {
    let values = plan.vector("values")?;
    let mut by_type: BTreeMap<&str, u64> = BTreeMap::new();
    for v in values {
        let kind = match v {
            Value::Table(ev) => ev.union("val")?.map_or("None", |u| u.variant()),
            _ => "invalid",
        };
        *by_type.entry(kind).or_default() += 1;
    }
    let operators: Vec<String> = plan.tables("operators")?.iter().map(|o| operator_name(o)).collect();
    let mut by_kind: BTreeMap<&str, u64> = BTreeMap::new();
    let mut calls: BTreeMap<String, u64> = BTreeMap::new();
    let chains = plan.tables("chains")?;
    for chain in &chains {
        for ins in chain.tables("instructions")? {
            let Some(u) = ins.union("instr_args")? else { continue };
            *by_kind.entry(u.variant()).or_default() += 1;
            if let (Some(args), "KernelCall") = (&u.value, u.variant()) {
                let op = usize::try_from(args.int("op_index")?).ok().and_then(|i| operators.get(i));
                *calls.entry(op.cloned().unwrap_or_else(|| "<invalid>".into())).or_default() += 1;
            }
        }
    }
    let inline = program.root.tables("backend_delegate_data")?;
    let mut delegates = Vec::new();
    let method = plan.str("name")?.unwrap_or("");
    for (i, d) in plan.tables("delegates")?.iter().enumerate() {
        let specs: Vec<Json> = d
            .tables("compile_specs")?
            .iter()
            .map(|s| {
                let value = s.bytes("value").unwrap_or_else(|_| Vec::new().into());
                let text = std::str::from_utf8(&value).ok().filter(|t| t.chars().all(|c| !c.is_control()));
                json!({ "key": s.str("key").ok().flatten(), "bytes": value.len(), "text": text })
            })
            .collect();
        let (location, index, size) = match d.table("processed")? {
            Some(p) => {
                let index = p.uint("index")?;
                let inline_data = p.int("location")? == 0;
                let size = if inline_data {
                    usize::try_from(index)
                        .ok()
                        .and_then(|i| inline.get(i))
                        .and_then(|t| t.bytes("data").ok())
                        .map(|b| b.len() as u64)
                } else {
                    program.segment(index).ok().map(|(_, s)| s)
                };
                (if inline_data { "inline" } else { "segment" }, Some(index), size)
            }
            None => ("missing", None, None),
        };
        let mut delegate =
            json!({ "id": d.str("id")?, "location": location, "index": index, "bytes": size, "compile_specs": specs });
        // XNNPACK: the operators its decoded payload runs, or why it did not decode.
        if let Some(g) = graphs.iter().find(|g| g.method == method && g.index == i) {
            match &g.graph {
                Ok(graph) => delegate["operators"] = json!(graph.operator_counts()),
                Err(e) => delegate["error"] = json!(e.to_string()),
            }
        }
        delegates.push(delegate);
    }
    let buffers = plan.ints("non_const_buffer_sizes")?;
    // Sizes come from the file: their total may not fit (null then), and must not panic.
    let planned = buffers.iter().skip(1).filter(|&&b| b > 0).try_fold(0i64, |total, &b| total.checked_add(b));
    let list = |name: &str| -> crate::Result<Vec<Json>> {
        Ok(plan.ints(name)?.into_iter().map(|i| evalue(values, i)).collect())
    };
    Ok(json!({
        "name": plan.str("name")?,
        "inputs": list("inputs")?,
        "outputs": list("outputs")?,
        "values": values.len(),
        "values_by_type": by_type,
        "chains": chains.len(),
        "instructions": by_kind.values().sum::<u64>(),
        "instructions_by_kind": by_kind,
        "operators": operators,
        "kernel_calls_by_operator": calls,
        "delegates": delegates,
        "non_const_buffer_sizes": buffers,
        "planned_memory_bytes": planned,
    }))
}

fn to_json(
    program: &Program,
    tensors: &[ProgramTensor],
    catalog: &Catalog,
    graphs: &[DelegateGraph],
) -> crate::Result<Json> {
    let methods = program
        .root
        .tables("execution_plan")?
        .iter()
        .map(|p| method_json(program, graphs, p))
        .collect::<crate::Result<Vec<_>>>()?;
    let mut data: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    let mut external = Vec::new();
    for (t, e) in tensors.iter().zip(catalog.entries()) {
        let slot = data.entry(t.source.kind()).or_default();
        slot.0 += 1;
        slot.1 = slot.1.saturating_add(e.nbytes());
        if let Origin::External { fqn } = &t.source {
            external.push(fqn.clone());
        }
    }
    for u in catalog.unreadable() {
        if u.error().message().contains("external tensor") {
            external.push(u.name().to_string());
        }
    }
    let data: BTreeMap<&str, Json> =
        data.into_iter().map(|(k, (n, b))| (k, json!({ "count": n, "bytes": b }))).collect();
    let constants_in = if program.constants_in_segment()? {
        "segment"
    } else if program.root.vector("constant_buffer")?.is_empty() {
        "none"
    } else {
        "inline constant_buffer (deprecated)"
    };
    let segments: Vec<Json> = program.segments.iter().map(|(o, s)| json!({ "offset": o, "bytes": s })).collect();
    Ok(json!({
        "methods": methods,
        "data": data,
        "constants_stored": constants_in,
        "external": external,
        "segments": segments,
    }))
}

/// The description as text, a few lines per method.
fn render(j: &Json) -> String {
    let mut s = String::new();
    if let Some(e) = j["error"].as_str() {
        return format!("program: {e}\n");
    }
    let io = |list: &Json| -> String {
        let items: Vec<String> = list
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| match (v["type"].as_str(), v["dtype"].as_str()) {
                        (Some("Tensor"), Some(d)) => format!("{d}{}", v["shape"]),
                        (Some(t), _) if !v["value"].is_null() => format!("{t}={}", v["value"]),
                        (Some(t), _) => t.to_string(),
                        _ => "?".into(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        items.join(", ")
    };
    for m in j["methods"].as_array().into_iter().flatten() {
        let _ = writeln!(s, "method {}", m["name"].as_str().unwrap_or("?"));
        let _ = writeln!(s, "  inputs       {}", io(&m["inputs"]));
        let _ = writeln!(s, "  outputs      {}", io(&m["outputs"]));
        let kinds: Vec<String> = m["instructions_by_kind"]
            .as_object()
            .map(|o| o.iter().map(|(k, v)| format!("{v} {k}")).collect())
            .unwrap_or_default();
        let _ = writeln!(s, "  values       {}, in {} chain(s)", m["values"], m["chains"]);
        let _ = writeln!(s, "  instructions {} ({})", m["instructions"], kinds.join(", "));
        let calls: Vec<String> = m["kernel_calls_by_operator"]
            .as_object()
            .map(|o| o.iter().map(|(k, v)| if v == 1 { k.clone() } else { format!("{k} x{v}") }).collect())
            .unwrap_or_default();
        if !calls.is_empty() {
            let _ = writeln!(s, "  operators    {}", calls.join(", "));
        }
        for d in m["delegates"].as_array().into_iter().flatten() {
            let specs: Vec<String> = d["compile_specs"]
                .as_array()
                .map(|a| a.iter().map(|c| c["key"].as_str().unwrap_or("?").to_string()).collect())
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  delegate     {} ({} bytes, {}{})",
                d["id"].as_str().unwrap_or("?"),
                d["bytes"],
                d["location"].as_str().unwrap_or("?"),
                if specs.is_empty() { String::new() } else { format!("; compile specs: {}", specs.join(", ")) }
            );
            if let Some(ops) = d["operators"].as_object() {
                let ops: Vec<String> =
                    ops.iter().map(|(k, v)| if v == 1 { k.clone() } else { format!("{k} x{v}") }).collect();
                let _ = writeln!(s, "    runs       {}", ops.join(", "));
            }
            if let Some(e) = d["error"].as_str() {
                let _ = writeln!(s, "    undecoded  {e}");
            }
        }
        match m["planned_memory_bytes"].as_i64() {
            Some(b) => _ = writeln!(s, "  planned mem  {b} bytes"),
            None => _ = writeln!(s, "  planned mem  more than {} bytes (the sizes overflow)", i64::MAX),
        }
    }
    if let Some(d) = j["data"].as_object() {
        for (k, v) in d {
            let _ = writeln!(s, "{:<13}{} ({} bytes)", k, v["count"], v["bytes"]);
        }
    }
    let _ = writeln!(s, "constants in {}", j["constants_stored"].as_str().unwrap_or("?"));
    if let Some(ext) = j["external"].as_array().filter(|a| !a.is_empty()) {
        let _ = writeln!(s, "external     {} tensor(s) in a .ptd", ext.len());
    }
    s
}
