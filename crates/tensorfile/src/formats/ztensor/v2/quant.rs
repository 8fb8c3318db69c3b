//! The quantized layout profiles: `gguf.<type>/1` (ggml blocks kept verbatim),
//! `zt.quant_group/1` (affine group quantization, every parameter an attribute) and
//! `zt.mx/1` (OCP Microscaling), each checked against its profile's validation rules and
//! read as the model's [`Quant`].

use super::manifest::{Object, Part};
use super::plan::{Interpreted, element, exact_parts, plan, tensor};
use super::types::{Element, Storage};
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::model::quant::{
    BLOCKS, BitOrder, GgmlType, GroupQuant, MxElement, MxQuant, Quant, SCALES, ScaleForm, ZEROS, ZeroPoint,
};
use crate::model::{DATA, DType, Layout, MetaValue};

/// The ggml types the `gguf.<type>/1` family registers (its profile's list).
pub const GGUF_TYPES: [&str; 22] = [
    "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q8_1", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k", "iq1_s", "iq1_m",
    "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq4_nl", "iq4_xs", "mxfp4",
];

fn bad(detail: impl Into<String>) -> Error {
    Error::invalid(Rule::BadQuantization, detail)
}

fn attr<'o>(o: &'o Object, key: &str) -> Option<&'o MetaValue> {
    o.attributes.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// A required attribute (`MissingField` when absent).
fn need<'o>(o: &'o Object, key: &str) -> Result<&'o MetaValue> {
    attr(o, key).ok_or_else(|| Error::invalid(Rule::MissingField, format!("a {} object without {key}", o.layout)))
}

/// The entry `key` of a map attribute `map` (called `what`).
fn entry<'v>(map: &'v MetaValue, key: &str, what: &str) -> Result<Option<&'v MetaValue>> {
    match map {
        MetaValue::Map(pairs) => Ok(pairs.iter().find(|(k, _)| k.as_text() == Some(key)).map(|(_, v)| v)),
        _ => Err(bad(format!("{what} is not a map"))),
    }
}

fn uint(v: &MetaValue, what: &str) -> Result<u64> {
    match v {
        MetaValue::Int(i) => u64::try_from(*i).map_err(|_| bad(format!("{what} is {i}, not an unsigned integer"))),
        _ => Err(bad(format!("{what} is not an unsigned integer"))),
    }
}

fn text<'v>(v: &'v MetaValue, what: &str) -> Result<&'v str> {
    v.as_text().ok_or_else(|| bad(format!("{what} is not text")))
}

/// `shape[axis]`, for an axis given as an attribute.
fn extent(o: &Object, axis: u64) -> Result<(u8, u64)> {
    match usize::try_from(axis).ok().and_then(|a| o.shape.get(a)) {
        // The rank is at most 64: the axis fits a byte.
        Some(&n) => Ok((axis as u8, n)),
        None => Err(bad(format!("axis {axis} of a tensor of rank {}", o.shape.len()))),
    }
}

fn size_of(part: &Part, want: Option<u64>, what: &str) -> Result<()> {
    if want != Some(part.decoded_size()) {
        let want = want.map_or("more than 2^64".to_string(), |w| w.to_string());
        return Err(bad(format!("part {:?} decodes to {} bytes; {what} take {want}", part.name, part.decoded_size())));
    }
    Ok(())
}

