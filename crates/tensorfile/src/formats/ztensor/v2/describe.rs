//! How a tensor of the model is stated as a zTensor 2 object: its layout id, attributes and
//! parts, each part with its storage dtype and logical type (spec §3.3, §4, §5, Appendix A,
//! and the layout profiles). Everything is decided from the plan, before any byte is written.
//!
//! - dense: `dense`, one `data` part;
//! - sparse COO: `zt.sparse_coo/1`, `coords` (`u64`, one dimension after another) and `values`;
//! - sparse CSR: `zt.sparse_csr/1`, `indptr` and `indices` (`u64`) and `values`;
//! - ggml blocks: `gguf.<type>/1`, one `data` part of `u8` holding the blocks verbatim, with
//!   `elems_per_block` and `block_bytes`;
//! - affine group quantization: `zt.quant_group/1` with every attribute the profile requires;
//! - OCP Microscaling: `zt.mx/1`, `data` and `scales` (`f8_e8m0`).
//!
//! A tensor's extra fields become the object's attributes.

use super::canonical::{Cbor, check_name};
use crate::checked;
use crate::error::{Error, Result};
use crate::limits::MAX_RANK;
use crate::model::quant::{BLOCKS, BitOrder, GgmlType, GroupQuant, MxElement, MxQuant, Quant, ScaleForm, ZeroPoint};
use crate::model::{DATA, DType, INDICES, INDPTR, Kind, Layout, SparseFormat, TensorInfo, VALUES};

/// A storage dtype and, when there is one, a logical type (`("u8", Some("bool"))`).
pub(crate) type Typed = (&'static str, Option<&'static str>);

/// An object's attributes, in the order given.
type Attributes = Vec<(String, Cbor)>;

/// One part of an object as the manifest states it; where its bytes go is decided when they
/// arrive.
#[derive(Debug, Clone)]
pub(crate) struct PartPlan {
    /// The part's name in the file (`data`, `scales`, `coords`...).
    pub name: &'static str,
    /// The name of the part of [`crate::model::TensorData`] that holds its bytes.
    pub source: &'static str,
    /// The storage dtype (`u8`, `f32`...).
    pub dtype: &'static str,
    /// The logical type, when the part has one (`bool`, `f8_e4m3fn`...).
    pub logical: Option<&'static str>,
    /// Its size in bytes.
    pub nbytes: u64,
}

/// A tensor as a zTensor 2 object, before its bytes are placed.
#[derive(Debug, Clone)]
pub(crate) struct ObjectPlan {
    /// `dense` or a layout profile id.
    pub layout: String,
    /// The object's attributes: the profile's, then the tensor's extra fields.
    pub attributes: Vec<(String, Cbor)>,
    /// Its parts, in name order (the order canonical form places their blobs in).
    pub parts: Vec<PartPlan>,
}

/// The ggml types the `gguf.<type>/1` family registers (profiles/gguf.md).
const GGUF_PROFILES: &[GgmlType] = &[
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q8_1,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::Q8_K,
    GgmlType::IQ1_S,
    GgmlType::IQ1_M,
    GgmlType::IQ2_XXS,
    GgmlType::IQ2_XS,
    GgmlType::IQ2_S,
    GgmlType::IQ3_XXS,
    GgmlType::IQ3_S,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
    GgmlType::MXFP4,
];

/// The storage dtype and logical type zTensor 2 stores elements of `d` as; `None` for a dtype
/// it registers no type for (complex32, float6, float4 packed by torch, quantized torch
/// dtypes, bits16).
pub(crate) fn storage(d: DType) -> Option<Typed> {
    Some(match d {
        DType::UInt8 => ("u8", None),
        DType::Int8 => ("i8", None),
        DType::UInt16 => ("u16", None),
        DType::Int16 => ("i16", None),
        DType::UInt32 => ("u32", None),
        DType::Int32 => ("i32", None),
        DType::UInt64 => ("u64", None),
        DType::Int64 => ("i64", None),
        DType::Float16 => ("f16", None),
        DType::BFloat16 => ("bf16", None),
        DType::Float32 => ("f32", None),
        DType::Float64 => ("f64", None),
        DType::Bool => ("u8", Some("bool")),
        DType::Complex64 => ("f32", Some("complex64")),
        DType::Complex128 => ("f64", Some("complex128")),
        DType::Float8E4M3Fn => ("u8", Some("f8_e4m3fn")),
        DType::Float8E5M2 => ("u8", Some("f8_e5m2")),
        DType::Float8E4M3Fnuz => ("u8", Some("f8_e4m3fnuz")),
        DType::Float8E5M2Fnuz => ("u8", Some("f8_e5m2fnuz")),
        DType::Float8E8M0Fnu => ("u8", Some("f8_e8m0")),
        DType::Float4E2M1Fn => ("u8", Some("f4_e2m1")),
        _ => return None,
    })
}

fn storage_of(d: DType, what: &str) -> Result<Typed> {
    storage(d).ok_or_else(|| Error::unsupported(format!("zTensor 2 registers no type for {what} of {d}")))
}

