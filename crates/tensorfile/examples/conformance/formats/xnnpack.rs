//! XNNPACK delegate payloads inside ExecuTorch programs: a real program (a fixture exported
//! by ExecuTorch with XNNPACK) whose first delegate's payload is replaced by a broken one,
//! stored inline in the program. The program opens; the payload's rule is the first problem
//! `verify` reports (a payload that does not decode must not fail the file).

use tensorfile::formats::executorch::pte::PteReader;
use tensorfile::formats::executorch::xnnpack::graph_schema;
use tensorfile::internals::flatbuf::{self, Table, Value};
use tensorfile::source::Bytes;
use tensorfile::{Format, Rule};

use super::Fixtures;
use super::pte::{edited, new, plan, table};
use crate::build::{put_u32, put_u64};
use crate::case::{Family as F, Folder};

/// The first delegate's payload of program `base`.
fn first_payload(base: &[u8]) -> Result<Vec<u8>, String> {
    let file = tensorfile::OpenOptions::new()
        .format(Format::Pte)
        .open_bytes(Bytes::from_vec(base.to_vec()))
        .map_err(|e| e.to_string())?;
    let pte = file.reader_as::<PteReader>().ok_or("not a program")?;
    let payloads = pte.delegate_payloads().map_err(|e| e.to_string())?;
    Ok(payloads.first().ok_or("no delegate")?.3.to_vec())
}

/// `base` with its first delegate's payload replaced by `payload`, stored inline.
fn with_payload(base: &[u8], payload: Vec<u8>) -> Result<Vec<u8>, String> {
    edited(base, |root| {
        let data = new("BackendDelegateInlineData", vec![("data", Value::Bytes(Bytes::from_vec(payload)))]);
        if root.vector_mut("backend_delegate_data").is_none() {
            root.set("backend_delegate_data", Some(Value::Vector(Vec::new())));
        }
        let list = root.vector_mut("backend_delegate_data").expect("set above");
        list.push(Value::Table(data));
        let index = list.len() as u64 - 1;
        let delegate = table(&mut plan(root).vector_mut("delegates").expect("delegates")[0]);
        let processed = delegate.table_mut("processed").expect("processed");
        processed.set("location", Some(Value::Int(0)));
        processed.set("index", Some(Value::UInt(index)));
    })
}

/// A payload: the 30-byte header padded to 32, `fb` padded to 16, then `constants`.
fn payload(fb: &[u8], constants: &[u8]) -> Vec<u8> {
    let fb_size = fb.len() as u32;
    let cd_offset = 32 + fb_size.next_multiple_of(16);
    let mut p = vec![0u8; 32];
    p[4..8].copy_from_slice(b"XH00");
    p[8..10].copy_from_slice(&30u16.to_le_bytes());
    put_u32(&mut p, 10, 32);
    put_u32(&mut p, 14, fb_size);
    put_u32(&mut p, 18, cd_offset);
    put_u64(&mut p, 22, constants.len() as u64);
    p.extend_from_slice(fb);
    p.resize(cd_offset as usize, 0);
    p.extend_from_slice(constants);
    p
}

/// The payload's graph decoded, edited by `edit`, re-encoded behind a new header.
fn graph_edited(original: &[u8], edit: impl FnOnce(&mut Table)) -> Result<Vec<u8>, String> {
    let fb_offset = u32::from_le_bytes(original[10..14].try_into().unwrap()) as usize;
    let fb_size = u32::from_le_bytes(original[14..18].try_into().unwrap()) as usize;
    let fb = Bytes::from_vec(original[fb_offset..fb_offset + fb_size].to_vec());
    let mut root = flatbuf::decode(graph_schema(), &fb).map_err(|e| e.to_string())?;
    edit(&mut root);
    Ok(payload(&flatbuf::encode(graph_schema(), &root, 0).map_err(|e| e.to_string())?, &[]))
}

