//! A model's definition (`models/<m>.json`, a serialized ExportedProgram), summarised for
//! `info`: versions, user inputs and outputs (symbolic sizes with their ranges), parameters,
//! buffers and constants, and operator counts.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value as Json, json};

use crate::error::{Error, Result, Rule};
use crate::formats::pytorch::export_dtype;

/// What `info` shows of one model, and the kind of each of its weights.
#[derive(Debug, Clone)]
pub struct ModelSummary {
    pub json: Json,
    /// Fully qualified name → "parameter", "buffer" or "constant".
    pub kinds: HashMap<String, &'static str>,
}

/// One size: an integer, or a symbol (`s0`) with its range when it is dynamic.
fn size(v: &Json) -> Json {
    if let Some(n) = v.get("as_int") {
        return n.clone();
    }
    match v.get("as_expr").and_then(|e| e.get("expr_str")).and_then(Json::as_str) {
        Some(s) => json!(super::sympy::readable(s)),
        None => json!("?"),
    }
}

fn dtype_name(v: &Json) -> Json {
    match v.as_i64().and_then(export_dtype) {
        Some(d) => json!(d.name()),
        None => v.clone(),
    }
}

/// A tensor value of the graph by name: dtype and shape.
fn tensor(values: &Map<String, Json>, name: &str) -> Json {
    match values.get(name) {
        Some(t) => {
            let shape: Vec<Json> = t["sizes"].as_array().map(|a| a.iter().map(size).collect()).unwrap_or_default();
            json!({ "name": name, "dtype": dtype_name(&t["dtype"]), "shape": shape })
        }
        None => json!({ "name": name }),
    }
}

/// An argument of the signature: a tensor, or its kind (`as_int`, `as_none`...).
fn argument(values: &Map<String, Json>, arg: &Json) -> Json {
    if let Some(name) = arg.get("as_tensor").and_then(|t| t["name"].as_str()) {
        return tensor(values, name);
    }
    match arg.as_object().and_then(|o| o.iter().next()) {
        Some((kind, v)) => json!({ "type": kind.trim_start_matches("as_"), "value": v }),
        None => json!({ "type": "unknown" }),
    }
}

/// Summarise the ExportedProgram JSON `text` of model `name`.
pub fn summarize(name: &str, text: &str) -> Result<ModelSummary> {
    let j: Json =
        serde_json::from_str(text).map_err(|e| Error::invalid(Rule::BadJson, format!("model {name}: {e}")))?;
    let gm = &j["graph_module"];
    let graph = &gm["graph"];
    let empty = Map::new();
    let values = graph["tensor_values"].as_object().unwrap_or(&empty);
    let mut kinds = HashMap::new();
    let (mut inputs, mut params, mut buffers, mut constants) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for spec in gm["signature"]["input_specs"].as_array().into_iter().flatten() {
        let Some((kind, body)) = spec.as_object().and_then(|o| o.iter().next()) else { continue };
        let arg_name = body["arg"]["name"].as_str().unwrap_or("");
        let (list, fqn_key, label) = match kind.as_str() {
            "user_input" => {
                inputs.push(argument(values, &body["arg"]));
                continue;
            }
            "parameter" => (&mut params, "parameter_name", "parameter"),
            "buffer" => (&mut buffers, "buffer_name", "buffer"),
            "tensor_constant" => (&mut constants, "tensor_constant_name", "constant"),
            _ => continue,
        };
        if let Some(fqn) = body[fqn_key].as_str() {
            kinds.insert(fqn.to_string(), label);
            let mut t = tensor(values, arg_name);
            t["fqn"] = json!(fqn);
            list.push(t);
        }
    }
    let outputs: Vec<Json> = gm["signature"]["output_specs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("user_output"))
        .map(|o| argument(values, &o["arg"]))
        .collect();
    let mut operators: BTreeMap<String, u64> = BTreeMap::new();
    for node in graph["nodes"].as_array().into_iter().flatten() {
        if let Some(t) = node["target"].as_str() {
            *operators.entry(t.to_string()).or_default() += 1;
        }
    }
    let ranges: Map<String, Json> = j["range_constraints"]
        .as_object()
        .map(|o| o.iter().map(|(k, v)| (k.clone(), json!({ "min": v["min_val"], "max": v["max_val"] }))).collect())
        .unwrap_or_default();
    let version = &j["schema_version"];
    Ok(ModelSummary {
        json: json!({
            "name": name,
            "schema_version": format!("{}.{}", version["major"], version["minor"]),
            "torch_version": j["torch_version"],
            "inputs": inputs,
            "outputs": outputs,
            "parameters": params.len(),
            "buffers": buffers.len(),
            "constants": constants.len(),
            "weights": { "parameters": params, "buffers": buffers, "constants": constants },
            "operators": operators,
            "range_constraints": ranges,
        }),
        kinds,
    })
}
