//! A tensor's values printed as numpy's `print(array)` prints them (numpy 2, default print
//! options), for every dtype the library reads, with an optional numpy basic slice.
//!
//! Dtypes numpy lacks print as numpy prints the same values in the numpy type holding them:
//! bfloat16, float8 (every variant) and float4 as float32; int4/int2 as int8 and uint4/uint2 as
//! uint8; complex32 as complex64. A float4_e2m1fn_x2 tensor (two values a byte) shows its last
//! axis twice as long. Quantized tensors are dequantized (to float32) and sparse ones scattered
//! to dense first.
//!
//! Only the elements shown are read: arrays of more than 1000 elements print the first and
//! last three of each axis (numpy's summarising), and rows of a raw dense tensor are read
//! alone, so showing a corner of a large tensor reads a few rows.

mod format;
mod layout;
mod read;
pub mod slice;

use serde_json::{Value as Json, json};

use crate::checked;
use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::model::{DType, Kind};
use format::FloatFormat;
use layout::{Grid, THRESHOLD, shown_indices};
use read::Values;
pub use slice::{AxisSlice, Selected, Slice};

/// The most elements one `show` reads (a larger selection is an error asking for a slice).
pub const MAX_SHOWN: u64 = 1 << 24;

/// Which elements of the selection to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// Those numpy prints: the edges of a selection of more than 1000 elements.
    Printed,
    /// Every element of the selection (for JSON).
    All,
}

/// The values of (a slice of) a tensor, ready to print as numpy does or as JSON.
pub struct Shown {
    /// The tensor's name.
    pub name: String,
    /// The tensor's dtype.
    pub dtype: DType,
    /// The tensor's shape.
    pub shape: Vec<u64>,
    /// The slice as given.
    pub slice: Option<String>,
    /// The shape of the selection (axes taken by an index dropped).
    pub selected_shape: Vec<u64>,
    /// The numpy dtype the values print as (`float32` for bfloat16...).
    pub printed_as: &'static str,
    /// Whether the values were dequantized from a quantized layout.
    pub dequantized: bool,
    /// The shown part of each axis of the selection.
    dims: Vec<usize>,
    /// Which axes had elements left out.
    cut: Vec<bool>,
    values: Values,
}

/// The values of tensor `name` of `file`, sliced by `slice` (numpy basic slicing: see
/// [`Slice`]). Errors: no such tensor, a blob, a bad slice (naming the axis and the bound), a
/// dtype not read as numbers, a selection of more than [`MAX_SHOWN`] elements to read.
pub fn show(file: &TensorFile, name: &str, slice: Option<&str>, extent: Extent) -> Result<Shown> {
    let in_file = |e: Error| match file.path() {
        Some(p) => e.in_file(p),
        None => e,
    };
    let index = file.index_of(name).ok_or_else(|| in_file(Error::not_found(name)))?;
    let info = file.entries()[index].info();
    if info.kind() == Kind::Blob {
        return Err(in_file(Error::unsupported("it is a blob of bytes, not a tensor").for_tensor(name)));
    }
    let shape = read::shown_shape(info.dtype(), info.shape())
        .and_then(|s| checked::numel(&s).map(|_| s))
        .map_err(|e| in_file(e.for_tensor(name)))?;
    let selected = match slice {
        Some(text) => Slice::parse(text).and_then(|s| s.apply(&shape)).map_err(|e| e.for_tensor(name))?,
        None => shape.iter().map(|&len| Selected::Range { start: 0, step: 1, len }).collect(),
    };
    let selected_shape: Vec<u64> = selected
        .iter()
        .filter_map(|s| match s {
            Selected::Range { len, .. } => Some(*len),
            Selected::Index(_) => None,
        })
        .collect();
    let numel = checked::numel(&selected_shape)?;
    let summarise = extent == Extent::Printed && numel > THRESHOLD;
    let kept: Vec<Vec<u64>> = selected_shape.iter().map(|&len| shown_indices(len, summarise)).collect();
    let count = kept.iter().try_fold(1u64, |n, k| checked::mul(n, k.len() as u64, "elements shown"))?;
    if count > MAX_SHOWN {
        return Err(Error::usage(format!(
            "the selection holds {count} elements; show reads at most {MAX_SHOWN}: narrow it with a slice"
        ))
        .for_tensor(name));
    }
    let wanted = if numel == 0 { Vec::new() } else { source_indices(&shape, &selected, &kept)? };
    let read = read::read_elements(file, index, &shape, &wanted).map_err(in_file)?;
    Ok(Shown {
        name: name.to_string(),
        dtype: info.dtype(),
        shape: info.shape().to_vec(),
        slice: slice.map(str::to_string),
        printed_as: read.printed.name(),
        dequantized: read.dequantized || info.layout().quant().is_some(),
        dims: kept.iter().map(Vec::len).collect(),
        cut: selected_shape.iter().map(|&len| summarise && len > 2 * layout::EDGE_ITEMS).collect(),
        selected_shape,
        values: read.values,
    })
}

