//! tensorfile's zTensor 2 writer against the real one: each file of
//! `tests/fixtures/zt2_canonical/` was written in canonical form by pip `ztensor` 2.1.2
//! (`scripts/fixturegen/zt2_canonical.py`), and the same tensors, built from its record, must
//! come out of our writer byte for byte the same: dense tensors of every type, sparse COO and
//! CSR, ggml blocks, group quantization and MX, shared blobs, object and file attributes.

use crate::zt2_common;

use std::collections::BTreeMap;

use serde_json::Value as Json;
use tensorfile::formats::{WriteOptions, write_to_vec};
use tensorfile::model::quant::{BitOrder, GgmlType, GroupQuant, MxElement, MxQuant, Quant, ScaleForm, ZeroPoint};
use tensorfile::model::{Kind, MetaValue, SparseData, SparseFormat};
use tensorfile::source::Bytes;
use tensorfile::{DType, Format, Layout, TensorData, TensorInfo};

/// zTensor 2's (storage dtype, logical type) of our dtypes.
const TYPES: &[(DType, &str, Option<&str>)] = &[
    (DType::Float64, "f64", None),
    (DType::Float32, "f32", None),
    (DType::Float16, "f16", None),
    (DType::BFloat16, "bf16", None),
    (DType::Int64, "i64", None),
    (DType::Int32, "i32", None),
    (DType::Int16, "i16", None),
    (DType::Int8, "i8", None),
    (DType::UInt64, "u64", None),
    (DType::UInt32, "u32", None),
    (DType::UInt16, "u16", None),
    (DType::UInt8, "u8", None),
    (DType::Bool, "u8", Some("bool")),
    (DType::Float8E4M3Fn, "u8", Some("f8_e4m3fn")),
    (DType::Float8E5M2, "u8", Some("f8_e5m2")),
    (DType::Float8E4M3Fnuz, "u8", Some("f8_e4m3fnuz")),
    (DType::Float8E5M2Fnuz, "u8", Some("f8_e5m2fnuz")),
    (DType::Float8E8M0Fnu, "u8", Some("f8_e8m0")),
    (DType::Float4E2M1Fn, "u8", Some("f4_e2m1")),
    (DType::Complex64, "f32", Some("complex64")),
    (DType::Complex128, "f64", Some("complex128")),
];

struct RecordPart {
    dtype: DType,
    bytes: Vec<u8>,
}

fn parts(object: &Json) -> BTreeMap<String, RecordPart> {
    let parts = object["parts"].as_object().expect("parts");
    parts
        .iter()
        .map(|(name, p)| {
            let (storage, logical) = (p["dtype"].as_str().unwrap(), p["type"].as_str());
            let dtype = TYPES
                .iter()
                .find(|(_, s, l)| *s == storage && *l == logical)
                .unwrap_or_else(|| panic!("no dtype for {storage}/{logical:?}"))
                .0;
            (name.clone(), RecordPart { dtype, bytes: hex::decode(p["hex"].as_str().unwrap()).unwrap() })
        })
        .collect()
}

/// A record value as metadata: `{"$float": "nan"}` and its kin as floats.
fn meta(v: &Json) -> MetaValue {
    match v {
        Json::Object(o) if o.len() == 1 && o.contains_key("$float") => MetaValue::Float(match o["$float"].as_str() {
            Some("nan") => f64::NAN,
            Some("inf") => f64::INFINITY,
            _ => f64::NEG_INFINITY,
        }),
        Json::Object(o) => MetaValue::Map(o.iter().map(|(k, v)| (MetaValue::Text(k.clone()), meta(v))).collect()),
        Json::Array(a) => MetaValue::Array(a.iter().map(meta).collect()),
        other => MetaValue::from_json(other),
    }
}

fn uint(attrs: &Json, key: &str) -> u64 {
    attrs[key].as_u64().unwrap_or_else(|| panic!("attribute {key}"))
}

fn text<'a>(attrs: &'a Json, key: &str) -> &'a str {
    attrs[key].as_str().unwrap_or_else(|| panic!("attribute {key}"))
}

/// The parameters of a `zt.quant_group/1` object, from its attributes and parts.
fn group_quant(attrs: &Json, parts: &BTreeMap<String, RecordPart>) -> GroupQuant {
    let zero = &attrs["zero_point"];
    let zero_point = match text(zero, "form") {
        "none" => ZeroPoint::None,
        "implied" => ZeroPoint::Implied(zero["value"].as_i64().unwrap()),
        _ => ZeroPoint::Stored { packed: text(zero, "packing") == "same_as_data", dtype: parts["zeros"].dtype },
    };
    GroupQuant {
        bits: uint(attrs, "bits") as u8,
        group_size: uint(attrs, "group_size"),
        axis: uint(attrs, "axis") as u8,
        word: parts["data"].dtype,
        order: if text(&attrs["packing"], "order") == "lsb_first" { BitOrder::LsbFirst } else { BitOrder::MsbFirst },
        scale_form: match text(attrs, "scale_form") {
            "f32_factors" => ScaleForm::F32Factors,
            "f16_factors" => ScaleForm::F16Factors,
            _ => ScaleForm::E8m0Exponent,
        },
        scale_dtype: parts["scales"].dtype,
        zero_point,
    }
}

