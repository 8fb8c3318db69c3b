//! Building the [`Graph`] from the flatbuffer's tables, with every id, index, rank and size
//! checked.

use std::collections::HashSet;

use super::datatype::Datatype;
use super::header::PayloadHeader;
use super::model::{Constant, ConstantData, Graph, INVALID_ID, Node, Quantization, Scales, TensorValue};
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::flatbuf::{Table, Value};
use crate::limits::MAX_RANK;
use crate::model::DType;

/// The value flags the runtime accepts: external input (1) and external output (2).
const KNOWN_VALUE_FLAGS: u32 = 0b11;

fn bad(rule: Rule, detail: String) -> Error {
    Error::invalid(rule, format!("XNNPACK graph: {detail}"))
}

fn u32_of(t: &Table, field: &str) -> Result<u32> {
    let v = t.uint(field)?;
    u32::try_from(v).map_err(|_| bad(Rule::BadField, format!("{}.{field} {v} exceeds 32 bits", t.def.name)))
}

/// Build the graph from the decoded root table. `constant_data` is the header's (offset, size)
/// of the constant data, when the payload has a header.
pub(super) fn build(
    root: &Table,
    identifier: String,
    header: Option<PayloadHeader>,
    constant_data: Option<(u64, u64)>,
) -> Result<Graph> {
    let table = ConstantTable::new(root, constant_data)?;
    let mut values = Vec::new();
    for (i, v) in root.tables("xvalues")?.iter().enumerate() {
        values.push(tensor_value(v, &table).map_err(|e| e.for_tensor(format!("xvalues[{i}]")))?);
    }
    let mut ids = HashSet::with_capacity(values.len());
    for v in &values {
        if !ids.insert(v.id) {
            return Err(bad(Rule::DuplicateName, format!("value id {} appears twice", v.id)));
        }
    }
    let known = |id: u32, what: &str| -> Result<u32> {
        if ids.contains(&id) {
            Ok(id)
        } else {
            Err(bad(Rule::OutOfBounds, format!("{what} refers to value id {id}, which no value has")))
        }
    };
    let mut nodes = Vec::new();
    for (i, n) in root.tables("xnodes")?.iter().enumerate() {
        let node = node(n).map_err(|e| e.for_tensor(format!("xnodes[{i}]")))?;
        for &id in node.inputs.iter().chain(&node.outputs) {
            known(id, &format!("node {i} ({})", node.operator))?;
        }
        nodes.push(node);
    }
    let id_list = |field: &str| -> Result<Vec<u32>> {
        let mut out = Vec::new();
        for v in root.ints(field)? {
            let id = u32::try_from(v).map_err(|_| bad(Rule::BadField, format!("{field} holds {v}")))?;
            out.push(known(id, field)?);
        }
        Ok(out)
    };
    let input_ids = id_list("input_ids")?;
    let output_ids = id_list("output_ids")?;
    let mut constants = Vec::new();
    for v in &values {
        if v.constant_buffer == 0 {
            continue;
        }
        let data = table.get(v.constant_buffer).map_err(|e| e.for_tensor(format!("value {}", v.id)))?;
        constants.push(Constant {
            value: v.id,
            datatype: v.datatype,
            dtype: v.datatype.dtype_for(&v.dims),
            shape: v.dims.clone(),
            nbytes: v.datatype.nbytes(&v.dims)?,
            data,
            quantization: v.quantization.clone(),
        });
    }
    Ok(Graph {
        identifier,
        header,
        version: root.str("version")?.unwrap_or("").to_string(),
        nodes,
        values,
        num_externs: u32_of(root, "num_externs")?,
        input_ids,
        output_ids,
        constants,
    })
}

fn datatype_field(t: &Table, field: &str) -> Result<Datatype> {
    Datatype::from_number(t.int(field)?)
}

