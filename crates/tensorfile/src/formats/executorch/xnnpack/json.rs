//! The graph as JSON (what `tensorfile dump --delegates` prints), and its operator counts.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::model::{Constant, ConstantData, Graph, Node, Quantization, Scales, TensorValue};

impl Graph {
    /// How many nodes of each operator the graph runs (`Conv2d`, `FullyConnected`...).
    pub fn operator_counts(&self) -> BTreeMap<String, u64> {
        let mut counts = BTreeMap::new();
        for n in &self.nodes {
            *counts.entry(n.operator.clone()).or_insert(0) += 1;
        }
        counts
    }

    /// The whole graph as JSON: header, nodes, values, constants (where their bytes are,
    /// their dtype, shape and quantization) and operator counts. Non-finite scales are null.
    pub fn to_json(&self) -> Value {
        let header = self.header.map(|h| {
            json!({
                "length": h.length,
                "flatbuffer_offset": h.flatbuffer_offset,
                "flatbuffer_size": h.flatbuffer_size,
                "constant_data_offset": h.constant_data_offset,
                "constant_data_size": h.constant_data_size,
            })
        });
        json!({
            "identifier": self.identifier,
            "header": header,
            "version": self.version,
            "num_externs": self.num_externs,
            "input_ids": self.input_ids,
            "output_ids": self.output_ids,
            "operator_counts": self.operator_counts(),
            "nodes": self.nodes.iter().map(node_json).collect::<Vec<_>>(),
            "values": self.values.iter().map(value_json).collect::<Vec<_>>(),
            "constants": self.constants.iter().map(constant_json).collect::<Vec<_>>(),
        })
    }
}

fn node_json(n: &Node) -> Value {
    json!({
        "operator": n.operator,
        "inputs": n.inputs,
        "outputs": n.outputs,
        "flags": n.flags,
        "debug_handle": n.debug_handle,
    })
}

fn value_json(v: &TensorValue) -> Value {
    json!({
        "id": v.id,
        "datatype": v.datatype.name,
        "dtype": v.datatype.dtype_for(&v.dims).map(|d| d.name()),
        "dims": v.dims,
        "constant_buffer": v.constant_buffer,
        "external_id": v.external_id,
        "input": v.is_input,
        "output": v.is_output,
        "dq_datatype": v.dq_datatype.map(|d| d.name),
        "quantization": v.quantization.as_ref().map(quantization_json),
    })
}

fn constant_json(c: &Constant) -> Value {
    json!({
        "value": c.value,
        "datatype": c.datatype.name,
        "dtype": c.dtype.map(|d| d.name()),
        "shape": c.shape,
        "nbytes": c.nbytes,
        "data": data_json(&c.data),
        "quantization": c.quantization.as_ref().map(quantization_json),
    })
}

/// Where bytes are: `{"named_key", "size"}`, `{"offset", "size"}` or `{"buffer", "size"}`.
pub(crate) fn data_json(d: &ConstantData) -> Value {
    match d {
        ConstantData::Named { key, size } => json!({"named_key": key, "size": size}),
        ConstantData::Offset { offset, size } => json!({"offset": offset, "size": size}),
        ConstantData::Inline { index, size } => json!({"buffer": index, "size": size}),
    }
}

fn scales_json(s: &Scales) -> Value {
    match s {
        Scales::Inline(v) => json!({"count": v.len(), "values": v}),
        Scales::Stored { data, count, dtype } => {
            json!({"count": count, "dtype": dtype.name(), "data": data_json(data)})
        }
    }
}

/// A quantization as JSON, `kind` first (`per_tensor`, `per_channel`, `blockwise`,
/// `per_token_dynamic`).
pub(crate) fn quantization_json(q: &Quantization) -> Value {
    match q {
        Quantization::PerTensor { scale, zero_point } => {
            json!({"kind": "per_tensor", "scale": scale, "zero_point": zero_point})
        }
        Quantization::PerChannel { channel_dim, scales } => {
            json!({"kind": "per_channel", "channel_dim": channel_dim, "scales": scales_json(scales)})
        }
        Quantization::Blockwise { channel_dim, group_size, scales } => json!({
            "kind": "blockwise", "channel_dim": channel_dim, "group_size": group_size, "scales": scales_json(scales)
        }),
        Quantization::PerTokenDynamic { num_nonbatch_dims } => {
            json!({"kind": "per_token_dynamic", "num_nonbatch_dims": num_nonbatch_dims})
        }
    }
}

impl Quantization {
    /// `per_tensor`, `per_channel`, `blockwise` or `per_token_dynamic`.
    pub fn kind(&self) -> &'static str {
        match self {
            Quantization::PerTensor { .. } => "per_tensor",
            Quantization::PerChannel { .. } => "per_channel",
            Quantization::Blockwise { .. } => "blockwise",
            Quantization::PerTokenDynamic { .. } => "per_token_dynamic",
        }
    }
}