/// The tensor a record's object describes, as the model holds it.
fn tensor(object: &Json) -> (TensorInfo, TensorData) {
    let name = object["name"].as_str().unwrap();
    let shape: Vec<u64> = object["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap()).collect();
    let attrs = &object["attributes"];
    let parts = parts(object);
    let take = |p: &str| Bytes::from_vec(parts.get(p).unwrap_or_else(|| panic!("{name}: no part {p}")).bytes.clone());
    let quantized = |q: Quant, parts: Vec<(&'static str, Bytes)>| {
        let layout = Layout::Quantized(q.clone());
        (
            TensorInfo::new(name, Kind::Tensor, DType::Float32, shape.clone(), layout).unwrap(),
            TensorData::quantized(q, parts),
        )
    };
    let layout = object["layout"].as_str().unwrap();
    match layout {
        "dense" => {
            let dtype = parts["data"].dtype;
            let fields =
                attrs.as_object().map_or(Vec::new(), |o| o.iter().map(|(k, v)| (k.clone(), meta(v))).collect());
            (TensorInfo::dense(name, dtype, shape.clone()).with_extra(fields), TensorData::dense(take("data")))
        }
        "zt.sparse_coo/1" | "zt.sparse_csr/1" => {
            let dtype = parts["values"].dtype;
            let u64s =
                |b: Bytes| b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect::<Vec<_>>();
            let (format, indptr, indices) = if layout == "zt.sparse_coo/1" {
                (SparseFormat::Coo, vec![], u64s(take("coords")))
            } else {
                (SparseFormat::Csr, u64s(take("indptr")), u64s(take("indices")))
            };
            let nnz = if format == SparseFormat::Coo {
                indices.len() as u64 / shape.len() as u64
            } else {
                indices.len() as u64
            };
            let sparse = SparseData::new(format, nnz, indptr, indices, take("values")).unwrap();
            let info =
                TensorInfo::new(name, Kind::Tensor, dtype, shape.clone(), Layout::Sparse { format, nnz }).unwrap();
            (info, TensorData::sparse(sparse))
        }
        "zt.quant_group/1" => {
            let g = group_quant(attrs, &parts);
            let mut stored = vec![("data", take("data")), ("scales", take("scales"))];
            if matches!(g.zero_point, ZeroPoint::Stored { .. }) {
                stored.push(("zeros", take("zeros")));
            }
            quantized(Quant::Group(g), stored)
        }
        "zt.mx/1" => {
            let element = match parts["data"].dtype {
                DType::Float4E2M1Fn => MxElement::F4E2M1,
                DType::Float8E4M3Fn => MxElement::F8E4M3,
                DType::Float8E5M2 => MxElement::F8E5M2,
                _ => MxElement::Int8,
            };
            let axis = attrs["axis"].as_u64().unwrap_or(shape.len() as u64 - 1) as u8;
            let m = MxQuant { element, block_size: uint(attrs, "block_size"), axis };
            quantized(Quant::Mx(m), vec![("data", take("data")), ("scales", take("scales"))])
        }
        gguf => {
            let t =
                gguf.strip_prefix("gguf.").and_then(|t| t.strip_suffix("/1")).and_then(GgmlType::from_name).unwrap();
            assert_eq!(
                (uint(attrs, "elems_per_block"), uint(attrs, "block_bytes")),
                (t.block_elements(), t.block_bytes())
            );
            quantized(Quant::Ggml(t), vec![("blocks", take("data"))])
        }
    }
}

#[test]
fn our_writer_writes_what_ztensor_2_writes() {
    let dir = zt2_common::fixture("zt2_canonical");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("zt") {
            continue;
        }
        let record: Json =
            serde_json::from_slice(&std::fs::read(path.with_extension("zt.expected.json")).unwrap()).unwrap();
        let tensors: Vec<_> = record["objects"].as_array().unwrap().iter().map(tensor).collect();
        let metadata = record["attributes"]
            .as_object()
            .map_or(Vec::new(), |o| o.iter().map(|(k, v)| (k.clone(), meta(v))).collect());
        // Handed over in the record's order reversed: the writer's order is the plan's,
        // which write_order makes canonical.
        let infos: Vec<TensorInfo> = tensors.iter().rev().map(|(i, _)| i.clone()).collect();
        let ordered: Vec<_> =
            Format::Zt2.write_order(&infos).into_iter().map(|k| tensors[tensors.len() - 1 - k].clone()).collect();
        let ours = write_to_vec(Format::Zt2, &ordered, &WriteOptions { metadata, ..WriteOptions::default() }).unwrap();
        let theirs = std::fs::read(&path).unwrap();
        if ours != theirs {
            let at = ours.iter().zip(&theirs).position(|(a, b)| a != b).unwrap_or(ours.len().min(theirs.len()));
            panic!(
                "{}: {} bytes written, ztensor wrote {}; first difference at byte {at}",
                path.display(),
                ours.len(),
                theirs.len()
            );
        }
        zt2_common::Zt2File::parse(ours).check_canonical();
        checked += 1;
    }
    assert_eq!(checked, 5, "every fixture of {}", dir.display());
}