fn tensor_value(v: &Table, table: &ConstantTable) -> Result<TensorValue> {
    let u = v.union("xvalue_union")?.ok_or_else(|| bad(Rule::MissingField, "a value without a tensor".into()))?;
    let body = u.value.as_deref().ok_or_else(|| bad(Rule::MissingField, "a value union without its table".into()))?;
    let (tensor, quant) = match u.variant() {
        "XNNTensorValue" => (body, None),
        "XNNQuantizedTensorValue" => {
            let t = body
                .table("tensor_value")?
                .ok_or_else(|| bad(Rule::MissingField, "a quantized value without its tensor".into()))?;
            (t, body.union("quant_params")?)
        }
        other => return Err(bad(Rule::BadField, format!("unknown value kind {other}"))),
    };
    let datatype = datatype_field(tensor, "datatype")?;
    let dims: Vec<u64> = tensor.ints("dims")?.into_iter().map(|d| d as u64).collect();
    if dims.len() > MAX_RANK {
        return Err(bad(Rule::BadField, format!("rank {} exceeds {MAX_RANK}", dims.len())));
    }
    // The byte size must be computable (an overflow is a broken value, not a big one).
    datatype.nbytes(&dims)?;
    let flags = u32_of(tensor, "flags")?;
    if flags & !KNOWN_VALUE_FLAGS != 0 {
        return Err(bad(Rule::BadField, format!("value flags {flags:#x} hold unknown bits")));
    }
    let dq = tensor.int("dq_datatype")?;
    let quantization = match quant {
        Some(q) => quantization(q, &dims, table)?,
        None => None,
    };
    Ok(TensorValue {
        id: u32_of(tensor, "id_out")?,
        datatype,
        dims,
        constant_buffer: u32_of(tensor, "constant_buffer_idx")?,
        external_id: u32_of(tensor, "external_id")?,
        is_input: flags & 1 != 0,
        is_output: flags & 2 != 0,
        dq_datatype: if dq == 0 { None } else { Some(Datatype::from_number(dq)?) },
        quantization,
    })
}

/// Quantization as the payload states it, with where scales in constant data are.
fn quantization(q: &crate::flatbuf::Union, dims: &[u64], table: &ConstantTable) -> Result<Option<Quantization>> {
    let Some(t) = q.value.as_deref() else { return Ok(None) };
    let inline = |t: &Table| -> Result<Vec<f64>> {
        t.vector("scale")?
            .iter()
            .map(|v| match v {
                Value::Float(f) => Ok(*f),
                _ => Err(bad(Rule::BadField, "a scale that is not a float".into())),
            })
            .collect()
    };
    let channel_dim = |t: &Table| -> Result<u32> {
        let d = t.int("channel_dim")?;
        match usize::try_from(d) {
            Ok(i) if i < dims.len() => Ok(i as u32),
            _ => Err(bad(Rule::BadField, format!("channel_dim {d} outside the value's {} dimensions", dims.len()))),
        }
    };
    let scales = |t: &Table, count: u64, dtype: DType| -> Result<Scales> {
        let index = u32_of(t, "scale_buffer_idx")?;
        if index == 0 {
            return Ok(Scales::Inline(inline(t)?));
        }
        Ok(Scales::Stored { data: table.get(index)?, count, dtype })
    };
    Ok(Some(match q.variant() {
        "PerTensorQuant" => Quantization::PerTensor { scale: t.float("scale")?, zero_point: t.int("zero_point")? },
        "PerChannelQuant" => {
            let dim = channel_dim(t)?;
            let count = match u64::from(u32_of(t, "num_scales")?) {
                0 => dims[dim as usize],
                n => n,
            };
            Quantization::PerChannel { channel_dim: dim, scales: scales(t, count, DType::Float32)? }
        }
        "PerChannelGroupQuant" => {
            let group = t.int("group_size")?;
            let group_size = u64::try_from(group)
                .ok()
                .filter(|&g| g > 0)
                .ok_or_else(|| bad(Rule::BadField, format!("group_size {group}")))?;
            let count = u64::from(u32_of(t, "num_scales")?);
            let scales = scales(t, count, DType::BFloat16)?;
            // As the runtime checks: one scale per block of each row of a [out, in] weight.
            let [out, inner] = dims[..] else {
                return Err(bad(Rule::BadField, format!("blockwise scales on a value of rank {}", dims.len())));
            };
            let want = checked::mul(out, inner, "blockwise weight size")? / group_size;
            if scales.count() != want {
                return Err(bad(
                    Rule::SizeMismatch,
                    format!(
                        "{} blockwise scales for [{out}, {inner}] in blocks of {group_size} (want {want})",
                        scales.count()
                    ),
                ));
            }
            Quantization::Blockwise { channel_dim: channel_dim(t)?, group_size, scales }
        }
        "PerTokenDynamicQuant" => Quantization::PerTokenDynamic { num_nonbatch_dims: t.int("num_nonbatch_dims")? },
        other => return Err(bad(Rule::BadField, format!("unknown quantization {other}"))),
    }))
}