/// The tensor value table of value `i` (through a quantized value's `tensor_value`).
fn value(root: &mut Table, i: usize) -> &mut Table {
    let xv = table(&mut root.vector_mut("xvalues").expect("xvalues")[i]);
    let Some(Value::Union(u)) = xv.get_mut("xvalue_union") else { panic!("value {i} empty") };
    let t = u.value.as_deref_mut().expect("value table");
    if t.def.name == "XNNQuantizedTensorValue" { t.table_mut("tensor_value").expect("tensor_value") } else { t }
}

/// The quantization table of value `i`.
fn quant(root: &mut Table, i: usize) -> &mut Table {
    let xv = table(&mut root.vector_mut("xvalues").expect("xvalues")[i]);
    let Some(Value::Union(u)) = xv.get_mut("xvalue_union") else { panic!("value {i} empty") };
    let t = u.value.as_deref_mut().expect("value table");
    let Some(Value::Union(q)) = t.get_mut("quant_params") else { panic!("value {i} is not quantized") };
    q.value.as_deref_mut().expect("quantization table")
}

/// The index of the first value with constant data.
fn first_constant(root: &mut Table) -> usize {
    let n = root.vector("xvalues").expect("xvalues").len();
    (0..n).find(|&i| value(root, i).uint("constant_buffer_idx").unwrap_or(0) != 0).expect("a constant")
}

/// The index of the first per-channel quantized value.
fn first_per_channel(root: &mut Table) -> usize {
    let n = root.vector("xvalues").expect("xvalues").len();
    (0..n)
        .find(|&i| {
            let xv = table(&mut root.vector_mut("xvalues").expect("xvalues")[i]);
            matches!(xv.get("xvalue_union"), Some(Value::Union(u))
                if u.value.as_deref().is_some_and(|t| t.def.name == "XNNQuantizedTensorValue"
                    && matches!(t.get("quant_params"), Some(Value::Union(q)) if q.variant() == "PerChannelQuant")))
        })
        .expect("a per-channel value")
}

/// The first node's operator table.
fn first_node(root: &mut Table) -> &mut Table {
    let n = table(&mut root.vector_mut("xnodes").expect("xnodes")[0]);
    let Some(Value::Union(u)) = n.get_mut("xnode_union") else { panic!("node without operator") };
    u.value.as_deref_mut().expect("operator table")
}