/// Whether a zTensor 2 file can hold `info`; the error says why not.
pub(crate) fn check_supported(info: &TensorInfo) -> Result<()> {
    describe(info).map(|_| ())
}

/// `info` as a zTensor 2 object.
pub(crate) fn describe(info: &TensorInfo) -> Result<ObjectPlan> {
    if info.kind() == Kind::Blob {
        return Err(Error::unsupported("zTensor 2 files hold tensors, not opaque blobs"));
    }
    check_name("object name", info.name())?;
    let shape = info.shape();
    if shape.len() > MAX_RANK {
        return Err(Error::unsupported(format!("zTensor 2 objects have at most {MAX_RANK} dimensions")));
    }
    checked::numel(shape)?;
    let sizes = info.parts()?;
    let size_of = |source: &str| -> Result<u64> {
        sizes
            .iter()
            .find(|p| p.name() == source)
            .ok_or_else(|| Error::unsupported(format!("no {source} part in a {} tensor", info.layout().describe())))?
            .nbytes()
    };
    let part = |name, source, (dtype, logical): Typed| -> Result<PartPlan> {
        Ok(PartPlan { name, source, dtype, logical, nbytes: size_of(source)? })
    };
    let (layout, attributes, mut parts) = match info.layout() {
        l if l.reads_dense() => {
            ("dense".to_string(), Vec::new(), vec![part(DATA, DATA, storage_of(info.dtype(), "elements")?)?])
        }
        Layout::Sparse { format: SparseFormat::Coo, .. } => {
            if shape.is_empty() {
                return Err(Error::unsupported("zTensor 2 sparse COO tensors have at least one dimension"));
            }
            let values = part(VALUES, VALUES, storage_of(info.dtype(), "values")?)?;
            ("zt.sparse_coo/1".to_string(), Vec::new(), vec![part("coords", INDICES, ("u64", None))?, values])
        }
        Layout::Sparse { format: SparseFormat::Csr, .. } => {
            if shape.len() != 2 {
                return Err(Error::unsupported("zTensor 2 sparse CSR tensors have two dimensions"));
            }
            let values = part(VALUES, VALUES, storage_of(info.dtype(), "values")?)?;
            let indices = part(INDICES, INDICES, ("u64", None))?;
            ("zt.sparse_csr/1".to_string(), Vec::new(), vec![part(INDPTR, INDPTR, ("u64", None))?, indices, values])
        }
        Layout::Quantized(Quant::Ggml(t)) => {
            if !GGUF_PROFILES.contains(t) {
                return Err(Error::unsupported(format!(
                    "zTensor 2 registers no gguf.<type>/1 profile for {}",
                    t.name()
                )));
            }
            let attributes = vec![
                ("elems_per_block".to_string(), Cbor::Uint(t.block_elements())),
                ("block_bytes".to_string(), Cbor::Uint(t.block_bytes())),
            ];
            (format!("gguf.{}/1", t.lower_name()), attributes, vec![part(DATA, BLOCKS, ("u8", None))?])
        }
        Layout::Quantized(Quant::Group(g)) => {
            let (attributes, dtypes) = group_quant(g, sizes.iter().find(|p| p.name() == crate::model::quant::SCALES))?;
            let parts = dtypes.into_iter().map(|(name, ty)| part(name, name, ty)).collect::<Result<Vec<_>>>()?;
            ("zt.quant_group/1".to_string(), attributes, parts)
        }
        Layout::Quantized(Quant::Mx(m)) => {
            let (attributes, data) = mx(m, shape.len());
            let scales = part("scales", "scales", ("u8", Some("f8_e8m0")))?;
            ("zt.mx/1".to_string(), attributes, vec![part(DATA, DATA, data)?, scales])
        }
        other => return Err(Error::unsupported(format!("zTensor 2 has no layout for {}", other.describe()))),
    };
    parts.sort_by(|a, b| a.name.cmp(b.name));
    let attributes = with_fields(attributes, info.extra(), &layout)?;
    // An object's attributes sit three levels below the manifest's root: found too deep now
    // rather than after the data is written.
    let nested = Cbor::Array(vec![Cbor::Array(vec![Cbor::Array(vec![Cbor::map(attributes.clone())])])]);
    nested.encode("the tensor's fields")?;
    Ok(ObjectPlan { layout, attributes, parts })
}

/// The profile's attributes followed by the tensor's fields: a field that repeats a profile
/// attribute with the same value is the same fact (a file read from zTensor 2); with another
/// value it is refused.
fn with_fields(
    mut attributes: Vec<(String, Cbor)>,
    extra: &[(String, crate::model::MetaValue)],
    layout: &str,
) -> Result<Vec<(String, Cbor)>> {
    for (key, value) in extra {
        check_name("attribute key", key)?;
        let value = Cbor::from_meta(value)?;
        match attributes.iter().find(|(k, _)| k == key) {
            Some((_, same)) if *same == value => {}
            Some(_) => {
                return Err(Error::unsupported(format!(
                    "the field {key:?} is an attribute of the {layout} layout, with another value"
                )));
            }
            None => attributes.push((key.clone(), value)),
        }
    }
    Ok(attributes)
}

