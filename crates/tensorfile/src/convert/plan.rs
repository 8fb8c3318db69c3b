//! Which entries of a source go into a target, and how the target describes them: the
//! selection kept and renamed, layouts the target cannot hold decoded, dtypes cast.

use std::collections::HashMap;

use super::casting::as_cast;
use super::quantizing::{QuantizeTypes, as_quantized};
use super::{Selection, Skipped, as_written};
use crate::error::{Error, Hint, Result};
use crate::file::TensorFile;
use crate::formats::Format;
use crate::model::quant::GgmlType;
use crate::model::{DType, LayoutKind, TensorInfo, cast, quant};

/// Which entries of a source go into a target, in the order the target stores them.
#[derive(Debug, Clone)]
pub struct Plan {
    /// (index of the entry in the source, how the target describes it).
    pub tensors: Vec<(usize, TensorInfo)>,
    /// Entries of the source left out, and why.
    pub skipped: Vec<Skipped>,
    /// Names of the planned tensors written decoded to dense (their layout is not the
    /// target's).
    pub(super) decoded: Vec<String>,
    /// Names of the planned tensors cast to another dtype.
    pub(super) cast: Vec<String>,
    /// (name in the source, name written) of the planned entries renamed.
    pub(super) renamed: Vec<(String, String)>,
    /// (name in the source, ggml type) of the planned tensors quantized.
    pub(super) quantized: Vec<(String, GgmlType)>,
    /// How many entries of the source the filters left out.
    pub(super) filtered_out: usize,
}

impl Plan {
    /// Names of the planned tensors written decoded to dense.
    pub fn decoded(&self) -> &[String] {
        &self.decoded
    }

    /// Names of the planned tensors cast to another dtype.
    pub fn cast(&self) -> &[String] {
        &self.cast
    }

    /// (name in the source, name written) of the planned entries renamed.
    pub fn renamed(&self) -> &[(String, String)] {
        &self.renamed
    }

    /// (name in the source, ggml type) of the planned tensors quantized.
    pub fn quantized(&self) -> &[(String, GgmlType)] {
        &self.quantized
    }

    /// How many entries of the source the filters left out.
    pub fn filtered_out(&self) -> usize {
        self.filtered_out
    }
}

/// Decide which entries of `src` go into a file of `format`, in the order it will store them,
/// with floating tensors cast to `dtype` when one is given (see [`super::ConvertOptions::dtype`]).
pub fn plan(src: &TensorFile, format: Format, skip_unsupported: bool, dtype: Option<DType>) -> Result<Plan> {
    plan_selected(src, format, skip_unsupported, dtype, &Selection::default())
}

/// [`plan`] for the entries `select` keeps, under the names it gives them (the planned
/// [`TensorInfo`]s carry the new names; the indices are the source's). Entries left out by
/// its filters are not read, nor checked (an unreadable one left out is no error). A filter
/// that keeps nothing is an error, and so are two entries renamed to one name.
pub(crate) fn plan_selected(
    src: &TensorFile,
    format: Format,
    skip_unsupported: bool,
    dtype: Option<DType>,
    select: &Selection,
) -> Result<Plan> {
    plan_quantized(src, format, skip_unsupported, dtype, select, None)
}

