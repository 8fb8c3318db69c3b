//! What an object means: its layout's metadata rules checked (spec §5.1 and the profiles),
//! and a plan (`plan.rs`) of which part to read as which part of the model's layout. The
//! dense and sparse layouts are interpreted here, the quantized profiles in `quant.rs`.
//!
//! A broken rule of a layout this library knows refuses the file (spec §3.6 rule 5). An
//! object it cannot interpret (a layout, an encoding or a logical type it does not know, or
//! a tensor the model cannot hold) is unreadable, and the rest of the file stays readable.

use super::manifest::{Object, Part, in_part};
use super::plan::{Interpreted, PartPlan, element, exact_parts, plan, tensor};
use super::quant;
use super::types::{Element, Storage};
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::model::{DATA, INDICES, INDPTR, Layout, SparseFormat, VALUES};

/// The one encoding profile of zTensor 2 this library decodes.
pub const SEEKABLE: &str = "zt.zstd-seekable/1";
/// The encoding of zTensor 1.x: zstd frames.
pub const ZSTD: &str = "zstd";

/// Whether this library decodes part `p`'s encoding (raw always).
pub fn decodable(p: &Part) -> bool {
    let known = if p.legacy { ZSTD } else { SEEKABLE };
    p.encoding.as_ref().is_none_or(|e| e == known)
}

/// Interpret `o`. The outer error refuses the file; the inner one makes `o` unreadable.
pub fn interpret(o: &Object) -> Result<Interpreted> {
    let interpreted = match o.layout.as_str() {
        "dense" => dense(o)?,
        "zt.sparse_coo/1" => coo(o)?,
        "zt.sparse_csr/1" => csr(o)?,
        "zt.quant_group/1" => quant::group(o)?,
        "zt.mx/1" => quant::mx(o)?,
        id => match id.strip_prefix("gguf.").and_then(|rest| rest.strip_suffix("/1")) {
            Some(ggml) => quant::gguf(o, ggml)?,
            None => Err(Error::invalid(Rule::UnknownLayout, format!("layout {id:?} is not one this library reads"))),
        },
    };
    Ok(interpreted.and_then(|plan| match plan.parts.iter().find(|p| !decodable(&p.part)) {
        Some(p) => Err(in_part(
            Error::invalid(
                Rule::UnknownEncoding,
                format!("encoding {:?} is not one this library decodes", p.part.encoding.as_deref().unwrap_or("")),
            ),
            &p.part.name,
        )),
        None => Ok(plan),
    }))
}

/// `dense` (spec §5.1): one part `data`, its decoded size the element type's size function
/// at the element count.
fn dense(o: &Object) -> Result<Interpreted> {
    let [data] = exact_parts(o, &[DATA], Rule::BadField)?[..] else { unreachable!("one name asked for") };
    let element = match element(data)? {
        Ok(e) => e,
        Err(e) => return Ok(Err(e)),
    };
    let numel = checked::numel(&o.shape)?;
    let want = element.size(numel).ok_or_else(|| {
        Error::invalid(Rule::ShapeOverflow, format!("{numel} elements of {} overflow 64 bits", element.dtype()))
    })?;
    if data.decoded_size() != want {
        return Err(Error::invalid(
            Rule::SizeMismatch,
            format!(
                "part \"data\" decodes to {} bytes; {numel} elements of {} take {want}",
                data.decoded_size(),
                element.dtype()
            ),
        ));
    }
    Ok(tensor(o, element.dtype(), Layout::Dense, &[]).map(|mut p| {
        p.parts.push(plan(DATA, data, element));
        p
    }))
}

/// An index part of a sparse layout: `u32` or `u64`, no logical type; its width.
fn index_width(p: &Part) -> Result<u64> {
    match (p.dtype, &p.logical) {
        (Storage::U32 | Storage::U64, None) => Ok(p.dtype.width()),
        _ => Err(Error::invalid(
            Rule::BadSparse,
            format!(
                "part {:?} is {}{}, not plain u32 or u64",
                p.name,
                p.dtype.name(),
                match &p.logical {
                    Some(t) => format!(" of type {t}"),
                    None => String::new(),
                }
            ),
        )),
    }
}

