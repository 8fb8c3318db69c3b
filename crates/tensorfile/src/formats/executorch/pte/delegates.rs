//! The program's XNNPACK delegate payloads decoded, and what they say of the named-data blobs
//! they use: each blob's dtype, shape and quantization, so that `ls` shows a weight as a
//! tensor rather than bytes. A payload that does not decode leaves its blobs untyped; why is
//! kept with the delegate ([`DelegateGraph::graph`]).

use std::collections::HashMap;

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::formats::executorch::xnnpack::{self, Constant, ConstantData, Graph, Quantization, Scales};
use crate::model::{DType, Entry, Kind, Layout, MetaValue, Storage, TensorInfo};
use crate::source::{Bytes, Source};

use super::program::Program;
use crate::formats::executorch::xnnpack::header;

/// One XNNPACK delegate of a program, decoded (or why not).
#[derive(Debug)]
pub struct DelegateGraph {
    /// The method the delegate belongs to.
    pub method: String,
    /// The delegate's index in the method's `delegates`.
    pub index: usize,
    /// The decoded payload, or why it could not be decoded.
    pub graph: Result<Graph>,
}

/// What a payload says of one named-data blob.
#[derive(Debug, Clone)]
pub(super) struct BlobType {
    /// Our dtype, if XNNPACK's datatype has one.
    dtype: Option<DType>,
    /// XNNPACK's datatype name.
    datatype: &'static str,
    shape: Vec<u64>,
    /// Bytes the dtype and shape take, when known.
    nbytes: Option<u64>,
    quantization: Option<Quantization>,
    /// For a blob of scales: the key of the weight they scale.
    scales_of: Option<String>,
    /// Which delegate said so: (method, index).
    delegate: (String, usize),
    /// Another delegate's different dtype and shape for the same key, said as text: the
    /// blob then stays untyped.
    conflict: Option<String>,
}

/// Record what a delegate says of blob `key`; a second delegate that says another dtype or
/// shape makes it a conflict (the first word does not silently win).
fn put(types: &mut HashMap<String, BlobType>, key: &str, said: BlobType) {
    match types.get_mut(key) {
        None => {
            types.insert(key.to_string(), said);
        }
        Some(known) if (known.dtype, known.datatype, &known.shape) != (said.dtype, said.datatype, &said.shape) => {
            let shape = said.shape.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
            known.conflict.get_or_insert_with(|| {
                format!("{} delegate {} declares it {} [{shape}]", said.delegate.0, said.delegate.1, said.datatype)
            });
        }
        Some(_) => {}
    }
}

/// Where one XNNPACK payload is.
enum Place {
    /// Inline in the program's flatbuffer.
    Inline(Bytes),
    /// An absolute range of the file (a segment).
    File(u64, u64),
}

/// A payload's flatbuffer: its bytes (inline payloads), or which of the ranges read it is.
enum Flatbuffer {
    Inline(Bytes),
    Read(usize),
}