/// The payload's constant table: `constant_data` entries (payloads with a header) or the
/// deprecated inline `constant_buffer` (those without), as the runtime picks.
struct ConstantTable<'a> {
    entries: Vec<&'a Table>,
    /// Bytes of constant data, with a header; `None`: the inline buffers.
    region: Option<u64>,
}

impl<'a> ConstantTable<'a> {
    fn new(root: &'a Table, constant_data: Option<(u64, u64)>) -> Result<ConstantTable<'a>> {
        Ok(match constant_data {
            Some((_, size)) => ConstantTable { entries: root.tables("constant_data")?, region: Some(size) },
            None => ConstantTable { entries: root.tables("constant_buffer")?, region: None },
        })
    }

    fn get(&self, index: u32) -> Result<ConstantData> {
        let what = if self.region.is_some() { "constant_data" } else { "constant_buffer" };
        let entry = self.entries.get(index as usize).ok_or_else(|| {
            bad(Rule::OutOfBounds, format!("{what} index {index} out of range ({} entries)", self.entries.len()))
        })?;
        let Some(region) = self.region else {
            return Ok(ConstantData::Inline { index, size: entry.bytes("storage")?.len() as u64 });
        };
        let size = entry.uint("size")?;
        if entry.has("named_key") {
            return Ok(ConstantData::Named { key: entry.req_str("named_key")?.to_string(), size });
        }
        let offset = entry.uint("offset")?;
        if offset.checked_add(size).is_none_or(|end| end > region) {
            return Err(bad(
                Rule::OutOfBounds,
                format!("constant {index} at {offset} of {size} bytes runs past the constant data ({region} bytes)"),
            ));
        }
        Ok(ConstantData::Offset { offset, size })
    }
}

/// One node: its operator and the ids it reads and writes, from the union's table fields
/// ending in `_id` (`output*` fields are outputs; ids equal to [`INVALID_ID`] are absent).
fn node(n: &Table) -> Result<Node> {
    let u = n.union("xnode_union")?.ok_or_else(|| bad(Rule::MissingField, "a node without an operator".into()))?;
    let body = u.value.as_deref().ok_or_else(|| bad(Rule::MissingField, "a node union without its table".into()))?;
    let variant = u.variant();
    let operator = variant.strip_prefix("XNN").unwrap_or(variant).to_string();
    // ConcatenateN reads only its first N inputs.
    let cat_inputs: Option<usize> = operator.strip_prefix("Concatenate").and_then(|n| n.parse().ok());
    let (mut inputs, mut outputs) = (Vec::new(), Vec::new());
    for f in &body.def.fields {
        let Some(stem) = f.name.strip_suffix("_id") else { continue };
        if let (Some(n), Some(k)) = (cat_inputs, stem.strip_prefix("input").and_then(|k| k.parse::<usize>().ok())) {
            if k > n {
                continue;
            }
        }
        let id = u32_of(body, &f.name)?;
        if id == INVALID_ID {
            continue;
        }
        if stem.starts_with("output") { outputs.push(id) } else { inputs.push(id) }
    }
    let flags = if body.def.field_index("flags").is_some() { u32_of(body, "flags")? } else { 0 };
    Ok(Node { operator, inputs, outputs, flags, debug_handle: u32_of(n, "debug_handle")? })
}