/// The quantized tensor `q` of `o`, from `parts` (role, part, element), unreadable when the
/// model cannot hold it, or when the sizes it computes for its parts are not the parts' sizes.
fn quantized(o: &Object, q: Quant, parts: Vec<(&'static str, &Part, Element)>, used: &[&str]) -> Interpreted {
    let mut p = tensor(o, DType::Float32, Layout::Quantized(q), used)?;
    for spec in p.info.parts()? {
        let have = parts.iter().find(|(role, _, _)| *role == spec.name()).map_or(0, |(_, part, _)| part.decoded_size());
        if have != spec.nbytes()? {
            return Err(bad(format!(
                "part {} of {have} bytes where this library expects {}",
                spec.name(),
                spec.nbytes()?
            )));
        }
    }
    p.parts = parts.into_iter().map(|(role, part, e)| plan(role, part, e)).collect();
    Ok(p)
}

/// `gguf.<type>/1`: one part `data` of `u8` blocks, `elems_per_block` and `block_bytes`.
pub fn gguf(o: &Object, name: &str) -> Result<Interpreted> {
    let Some(t) = GgmlType::from_name(name).filter(|t| GGUF_TYPES.contains(&name) && t.lower_name() == name) else {
        return Ok(Err(Error::invalid(Rule::UnknownLayout, format!("layout {:?}: no ggml type {name:?}", o.layout))));
    };
    let [data] = exact_parts(o, &[DATA], Rule::BadQuantization)?[..] else { unreachable!() };
    if data.dtype != Storage::U8 || data.logical.is_some() {
        return Err(bad("part \"data\" is not plain u8"));
    }
    let per = uint(need(o, "elems_per_block")?, "elems_per_block")?;
    let bytes = uint(need(o, "block_bytes")?, "block_bytes")?;
    if per == 0 || bytes == 0 {
        return Err(bad(format!("blocks of {per} elements in {bytes} bytes")));
    }
    let numel = checked::numel(&o.shape)?;
    let row = o.shape.last().copied().unwrap_or(1);
    if numel % per != 0 || row % per != 0 {
        return Err(bad(format!("blocks of {per} elements do not fill rows of {row} ({numel} elements)")));
    }
    size_of(data, (numel / per).checked_mul(bytes), &format!("{} blocks of {bytes} bytes", numel / per))?;
    if (per, bytes) != (t.block_elements(), t.block_bytes()) {
        return Ok(Err(bad(format!(
            "{} blocks are {} elements in {} bytes, not {per} in {bytes}",
            t.name(),
            t.block_elements(),
            t.block_bytes()
        ))));
    }
    let element = Element::plain(Storage::U8);
    Ok(quantized(o, Quant::Ggml(t), vec![(BLOCKS, data, element)], &["elems_per_block", "block_bytes"]))
}

/// The attributes `zt.quant_group/1` consumes.
const GROUP_KEYS: [&str; 6] = ["bits", "group_size", "axis", "packing", "scale_form", "zero_point"];

/// `zt.quant_group/1`: packed integer codes, a scale (and a zero point) per group.
pub fn group(o: &Object) -> Result<Interpreted> {
    let bits = uint(need(o, "bits")?, "bits")?;
    let group_size = uint(need(o, "group_size")?, "group_size")?;
    let (axis, along) = extent(o, uint(need(o, "axis")?, "axis")?)?;
    let packing = need(o, "packing")?;
    let field = |key: &str| entry(packing, key, "packing")?.ok_or_else(|| bad(format!("packing without {key}")));
    let word = match text(field("word")?, "packing.word")? {
        w @ ("u8" | "u16" | "u32" | "u64") => Storage::from_name(w)?,
        w => return Err(bad(format!("packing.word {w:?}"))),
    };
    let order = match text(field("order")?, "packing.order")? {
        "lsb_first" => BitOrder::LsbFirst,
        "msb_first" => BitOrder::MsbFirst,
        other => return Err(bad(format!("packing.order {other:?}"))),
    };
    let word_bits = 8 * word.width();
    if !matches!(bits, 2..=6 | 8) || word_bits % bits != 0 {
        return Err(bad(format!("{bits}-bit codes in a {}-bit word", word_bits)));
    }
    let per_word = word_bits / bits;
    if uint(field("per_word")?, "packing.per_word")? != per_word {
        return Err(bad(format!("packing.per_word is not {per_word} ({bits}-bit codes in {})", word.name())));
    }
    let scale_form = match text(need(o, "scale_form")?, "scale_form")? {
        "f32_factors" => ScaleForm::F32Factors,
        "f16_factors" => ScaleForm::F16Factors,
        "e8m0_exponent" => ScaleForm::E8m0Exponent,
        other => return Err(bad(format!("scale_form {other:?}"))),
    };
    let zp = need(o, "zero_point")?;
    let form =
        text(entry(zp, "form", "zero_point")?.ok_or_else(|| bad("zero_point without form"))?, "zero_point.form")?;
    let (value, zero_packing) = (entry(zp, "value", "zero_point")?, entry(zp, "packing", "zero_point")?);
    let stored = match (form, value, zero_packing) {
        ("none", None, None) => None,
        ("implied", Some(_), None) | ("tensor", None, Some(_)) => Some(form == "tensor"),
        _ => return Err(bad(format!("zero_point {form:?} with value {value:?} and packing {zero_packing:?}"))),
    };
    let names: &[&str] = if stored == Some(true) { &[DATA, SCALES, ZEROS] } else { &[DATA, SCALES] };
    let parts = exact_parts(o, names, Rule::BadQuantization)?;
    let (data, scales) = (parts[0], parts[1]);
    let unsigned = |s: Storage| match s {
        Storage::I8 => Storage::U8,
        Storage::I16 => Storage::U16,
        Storage::I32 => Storage::U32,
        Storage::I64 => Storage::U64,
        other => other,
    };
    if !data.dtype.is_integer() || unsigned(data.dtype) != word || data.logical.is_some() {
        return Err(bad(format!("part \"data\" is not plain {} (packing.word)", word.name())));
    }
    let scale = match element(scales)? {
        Ok(e) => e,
        Err(e) => return Ok(Err(e)),
    };
    let scales_ok = match scale_form {
        ScaleForm::E8m0Exponent => scale.logical() == Some("f8_e8m0"),
        _ => scale.storage.is_float() && scale.logical().is_none(),
    };
    if !scales_ok {
        return Err(bad(format!("part \"scales\" of {} does not hold {scale_form:?} scales", scale.dtype())));
    }
    if group_size != 0 && along % group_size != 0 {
        return Err(bad(format!("groups of {group_size} do not divide axis {axis} of {along}")));
    }
    let numel = checked::numel(&o.shape)?;
    // Group size 0: one scale per row of the axis.
    let groups = along.checked_div(group_size).unwrap_or(along);
    let lanes = numel.checked_div(along).unwrap_or(0);
    let scale_count = checked::mul(groups, lanes, "group scales")?;
    size_of(data, (numel / per_word).checked_mul(word.width()), &format!("{numel} codes of {bits} bits"))?;
    size_of(scales, scale_count.checked_mul(scales.dtype.width()), &format!("{scale_count} scales"))?;
    let mut read = vec![(DATA, data, Element::plain(data.dtype)), (SCALES, scales, scale)];
    let zero_point = match (stored, value) {
        (None, _) => ZeroPoint::None,
        (Some(false), Some(v)) => match v {
            MetaValue::Int(i) => ZeroPoint::Implied(i64::try_from(*i).map_err(|_| bad(format!("zero point {i}")))?),
            _ => return Err(bad("zero_point.value is not an integer")),
        },
        _ => {
            let zeros = parts[2];
            let zero = match element(zeros)? {
                Ok(e) => e,
                Err(e) => return Ok(Err(e)),
            };
            let packed = match zero_packing.map(|p| text(p, "zero_point.packing")).transpose()? {
                Some("same_as_data") => true,
                Some("plain") => false,
                other => return Err(bad(format!("zero_point.packing {other:?}"))),
            };
            if packed {
                if zeros.dtype != data.dtype || zeros.logical.is_some() {
                    return Err(bad("part \"zeros\" is not packed like \"data\""));
                }
                size_of(zeros, (scale_count / per_word).checked_mul(word.width()), "packed zero points")?;
            } else {
                size_of(zeros, zero.size(scale_count), &format!("{scale_count} zero points"))?;
            }
            read.push((ZEROS, zeros, zero));
            ZeroPoint::Stored { packed, dtype: zero.dtype() }
        }
    };
    let q = GroupQuant {
        bits: bits as u8,
        group_size,
        axis,
        word: data.dtype.dtype(),
        order,
        scale_form,
        scale_dtype: scale.dtype(),
        zero_point,
    };
    Ok(quantized(o, Quant::Group(q), read, &GROUP_KEYS))
}

/// `zt.mx/1`: elements of an MX type, one `f8_e8m0` scale per block.
pub fn mx(o: &Object) -> Result<Interpreted> {
    let [data, scales] = exact_parts(o, &[DATA, SCALES], Rule::BadQuantization)?[..] else { unreachable!() };
    if scales.dtype != Storage::U8 || scales.logical.as_deref() != Some("f8_e8m0") {
        return Err(bad("part \"scales\" is not u8 of type f8_e8m0"));
    }
    let block_size = uint(need(o, "block_size")?, "block_size")?;
    let axis = match attr(o, "axis") {
        Some(v) => uint(v, "axis")?,
        None => (o.shape.len() as u64).checked_sub(1).ok_or_else(|| bad("an MX scalar has no axis for its blocks"))?,
    };
    let (axis, along) = extent(o, axis)?;
    if text(need(o, "scale_form")?, "scale_form")? != "e8m0_exponent" {
        return Err(bad("scale_form is not \"e8m0_exponent\""));
    }
    if block_size < 2 || along % block_size != 0 {
        return Err(bad(format!("blocks of {block_size} do not divide axis {axis} of {along}")));
    }
    let element = match (data.dtype, data.logical.as_deref()) {
        (Storage::I8, None) => MxElement::Int8,
        (_, Some(t)) => match super::plan::element(data)? {
            Err(unknown) => return Ok(Err(unknown)),
            Ok(_) => MxElement::from_name(t)
                .filter(|e| *e != MxElement::Int8)
                .ok_or_else(|| bad(format!("part \"data\" of type {t}, not an MX element type")))?,
        },
        (other, None) => return Err(bad(format!("part \"data\" of {}, not an MX element type", other.name()))),
    };
    let data_element = match super::plan::element(data)? {
        Ok(e) => e,
        Err(e) => return Ok(Err(e)),
    };
    let numel = checked::numel(&o.shape)?;
    size_of(data, data_element.size(numel), &format!("{numel} {} elements", element.name()))?;
    size_of(scales, Some(numel / block_size), &format!("{} blocks of {block_size}", numel / block_size))?;
    let q = MxQuant { element, block_size, axis };
    let scale = Element::plain(Storage::U8);
    let read = vec![(DATA, data, data_element), (SCALES, scales, scale)];
    Ok(quantized(o, Quant::Mx(q), read, &["block_size", "axis", "scale_form"]))
}