/// Decode every XNNPACK payload of the program, reading by range only each payload's header
/// and flatbuffer (not its constant data): every header in one batch of reads, then every
/// flatbuffer. A delegate whose payload cannot be found or decoded gets its error; only a
/// failed read of the source fails the whole. The types of the blobs the payloads name come
/// with them (the first delegate naming a key gives its type).
pub(super) fn decode_all(program: &Program, src: &Source) -> Result<(Vec<DelegateGraph>, HashMap<String, BlobType>)> {
    let inline = program.root.tables("backend_delegate_data")?;
    let mut found: Vec<(String, usize, Result<Place>)> = Vec::new();
    for plan in program.root.tables("execution_plan")? {
        let method = plan.str("name")?.unwrap_or("").to_string();
        for (i, d) in plan.tables("delegates")?.iter().enumerate() {
            if d.str("id")? != Some(xnnpack::BACKEND_ID) {
                continue;
            }
            let place = (|| -> Result<Place> {
                let p = d.table("processed")?.ok_or_else(|| Error::invalid(Rule::MissingField, "no payload"))?;
                let index = p.uint("index")?;
                if p.int("location")? != 0 {
                    let (offset, size) = program.segment(index)?;
                    return Ok(Place::File(offset, size));
                }
                let data = usize::try_from(index).ok().and_then(|k| inline.get(k)).ok_or_else(|| {
                    Error::invalid(Rule::OutOfBounds, format!("inline delegate data {index} out of range"))
                })?;
                Ok(Place::Inline(data.bytes("data")?))
            })();
            found.push((method.clone(), i, place));
        }
    }
    // The heads of the payloads in segments, then their flatbuffers.
    let head_ranges: Vec<(u64, u64)> = found
        .iter()
        .filter_map(|(_, _, p)| match p {
            Ok(Place::File(offset, size)) => Some((*offset, (*size).min(u64::from(header::LENGTH)))),
            _ => None,
        })
        .collect();
    let mut heads = src.ranges(&head_ranges)?.into_iter();
    let mut located = Vec::with_capacity(found.len());
    let mut fb_ranges = Vec::new();
    for (method, index, place) in found {
        let at = match place {
            Ok(Place::Inline(bytes)) => xnnpack::locate(&bytes, bytes.len() as u64)
                .and_then(|(h, offset, len)| Ok((h, Flatbuffer::Inline(bytes.slice(offset, len)?)))),
            Ok(Place::File(offset, size)) => {
                let head = heads.next().ok_or_else(|| Error::invalid(Rule::Truncated, "payload head not read"))?;
                xnnpack::locate(&head, size).and_then(|(h, fb_offset, len)| {
                    // Within the segment (the header's ranges are checked against its size).
                    fb_ranges.push((checked::add(offset, fb_offset, "payload flatbuffer offset")?, len));
                    Ok((h, Flatbuffer::Read(fb_ranges.len() - 1)))
                })
            }
            Err(e) => Err(e),
        };
        located.push((method, index, at));
    }
    let fbs = src.ranges(&fb_ranges)?;
    let mut graphs = Vec::new();
    let mut types: HashMap<String, BlobType> = HashMap::new();
    for (method, index, at) in located {
        let graph = at
            .and_then(|(header, fb)| match fb {
                Flatbuffer::Inline(fb) => xnnpack::decode_flatbuffer(&fb, header),
                Flatbuffer::Read(k) => xnnpack::decode_flatbuffer(&fbs[k], header),
            })
            .map_err(|e| e.for_tensor(format!("{method} delegate {index} ({})", xnnpack::BACKEND_ID)));
        if let Ok(g) = &graph {
            for c in &g.constants {
                add_types(&mut types, c, (method.clone(), index));
            }
        }
        graphs.push(DelegateGraph { method, index, graph });
    }
    Ok((graphs, types))
}

fn add_types(types: &mut HashMap<String, BlobType>, c: &Constant, delegate: (String, usize)) {
    let Some(key) = c.data.key() else { return };
    let scales = match &c.quantization {
        Some(Quantization::PerChannel { scales, .. } | Quantization::Blockwise { scales, .. }) => Some(scales),
        _ => None,
    };
    if let Some(Scales::Stored { data: ConstantData::Named { key: scale_key, .. }, count, dtype }) = scales {
        let said = BlobType {
            dtype: Some(*dtype),
            datatype: if *dtype == DType::BFloat16 { "bf16" } else { "fp32" },
            shape: vec![*count],
            nbytes: dtype.nbytes(*count).ok(),
            quantization: None,
            scales_of: Some(key.to_string()),
            delegate: delegate.clone(),
            conflict: None,
        };
        put(types, scale_key, said);
    }
    let said = BlobType {
        dtype: c.dtype,
        datatype: c.datatype.name,
        shape: c.shape.clone(),
        nbytes: c.nbytes,
        quantization: c.quantization.clone(),
        scales_of: None,
        delegate,
        conflict: None,
    };
    put(types, key, said);
}

/// The entry of named-data blob `key` of `size` bytes at `offset`: a tensor of the payload's
/// dtype and shape when those take exactly `size` bytes, else the blob with what the payload
/// says of it (and, for a size that disagrees, the mismatch).
pub(super) fn blob_entry(key: &str, offset: u64, size: u64, t: Option<&BlobType>) -> Result<(TensorInfo, Storage)> {
    let storage = Storage::new(offset, size);
    let Some(t) = t else { return Ok((TensorInfo::blob(key, size), storage)) };
    let mut extra = vec![
        ("delegate".to_string(), MetaValue::from(xnnpack::BACKEND_ID)),
        ("delegate_method".into(), MetaValue::from(t.delegate.0.as_str())),
        ("delegate_index".into(), MetaValue::Int(t.delegate.1 as i128)),
        ("xnnpack_datatype".into(), MetaValue::from(t.datatype)),
    ];
    if let Some(of) = &t.scales_of {
        extra.push(("scales_of".into(), MetaValue::from(of.as_str())));
    }
    if let Some(q) = &t.quantization {
        extra.extend(quantization_fields(q));
    }
    if matches!(t.datatype, "qcint4" | "qbint4") {
        // The nibbles hold the signed 4-bit value plus 8.
        extra.push(("stored_zero_point".into(), MetaValue::Int(8)));
    }
    // Sub-byte dtypes (XNNPACK's 4-bit weights, uint4) stay blobs: the formats a program's
    // weights are converted to (.ptd, safetensors) hold no uint4, and a blob converts anywhere.
    let typed = match &t.conflict {
        Some(other) => {
            extra.push(("xnnpack_conflict".into(), MetaValue::Text(other.clone())));
            None
        }
        None => t.dtype,
    };
    let info = match (typed, t.nbytes) {
        (Some(dtype), Some(n)) if n == size && dtype.bits() >= 8 => {
            TensorInfo::new(key, Kind::Tensor, dtype, t.shape.clone(), Layout::Dense)?
        }
        (dtype, n) => {
            let shape = t.shape.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
            let what = dtype.map_or(t.datatype, |d| d.name());
            extra.push(("xnnpack_shape".into(), MetaValue::Text(format!("{what} [{shape}]"))));
            if let Some(n) = n.filter(|&n| n != size) {
                let why = format!("the XNNPACK payload declares {what} [{shape}] ({n} bytes), the blob holds {size}");
                extra.push(("xnnpack_mismatch".into(), MetaValue::Text(why)));
            }
            TensorInfo::blob(key, size)
        }
    };
    Ok((info.with_extra(extra), storage))
}