/// The `zt.quant_group/1` attributes of `g`, and its parts' names and types; `scales` is the
/// model's scales part (for the packed zero points' size).
fn group_quant(
    g: &GroupQuant,
    scales: Option<&crate::model::PartSpec>,
) -> Result<(Attributes, Vec<(&'static str, Typed)>)> {
    let word = unsigned_word(g.word)?;
    let per_word = g.word.bits() / u64::from(g.bits);
    let scale = match g.scale_form {
        ScaleForm::E8m0Exponent if matches!(g.scale_dtype, DType::UInt8 | DType::Float8E8M0Fnu) => {
            ("u8", Some("f8_e8m0"))
        }
        ScaleForm::F32Factors
            if matches!(g.scale_dtype, DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64) =>
        {
            storage_of(g.scale_dtype, "scales")?
        }
        ScaleForm::F16Factors if matches!(g.scale_dtype, DType::Float16 | DType::BFloat16) => {
            storage_of(g.scale_dtype, "scales")?
        }
        form => {
            return Err(Error::unsupported(format!(
                "zTensor 2 group quantization has no {} scales read as {form:?}",
                g.scale_dtype
            )));
        }
    };
    let mut parts = vec![(DATA, storage_of(g.word, "codes")?), ("scales", scale)];
    let zero_point = match g.zero_point {
        ZeroPoint::None => Cbor::map([("form", Cbor::text("none"))]),
        ZeroPoint::Implied(value) => Cbor::map([
            ("form", Cbor::text("implied")),
            ("value", Cbor::from_meta(&crate::model::MetaValue::Int(i128::from(value)))?),
        ]),
        ZeroPoint::Stored { packed: true, dtype } => {
            let groups = scales.map_or(0, |s| s.shape().iter().product::<u64>());
            if dtype != g.word || groups % per_word != 0 {
                return Err(Error::unsupported(format!(
                    "zTensor 2 packs zero points exactly like the codes: {} words of {per_word}, and {groups} of them",
                    g.word
                )));
            }
            parts.push(("zeros", storage_of(dtype, "zero points")?));
            Cbor::map([("form", Cbor::text("tensor")), ("packing", Cbor::text("same_as_data"))])
        }
        ZeroPoint::Stored { packed: false, dtype } => {
            let ty = storage_of(dtype, "zero points")?;
            if ty.1.is_some() {
                return Err(Error::unsupported(format!("zTensor 2 has no plain zero points of {dtype}")));
            }
            parts.push(("zeros", ty));
            Cbor::map([("form", Cbor::text("tensor")), ("packing", Cbor::text("plain"))])
        }
    };
    let order = match g.order {
        BitOrder::LsbFirst => "lsb_first",
        BitOrder::MsbFirst => "msb_first",
    };
    let attributes = vec![
        ("bits".to_string(), Cbor::Uint(u64::from(g.bits))),
        ("group_size".to_string(), Cbor::Uint(g.group_size)),
        ("axis".to_string(), Cbor::Uint(u64::from(g.axis))),
        (
            "packing".to_string(),
            Cbor::map([("word", Cbor::text(word)), ("order", Cbor::text(order)), ("per_word", Cbor::Uint(per_word))]),
        ),
        (
            "scale_form".to_string(),
            Cbor::text(match g.scale_form {
                ScaleForm::F32Factors => "f32_factors",
                ScaleForm::F16Factors => "f16_factors",
                ScaleForm::E8m0Exponent => "e8m0_exponent",
            }),
        ),
        ("zero_point".to_string(), zero_point),
    ];
    Ok((attributes, parts))
}

/// The `packing.word` of codes stored as `d`: the unsigned integer of its width.
fn unsigned_word(d: DType) -> Result<&'static str> {
    Ok(match d {
        DType::UInt8 | DType::Int8 => "u8",
        DType::UInt16 | DType::Int16 => "u16",
        DType::UInt32 | DType::Int32 => "u32",
        DType::UInt64 | DType::Int64 => "u64",
        other => {
            return Err(Error::unsupported(format!(
                "zTensor 2 packs group-quantized codes in integer words, not {other}"
            )));
        }
    })
}

/// The `zt.mx/1` attributes of `m` (for a tensor of `rank` dimensions), and the type of its
/// `data` part. `axis` is left out when it is the profile's default, the last dimension.
fn mx(m: &MxQuant, rank: usize) -> (Attributes, Typed) {
    let data = match m.element {
        MxElement::F4E2M1 => ("u8", Some("f4_e2m1")),
        MxElement::F8E4M3 => ("u8", Some("f8_e4m3fn")),
        MxElement::F8E5M2 => ("u8", Some("f8_e5m2")),
        MxElement::Int8 => ("i8", None),
    };
    let mut attributes = vec![("block_size".to_string(), Cbor::Uint(m.block_size))];
    if usize::from(m.axis) + 1 != rank {
        attributes.push(("axis".to_string(), Cbor::Uint(u64::from(m.axis))));
    }
    attributes.push(("scale_form".to_string(), Cbor::text("e8m0_exponent")));
    (attributes, data)
}