/// The row-major flat indices in a tensor of `shape` of the elements kept, in row-major order
/// of the selection.
fn source_indices(shape: &[u64], selected: &[Selected], kept: &[Vec<u64>]) -> Result<Vec<u64>> {
    let mut strides = vec![1u64; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = checked::mul(strides[axis + 1], shape[axis + 1], "stride")?;
    }
    // Per axis of the tensor, the flat offsets of the indices kept.
    let mut kept_axes = kept.iter();
    let offsets: Vec<Vec<u64>> = selected
        .iter()
        .zip(&strides)
        .map(|(s, &stride)| match s {
            Selected::Index(i) => vec![i * stride],
            Selected::Range { .. } => {
                kept_axes.next().map(|k| k.iter().map(|&i| s.at(i) * stride).collect()).unwrap_or_default()
            }
        })
        .collect();
    let mut out = vec![0u64];
    for axis in offsets {
        out = out.iter().flat_map(|&base| axis.iter().map(move |&o| base + o)).collect();
    }
    Ok(out)
}

impl Shown {
    /// Whether every element of the selection was read (not only the edges numpy prints).
    fn complete(&self) -> bool {
        self.dims.iter().zip(&self.selected_shape).all(|(&d, &len)| d as u64 == len)
    }

    /// The values as numpy's `print(array)` prints them (without the final newline).
    pub fn to_text(&self) -> String {
        let numel: u64 = self.dims.iter().map(|&d| d as u64).product();
        if self.selected_shape.is_empty() {
            return scalar(&self.values);
        }
        if numel == 0 {
            return "[]".into();
        }
        let full: u64 = self.selected_shape.iter().product();
        if self.complete() && full > THRESHOLD {
            // Read whole (for JSON): print the edges only, as numpy does.
            let kept: Vec<Vec<u64>> = self.selected_shape.iter().map(|&len| shown_indices(len, true)).collect();
            let strides: Vec<u64> = (0..kept.len()).map(|a| self.selected_shape[a + 1..].iter().product()).collect();
            let mut picks = vec![0usize];
            for (k, stride) in kept.iter().zip(strides) {
                picks = picks.iter().flat_map(|&b| k.iter().map(move |&i| b + (i * stride) as usize)).collect();
            }
            let dims: Vec<usize> = kept.iter().map(Vec::len).collect();
            let cut: Vec<bool> = self.selected_shape.iter().map(|&len| len > 2 * layout::EDGE_ITEMS).collect();
            let values = self.values.pick(&picks);
            return Grid { dims: &dims, cut: &cut, words: &words(&values) }.text();
        }
        Grid { dims: &self.dims, cut: &self.cut, words: &words(&self.values) }.text()
    }

    /// `{name, dtype, shape, slice, selected_shape, printed_as, dequantized, values}`: the
    /// values as nested arrays (NaN and infinities as `"nan"`, `"inf"`, `"-inf"`; a complex
    /// number as `[re, im]`), `null` when only the printed edges were read.
    pub fn to_json(&self) -> Json {
        let values = self.complete().then(|| nest(&self.values, &self.dims, &mut 0));
        json!({
            "name": self.name,
            "dtype": self.dtype.name(),
            "shape": self.shape,
            "slice": self.slice,
            "selected_shape": self.selected_shape,
            "printed_as": self.printed_as,
            "dequantized": self.dequantized,
            "values": values,
        })
    }
}

/// Every value formatted as an element of the array (one width for all).
fn words(values: &Values) -> Vec<String> {
    match values {
        Values::Bool(v) => v.iter().map(|&b| if b { " True" } else { "False" }.to_string()).collect(),
        Values::Int(v) => {
            let width = format::int_width(v);
            v.iter().map(|x| format!("{x:>width$}")).collect()
        }
        Values::Float(v, w) => {
            let f = FloatFormat::new(v, *w, false);
            v.iter().map(|&x| f.format(x)).collect()
        }
        Values::Complex(v, w) => {
            let re: Vec<f64> = v.iter().map(|c| c.0).collect();
            let im: Vec<f64> = v.iter().map(|c| c.1).collect();
            let (fr, fi) = (FloatFormat::new(&re, *w, false), FloatFormat::new(&im, *w, true));
            v.iter().map(|&c| format::complex_element(&fr, &fi, c)).collect()
        }
    }
}

/// The one value of a 0-d selection as numpy's scalar `str`.
fn scalar(values: &Values) -> String {
    match values {
        Values::Bool(v) => if v.first() == Some(&true) { "True" } else { "False" }.into(),
        Values::Int(v) => v.first().map(i128::to_string).unwrap_or_default(),
        Values::Float(v, w) => v.first().map(|&x| format::scalar_float(x, *w, false, true)).unwrap_or_default(),
        Values::Complex(v, w) => v.first().map(|&c| format::scalar_complex(c, *w)).unwrap_or_default(),
    }
}

fn float_json(x: f64, w: format::Width) -> Json {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        let shortest: f64 = format::shortest_text(x, w).parse().unwrap_or(x);
        serde_json::Number::from_f64(shortest).map_or(Json::Null, Json::Number)
    }
}

/// Values from `*at` on nested as `dims` (a scalar for no dims).
fn nest(values: &Values, dims: &[usize], at: &mut usize) -> Json {
    if let Some((&len, rest)) = dims.split_first() {
        return Json::Array((0..len).map(|_| nest(values, rest, at)).collect());
    }
    let i = *at;
    *at += 1;
    match values {
        Values::Bool(v) => json!(v[i]),
        Values::Int(v) => match i64::try_from(v[i]) {
            Ok(x) => json!(x),
            Err(_) => u64::try_from(v[i]).map_or(Json::Null, |x| json!(x)),
        },
        Values::Float(v, w) => float_json(v[i], *w),
        Values::Complex(v, w) => json!([float_json(v[i].0, *w), float_json(v[i].1, *w)]),
    }
}