/// The fields `ls` shows for a quantization: `quantization` (its kind), and `channel_dim`,
/// `scales`, `scales_key`, `group_size`, `scale`, `zero_point` where they apply.
fn quantization_fields(q: &Quantization) -> Vec<(String, MetaValue)> {
    let mut out = vec![("quantization".to_string(), MetaValue::from(q.kind()))];
    let int = |v: i128| MetaValue::Int(v);
    let scales = |s: &Scales, out: &mut Vec<(String, MetaValue)>| {
        out.push(("scales".into(), int(i128::from(s.count()))));
        if let Scales::Stored { data: ConstantData::Named { key, .. }, .. } = s {
            out.push(("scales_key".into(), MetaValue::from(key.as_str())));
        }
    };
    match q {
        Quantization::PerTensor { scale, zero_point } => {
            out.push(("scale".into(), MetaValue::Float(*scale)));
            out.push(("zero_point".into(), int(i128::from(*zero_point))));
        }
        Quantization::PerChannel { channel_dim, scales: s } => {
            out.push(("channel_dim".into(), int(i128::from(*channel_dim))));
            scales(s, &mut out);
        }
        Quantization::Blockwise { channel_dim, group_size, scales: s } => {
            out.push(("channel_dim".into(), int(i128::from(*channel_dim))));
            out.push(("group_size".into(), int(i128::from(*group_size))));
            scales(s, &mut out);
        }
        Quantization::PerTokenDynamic { num_nonbatch_dims } => {
            out.push(("num_nonbatch_dims".into(), int(i128::from(*num_nonbatch_dims))));
        }
    }
    out
}

/// The check errors of the delegates: payloads that did not decode, and blobs whose size
/// disagrees with what their payload declares.
pub(super) fn problems(graphs: &[DelegateGraph], entries: &[Entry]) -> Vec<Error> {
    let mut out = Vec::new();
    for g in graphs {
        if let Err(e) = &g.graph {
            out.push(e.clone());
        }
    }
    for e in entries {
        if let Some((_, MetaValue::Text(t))) = e.info().extra().iter().find(|(k, _)| k == "xnnpack_mismatch") {
            out.push(Error::invalid(Rule::SizeMismatch, t.clone()).for_tensor(e.info().name()));
        }
    }
    out
}

#[cfg(test)]
mod conflict_tests {
    use super::*;

    fn said(dtype: DType, shape: Vec<u64>, index: usize) -> BlobType {
        BlobType {
            dtype: Some(dtype),
            datatype: "fp32",
            nbytes: dtype.nbytes(shape.iter().product()).ok(),
            shape,
            quantization: None,
            scales_of: None,
            delegate: ("forward".into(), index),
            conflict: None,
        }
    }

    #[test]
    fn two_delegates_typing_one_key_alike_agree_and_differently_leave_it_untyped() {
        let mut types = HashMap::new();
        put(&mut types, "k", said(DType::Float32, vec![8], 0));
        put(&mut types, "k", said(DType::Float32, vec![8], 1));
        assert_eq!(types["k"].conflict, None);
        let (info, _) = blob_entry("k", 0, 32, types.get("k")).unwrap();
        assert_eq!((info.kind(), info.dtype(), info.shape()), (Kind::Tensor, DType::Float32, &[8][..]));

        put(&mut types, "k", said(DType::Float32, vec![2, 4], 2));
        assert_eq!(types["k"].conflict.as_deref(), Some("forward delegate 2 declares it fp32 [2,4]"));
        let (info, _) = blob_entry("k", 0, 32, types.get("k")).unwrap();
        assert_eq!(info.kind(), Kind::Blob, "neither word wins");
        assert!(info.extra().iter().any(|(k, v)| k == "xnnpack_conflict" && v.as_text().unwrap().contains("[2,4]")));
    }
}
