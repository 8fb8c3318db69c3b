//! What `info` shows of a model: IR version, opsets, producer, graph inputs and outputs
//! (dtypes and shapes), operator counts across subgraphs, `metadata_props` as metadata.

use std::collections::BTreeMap;

use super::dtypes;
use super::external::Files;
use super::graph::Walk;
use super::proto::{GraphProto, ModelProto, TypeProto, ValueInfoProto};
use crate::formats::{FileSummary, Structure};
use crate::model::MetaValue;

/// A graph input or output: name, type (`float32`, `sequence`...), shape (sizes or symbols;
/// `None` when unknown).
#[derive(Debug, Clone)]
struct Value {
    name: String,
    dtype: String,
    shape: Option<Vec<String>>,
}

/// The facts of a model, gathered when it is opened.
pub struct Facts {
    ir_version: i64,
    producer: String,
    producer_version: String,
    domain: String,
    model_version: i64,
    opsets: Vec<(String, i64)>,
    metadata: Vec<(String, MetaValue)>,
    graph_name: String,
    inputs: Vec<Value>,
    outputs: Vec<Value>,
    ops: BTreeMap<String, u64>,
    graphs: u64,
}

fn value(v: &ValueInfoProto) -> Value {
    let (dtype, shape) = match &v.r#type {
        Some(TypeProto { tensor_type: Some(t), .. }) => ("".to_string() + &dtypes::shown(t.elem_type), shape(t)),
        Some(TypeProto { sparse_tensor_type: Some(t), .. }) => {
            (format!("sparse {}", dtypes::shown(t.elem_type)), shape(t))
        }
        Some(TypeProto { sequence_type: Some(_), .. }) => ("sequence".into(), None),
        Some(TypeProto { map_type: Some(_), .. }) => ("map".into(), None),
        Some(TypeProto { optional_type: Some(_), .. }) => ("optional".into(), None),
        _ => ("unknown".into(), None),
    };
    Value { name: v.name.clone(), dtype, shape }
}

fn shape(t: &super::proto::TensorTypeProto) -> Option<Vec<String>> {
    let s = t.shape.as_ref()?;
    Some(
        s.dim
            .iter()
            .map(|d| match (&d.dim_value, &d.dim_param) {
                (Some(v), _) => v.to_string(),
                (None, Some(p)) if !p.is_empty() => p.clone(),
                _ => "?".into(),
            })
            .collect(),
    )
}

impl Facts {
    /// The facts of `model`, whose main graph is `graph` (taken out of it) and whose graphs
    /// `walk` went through.
    pub fn of(model: &ModelProto, graph: &GraphProto, walk: &Walk) -> Facts {
        // Inputs that are initializers (older exporters list them) are weights, not inputs.
        let weights: std::collections::HashSet<&str> = walk.found.iter().map(|f| f.name.as_str()).collect();
        Facts {
            ir_version: model.ir_version,
            producer: model.producer_name.clone(),
            producer_version: model.producer_version.clone(),
            domain: model.domain.clone(),
            model_version: model.model_version,
            opsets: model.opset_import.iter().map(|o| (o.domain.clone(), o.version)).collect(),
            metadata: model.metadata_props.iter().map(|e| (e.key.clone(), MetaValue::Text(e.value.clone()))).collect(),
            graph_name: graph.name.clone(),
            inputs: graph.input.iter().filter(|v| !weights.contains(v.name.as_str())).map(value).collect(),
            outputs: graph.output.iter().map(value).collect(),
            ops: walk.ops.clone(),
            graphs: walk.graphs,
        }
    }

    /// The summary `info` shows.
    pub fn summary(&self, files: &Files) -> FileSummary {
        let text = |s: &str| MetaValue::Text(s.to_string());
        let mut details = vec![
            ("producer".into(), text(format!("{} {}", self.producer, self.producer_version).trim())),
            ("opsets".into(), text(&self.opsets_text())),
            ("graph".into(), text(&self.graph_name)),
            ("graphs".into(), MetaValue::Int(i128::from(self.graphs))),
            ("operators".into(), MetaValue::Int(i128::from(self.ops.values().sum::<u64>()))),
        ];
        if !self.domain.is_empty() {
            details.push(("domain".into(), text(&self.domain)));
        }
        if self.model_version != 0 {
            details.push(("model_version".into(), MetaValue::Int(i128::from(self.model_version))));
        }
        if !files.opened.is_empty() {
            let names: Vec<&str> = files.opened.iter().map(|(l, _, _)| l.as_str()).collect();
            details.push(("external_data".into(), text(&names.join(", "))));
        }
        FileSummary {
            version: self.ir_version.to_string(),
            metadata: self.metadata.clone(),
            details,
            structure: Some(Structure { json: self.json(), text: self.text() }),
        }
    }

    fn opsets_text(&self) -> String {
        let each: Vec<String> =
            self.opsets.iter().map(|(d, v)| format!("{} {v}", if d.is_empty() { "ai.onnx" } else { d })).collect();
        each.join(", ")
    }

    fn json(&self) -> serde_json::Value {
        let values = |vs: &[Value]| -> Vec<serde_json::Value> {
            vs.iter().map(|v| serde_json::json!({"name": v.name, "dtype": v.dtype, "shape": v.shape})).collect()
        };
        serde_json::json!({
            "ir_version": self.ir_version,
            "producer_name": self.producer,
            "producer_version": self.producer_version,
            "opsets": self.opsets.iter().map(|(d, v)| serde_json::json!({"domain": d, "version": v})).collect::<Vec<_>>(),
            "inputs": values(&self.inputs),
            "outputs": values(&self.outputs),
            "operators": self.ops,
            "graphs": self.graphs,
        })
    }

    fn text(&self) -> String {
        let line = |v: &Value| match &v.shape {
            Some(s) => format!("  {}: {} [{}]", v.name, v.dtype, s.join(", ")),
            None => format!("  {}: {}", v.name, v.dtype),
        };
        let mut out = vec![format!("inputs ({}):", self.inputs.len())];
        out.extend(self.inputs.iter().map(line));
        out.push(format!("outputs ({}):", self.outputs.len()));
        out.extend(self.outputs.iter().map(line));
        out.push(format!("operators ({} in {} graphs):", self.ops.values().sum::<u64>(), self.graphs));
        out.extend(self.ops.iter().map(|(op, n)| format!("  {op}: {n}")));
        out.join("\n")
    }
}