pub fn cases(fx: &Fixtures) -> Result<Folder, String> {
    let mut f = Folder::new("xnnpack", Format::Pte, "pte");
    let fp32 = fx.read("executorch/xnnpack_fp32.pte")?;
    let qc8 = fx.read("executorch/xnnpack_qc8.pte")?;
    f.valid("fp32", F::Valid, "float32 conv + linear delegated to XNNPACK (fixture made by ExecuTorch)", fp32.clone());
    f.valid("qc8", F::Valid, "8-bit per-channel weights and int32 biases under XNNPACK (fixture)", qc8.clone());
    let p = first_payload(&fp32)?;
    f.valid(
        "inline-payload",
        F::Valid,
        "the payload moved inline into the program, unchanged",
        with_payload(&fp32, p.clone())?,
    );
    let same = graph_edited(&p, |_| {})?;
    f.valid(
        "reencoded-payload",
        F::Valid,
        "the payload's graph decoded and re-encoded by tensorfile",
        with_payload(&fp32, same)?,
    );
    let bare = {
        let (o, n) =
            (u32::from_le_bytes(p[10..14].try_into().unwrap()), u32::from_le_bytes(p[14..18].try_into().unwrap()));
        p[o as usize..(o + n) as usize].to_vec()
    };
    // Without a header the runtime looks for constants in the old inline buffers, which an
    // XN01 graph leaves empty: its constant_data entries are out of reach.
    f.verify(
        "no-header-constant-data",
        F::OutOfRangeIndex,
        Rule::OutOfBounds,
        "no XH00 header, so no constant data: the constants' inline buffers do not exist",
        with_payload(&fp32, bare.clone())?,
    );

    header(&mut f, &fp32, &p)?;
    let mut b = bare;
    b[4..8].copy_from_slice(b"XN02");
    f.verify(
        "bad-identifier",
        F::BadMagic,
        Rule::BadMagic,
        "no header, and the flatbuffer's identifier is XN02",
        with_payload(&fp32, b)?,
    );
    graph(&mut f, &fp32, &p)?;
    let q = first_payload(&qc8)?;
    let case = graph_edited(&q, |r| {
        let i = first_per_channel(r);
        quant(r, i).set("channel_dim", Some(Value::Int(4)));
    })?;
    f.verify(
        "channel-dim-out-of-range",
        F::OutOfRangeIndex,
        Rule::BadField,
        "per-channel scales along dimension 4 of a rank-4 weight",
        with_payload(&qc8, case)?,
    );
    let case = graph_edited(&q, |r| {
        let i = first_per_channel(r);
        quant(r, i).set("scale_buffer_idx", Some(Value::UInt(1000)));
    })?;
    f.verify(
        "scales-out-of-range",
        F::OutOfRangeIndex,
        Rule::OutOfBounds,
        "scales in constant 1000 of a short table",
        with_payload(&qc8, case)?,
    );
    let qb4 = fx.read("executorch/xnnpack_qb4.pte")?;
    f.valid("qb4", F::Valid, "4-bit weights in blocks of 32 with bfloat16 scales under XNNPACK (fixture)", qb4.clone());
    let q4 = first_payload(&qb4)?;
    let blockwise = |r: &mut Table| -> usize {
        let n = r.vector("xvalues").expect("xvalues").len();
        (0..n)
            .find(|&i| {
                let xv = table(&mut r.vector_mut("xvalues").expect("xvalues")[i]);
                matches!(xv.get("xvalue_union"), Some(Value::Union(u)) if u.variant() == "XNNQuantizedTensorValue"
                    && u.value.as_deref().is_some_and(|t| matches!(t.get("quant_params"), Some(Value::Union(q)) if q.variant() == "PerChannelGroupQuant")))
            })
            .expect("a blockwise value")
    };
    let case = graph_edited(&q4, |r| {
        let i = blockwise(r);
        quant(r, i).set("group_size", Some(Value::Int(0)));
    })?;
    f.verify(
        "group-size-zero",
        F::BadField,
        Rule::BadField,
        "blockwise scales with blocks of 0 elements",
        with_payload(&qb4, case)?,
    );
    let case = graph_edited(&q4, |r| {
        let i = blockwise(r);
        quant(r, i).set("num_scales", Some(Value::UInt(15)));
    })?;
    f.verify(
        "blockwise-scale-count",
        F::SizeMismatch,
        Rule::SizeMismatch,
        "15 block scales for [8, 64] in blocks of 32 (16 needed)",
        with_payload(&qb4, case)?,
    );
    Ok(f)
}

fn header(f: &mut Folder, base: &[u8], p: &[u8]) -> Result<(), String> {
    let patched = |at: usize, bytes: &[u8]| -> Vec<u8> {
        let mut b = p.to_vec();
        b[at..at + bytes.len()].copy_from_slice(bytes);
        b
    };
    let len = p.len() as u32;
    let fb_size = u32::from_le_bytes(p[14..18].try_into().unwrap());
    let cases: [(&str, F, Rule, &str, Vec<u8>); 7] = [
        (
            "bad-header-magic",
            F::BadMagic,
            Rule::BadMagic,
            "header magic XH01: neither a header nor an XN01 flatbuffer",
            patched(4, b"XH01"),
        ),
        (
            "header-truncated",
            F::Truncation,
            Rule::Truncated,
            "the payload ends 20 bytes into its 30-byte header",
            p[..20].to_vec(),
        ),
        (
            "header-length-short",
            F::BadField,
            Rule::BadField,
            "a header length of 29 (the header has 30 bytes)",
            patched(8, &29u16.to_le_bytes()),
        ),
        (
            "flatbuffer-too-small",
            F::BadField,
            Rule::BadField,
            "a flatbuffer size of 4, below a root offset and identifier",
            patched(14, &4u32.to_le_bytes()),
        ),
        (
            "flatbuffer-past-end",
            F::PastEnd,
            Rule::OutOfBounds,
            "the flatbuffer runs one byte past the payload",
            patched(10, &(len - fb_size + 1).to_le_bytes()),
        ),
        (
            "constant-data-past-end",
            F::Overflow,
            Rule::OutOfBounds,
            "a constant data size of 2^64-1",
            patched(22, &u64::MAX.to_le_bytes()),
        ),
        (
            "constant-data-overlaps",
            F::Overlap,
            Rule::Overlap,
            "constant data starting inside the flatbuffer",
            patched(18, &33u32.to_le_bytes()),
        ),
    ];
    for (stem, family, rule, what, payload) in cases {
        f.verify(stem, family, rule, what, with_payload(base, payload)?);
    }
    Ok(())
}