/// [`plan_selected`], with the tensors `quantize` names given their ggml types.
pub(crate) fn plan_quantized(
    src: &TensorFile,
    format: Format,
    skip_unsupported: bool,
    dtype: Option<DType>,
    select: &Selection,
    quantize: Option<&QuantizeTypes>,
) -> Result<Plan> {
    if !format.unit().can_write() {
        // Not a matter of some tensors: leaving them out would not help.
        return Err(Error::unsupported(format!("tensorfile does not write {} files", format.unit().title())));
    }
    if let Some(to) = dtype {
        cast::target(to.name())?;
    }
    let mut skipped = Vec::new();
    let mut filtered_out = 0;
    for u in src.unreadable() {
        if !select.keeps(u.name()) {
            filtered_out += 1;
            continue;
        }
        if !skip_unsupported {
            return Err(Error::unsupported(format!("cannot read it: {}", u.error().detail()))
                .for_tensor(u.name())
                .with_hint(Hint::SkipUnsupported));
        }
        skipped.push(Skipped { name: u.name().to_string(), reason: u.error().detail() });
    }
    let mut chosen = Vec::with_capacity(src.entries().len());
    let mut decoded = Vec::new();
    let mut cast = Vec::new();
    let mut renamed = Vec::new();
    let mut quantized = Vec::new();
    let mut kept = 0;
    // Each name written, and the source name it comes from.
    let mut written: HashMap<String, &str> = HashMap::new();
    for (i, e) in src.entries().iter().enumerate() {
        let name = e.info().name();
        if !select.keeps(name) {
            filtered_out += 1;
            continue;
        }
        let new_name = select.renamed(name).into_owned();
        if new_name.is_empty() {
            return Err(Error::usage(format!("the renames leave {name:?} without a name")).for_tensor(name));
        }
        if let Some(first) = written.insert(new_name.clone(), name) {
            return Err(Error::usage(format!(
                "{first:?} and {name:?} would both be written as {new_name:?}: rename them apart"
            ))
            .for_tensor(name));
        }
        kept += 1;
        let described = as_written(e.info()).with_name(new_name.as_str());
        let to = quantize.and_then(|q| Some((q, *q.types.get(name)?)));
        let converted = match to {
            Some((q, t)) => as_quantized(described, t, q, format).map(|info| {
                quantized.push((name.to_string(), t));
                (info, false)
            }),
            None => as_cast(described, dtype),
        };
        let fitted = converted.and_then(|(info, is_cast)| {
            let decodes = !info.layout().reads_dense();
            let fitted = fitted(format, info)?;
            format.check_supported(&fitted)?;
            if decodes && fitted.layout().reads_dense() {
                decoded.push(name.to_string());
            }
            if is_cast {
                cast.push(name.to_string());
            }
            Ok(fitted)
        });
        match fitted {
            Ok(info) => {
                if new_name != name {
                    renamed.push((name.to_string(), new_name.to_string()));
                }
                chosen.push((i, info));
            }
            Err(err) if skip_unsupported => skipped.push(Skipped { name: name.to_string(), reason: err.detail() }),
            Err(err) => {
                return Err(Error::unsupported(err.detail()).for_tensor(name).with_hint(Hint::SkipUnsupported));
            }
        }
    }
    if select.filters() && kept == 0 && skipped.is_empty() {
        return Err(Error::usage(format!("the include and exclude filters keep none of its {filtered_out} entries")));
    }
    let infos: Vec<TensorInfo> = chosen.iter().map(|(_, i)| i.clone()).collect();
    let tensors = format.write_order(&infos).into_iter().map(|k| chosen[k].clone()).collect();
    Ok(Plan { tensors, skipped, decoded, cast, renamed, quantized, filtered_out })
}

/// `info` as `format` will store it: a tensor of a layout the format cannot hold goes in
/// decoded to dense, when the format holds it so (its dtype, dense). Quantized blocks without
/// a reference dequantization cannot be decoded: an error unless the format holds them.
fn fitted(format: Format, info: TensorInfo) -> Result<TensorInfo> {
    let caps = format.caps();
    if info.layout().reads_dense() || caps.holds_layout(info.layout().kind()) || !caps.holds_layout(LayoutKind::Dense) {
        return Ok(info);
    }
    if let Some(q) = info.layout().quant().filter(|q| !quant::can_dequantize(q)) {
        return Err(Error::unsupported(format!(
            "{} has no reference dequantization, and {} files cannot hold its blocks as they are",
            q.describe(),
            format.unit().title
        )));
    }
    let dense = info.clone().into_dense_layout();
    Ok(if format.check_supported(&dense).is_ok() { dense } else { info })
}