fn sparse_size_mismatch(part: &Part, want: Option<u64>, what: &str) -> Error {
    let want = want.map_or("more than 2^64".to_string(), |w| w.to_string());
    Error::invalid(
        Rule::BadSparse,
        format!("part {:?} decodes to {} bytes; {what} take {want}", part.name, part.decoded_size()),
    )
}

/// `zt.sparse_coo/1`: `coords` (`ndim x nnz`, one dimension after another) and `values`.
fn coo(o: &Object) -> Result<Interpreted> {
    let ndim = o.shape.len() as u64;
    if ndim == 0 {
        return Err(Error::invalid(Rule::BadSparse, "a sparse COO object of rank 0"));
    }
    let [values, coords] = exact_parts(o, &[VALUES, "coords"], Rule::BadSparse)?[..] else { unreachable!() };
    let width = index_width(coords)?;
    let row = checked::mul(width, ndim, "COO coordinates")?;
    if coords.decoded_size() % row != 0 {
        return Err(sparse_size_mismatch(coords, None, &format!("whole rows of {ndim} coordinates")));
    }
    let nnz = coords.decoded_size() / row;
    let element = match element(values)? {
        Ok(e) => e,
        Err(e) => return Ok(Err(e)),
    };
    if element.size(nnz) != Some(values.decoded_size()) {
        return Err(sparse_size_mismatch(values, element.size(nnz), &format!("{nnz} values of {}", element.dtype())));
    }
    let layout = Layout::Sparse { format: SparseFormat::Coo, nnz };
    Ok(tensor(o, element.dtype(), layout, &[]).map(|mut p| {
        p.parts.push(PartPlan { widen: true, ..plan(INDICES, coords, Element::plain(coords.dtype)) });
        p.parts.push(plan(VALUES, values, element));
        p
    }))
}

/// `zt.sparse_csr/1`: `indptr` (rows + 1), `indices` (one column per value) and `values`.
fn csr(o: &Object) -> Result<Interpreted> {
    let [rows, _] = o.shape[..] else {
        return Err(Error::invalid(Rule::BadSparse, format!("a sparse CSR object of rank {}, not 2", o.shape.len())));
    };
    let [indptr, indices, values] = exact_parts(o, &[INDPTR, INDICES, VALUES], Rule::BadSparse)?[..] else {
        unreachable!()
    };
    let width = index_width(indices)?;
    if indptr.dtype != indices.dtype || indptr.logical.is_some() {
        return Err(Error::invalid(Rule::BadSparse, "part \"indptr\" is not of the dtype of \"indices\""));
    }
    let want = rows.checked_add(1).and_then(|r| r.checked_mul(width));
    if want != Some(indptr.decoded_size()) {
        return Err(sparse_size_mismatch(indptr, want, &format!("{rows} + 1 row pointers")));
    }
    if indices.decoded_size() % width != 0 {
        return Err(sparse_size_mismatch(indices, None, "whole indices"));
    }
    let nnz = indices.decoded_size() / width;
    let element = match element(values)? {
        Ok(e) => e,
        Err(e) => return Ok(Err(e)),
    };
    if element.size(nnz) != Some(values.decoded_size()) {
        return Err(sparse_size_mismatch(values, element.size(nnz), &format!("{nnz} values of {}", element.dtype())));
    }
    let layout = Layout::Sparse { format: SparseFormat::Csr, nnz };
    Ok(tensor(o, element.dtype(), layout, &[]).map(|mut p| {
        p.parts.push(PartPlan { widen: true, ..plan(INDPTR, indptr, Element::plain(indptr.dtype)) });
        p.parts.push(PartPlan { widen: true, ..plan(INDICES, indices, Element::plain(indices.dtype)) });
        p.parts.push(plan(VALUES, values, element));
        p
    }))
}