fn graph(f: &mut Folder, base: &[u8], p: &[u8]) -> Result<(), String> {
    type Edit = Box<dyn FnOnce(&mut Table)>;
    let cases: Vec<(&str, F, Rule, &str, Edit)> = vec![
        (
            "value-id-out-of-range",
            F::OutOfRangeIndex,
            Rule::OutOfBounds,
            "a node reads value id 1000, which no value has",
            Box::new(|r: &mut Table| {
                let n = first_node(r);
                let field = if n.def.field_index("input_id").is_some() { "input_id" } else { "input1_id" };
                n.set(field, Some(Value::UInt(1000)));
            }),
        ),
        (
            "duplicate-value-id",
            F::DuplicateName,
            Rule::DuplicateName,
            "two values with id 0",
            Box::new(|r: &mut Table| value(r, 1).set("id_out", Some(Value::UInt(0)))),
        ),
        (
            "dims-overflow",
            F::Overflow,
            Rule::ShapeOverflow,
            "a value of dims [2^32-1; 3]: more than 2^64 elements",
            Box::new(|r: &mut Table| {
                value(r, 0).set("dims", Some(Value::Vector(vec![Value::UInt(u64::from(u32::MAX)); 3])))
            }),
        ),
        (
            "unknown-datatype",
            F::BadField,
            Rule::UnknownDType,
            "a value of datatype 99",
            Box::new(|r: &mut Table| value(r, 0).set("datatype", Some(Value::Int(99)))),
        ),
        (
            "invalid-datatype",
            F::BadField,
            Rule::UnknownDType,
            "a value of datatype 0 (xnn_datatype_invalid)",
            Box::new(|r: &mut Table| value(r, 0).set("datatype", Some(Value::Int(0)))),
        ),
        (
            "unknown-value-flags",
            F::BadField,
            Rule::BadField,
            "a value with flag bit 4, which the runtime refuses",
            Box::new(|r: &mut Table| value(r, 0).set("flags", Some(Value::UInt(4)))),
        ),
        (
            "constant-buffer-out-of-range",
            F::OutOfRangeIndex,
            Rule::OutOfBounds,
            "a value's constant in entry 1000 of a short table",
            Box::new(|r: &mut Table| {
                let i = first_constant(r);
                value(r, i).set("constant_buffer_idx", Some(Value::UInt(1000)))
            }),
        ),
        (
            "constant-offset-past-end",
            F::PastEnd,
            Rule::OutOfBounds,
            "a constant at an offset in an empty constant data region, no key",
            Box::new(|r: &mut Table| {
                let entry = table(&mut r.vector_mut("constant_data").expect("constant_data")[1]);
                entry.set("named_key", None);
                entry.set("offset", Some(Value::UInt(0)));
            }),
        ),
        (
            "constant-size-mismatch",
            F::SizeMismatch,
            Rule::SizeMismatch,
            "a named constant declared one row larger than its blob",
            Box::new(|r: &mut Table| {
                let i = first_constant(r);
                let v = value(r, i);
                let mut dims = v.ints("dims").expect("dims");
                dims[0] += 1;
                v.set("dims", Some(Value::Vector(dims.into_iter().map(|d| Value::UInt(d as u64)).collect())));
            }),
        ),
    ];
    for (stem, family, rule, what, edit) in cases {
        f.verify(stem, family, rule, what, with_payload(base, graph_edited(p, edit)?)?);
    }
    Ok(())
}
