//! Reading only the elements shown: rows of a raw dense tensor through
//! [`TensorFile::read_rows`], anything else streamed once through [`numbers::dense_pieces`].

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::file::TensorFile;
use crate::model::elements::Elements;
use crate::model::{DType, Encoding, Layout};
use crate::numbers;
use crate::show::format::Width;

/// Values of the elements shown, in the order asked for.
#[derive(Debug, Clone)]
pub(crate) enum Values {
    Bool(Vec<bool>),
    Int(Vec<i128>),
    Float(Vec<f64>, Width),
    Complex(Vec<(f64, f64)>, Width),
}

impl Values {
    /// The values at `picks`.
    pub(crate) fn pick(&self, picks: &[usize]) -> Values {
        match self {
            Values::Bool(v) => Values::Bool(picks.iter().map(|&i| v[i]).collect()),
            Values::Int(v) => Values::Int(picks.iter().map(|&i| v[i]).collect()),
            Values::Float(v, w) => Values::Float(picks.iter().map(|&i| v[i]).collect(), *w),
            Values::Complex(v, w) => Values::Complex(picks.iter().map(|&i| v[i]).collect(), *w),
        }
    }
}

/// How the elements of one dtype are printed: numpy's own type, or for a type numpy lacks
/// the one holding the same values (float32 for narrow floats, int8/uint8 for packed ints,
/// complex64 for complex32).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Printed {
    Bool,
    Int(&'static str),
    Float(Width),
    Complex(Width),
}

impl Printed {
    pub(crate) fn of(dtype: DType) -> Printed {
        match dtype {
            DType::Bool => Printed::Bool,
            DType::UInt4 | DType::UInt2 => Printed::Int("uint8"),
            DType::Int4 | DType::Int2 => Printed::Int("int8"),
            DType::Float16 => Printed::Float(Width::F16),
            DType::Float64 => Printed::Float(Width::F64),
            DType::Complex32 | DType::Complex64 => Printed::Complex(Width::F32),
            DType::Complex128 => Printed::Complex(Width::F64),
            d if d.is_float() || matches!(d, DType::Float4E2M1Fn | DType::Float4E2M1FnX2) => Printed::Float(Width::F32),
            d => Printed::Int(d.name()),
        }
    }

    /// numpy's name of the dtype printed.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Printed::Bool => "bool",
            Printed::Int(n) => n,
            Printed::Float(Width::F16) => "float16",
            Printed::Float(Width::F32) => "float32",
            Printed::Float(Width::F64) => "float64",
            Printed::Complex(Width::F16 | Width::F32) => "complex64",
            Printed::Complex(Width::F64) => "complex128",
        }
    }
}

/// The elements read: their dtype as printed, whether they were dequantized, their values.
pub(crate) struct Read {
    pub(crate) printed: Printed,
    pub(crate) dequantized: bool,
    pub(crate) values: Values,
}

/// Decodes single elements of one dtype from bytes starting on an element group.
struct Decoder {
    elements: Elements,
    dtype: DType,
    /// Elements per group of bytes.
    per_group: u64,
    group_bytes: u64,
}

/// One decoded element.
enum Element {
    Real(f64),
    Int(i128),
    Complex(f64, f64),
}

impl Decoder {
    fn new(dtype: DType) -> Result<Decoder> {
        let elements = Elements::of(dtype)?;
        let per_group = if elements.is_complex() { 1 } else { elements.group_values() as u64 };
        let group_bytes = elements.group_bytes() as u64;
        Ok(Decoder { elements, dtype, per_group, group_bytes })
    }

    /// Element `k` of `bytes` (which start on a group).
    fn element(&self, bytes: &[u8], k: u64) -> Result<Element> {
        let start = checked::mul(k / self.per_group, self.group_bytes, "element offset")?;
        let range = checked::range_within(start, self.group_bytes, bytes.len(), "element")?;
        let bytes = &bytes[range];
        match self.dtype {
            DType::Int64 => return Ok(Element::Int(i128::from(i64::from_le_bytes(eight(bytes))))),
            DType::UInt64 => return Ok(Element::Int(i128::from(u64::from_le_bytes(eight(bytes))))),
            _ => {}
        }
        let values = self.elements.decode(bytes);
        if self.elements.is_complex() {
            return Ok(Element::Complex(values[0], values[1]));
        }
        let v = values[(k % self.per_group) as usize];
        Ok(if self.elements.is_integer() && self.dtype != DType::Bool {
            Element::Int(v as i128)
        } else {
            Element::Real(v)
        })
    }
}

/// The dtype values are read as: float4_e2m1fn_x2 (a byte of two fp4 values) as fp4 values,
/// the tensor's last axis counting both (see [`shown_shape`]).
fn unpaired(dtype: DType) -> DType {
    if dtype == DType::Float4E2M1FnX2 { DType::Float4E2M1Fn } else { dtype }
}

/// The shape of the values shown: the tensor's, with the last axis of a float4_e2m1fn_x2
/// tensor doubled (each element holds two values).
pub(crate) fn shown_shape(dtype: DType, shape: &[u64]) -> Result<Vec<u64>> {
    let mut shape = shape.to_vec();
    if dtype == DType::Float4E2M1FnX2 {
        if let Some(last) = shape.last_mut() {
            *last = checked::mul(*last, 2, "float4 pairs")?;
        }
    }
    Ok(shape)
}

fn eight(bytes: &[u8]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(&bytes[..8]);
    a
}

/// Collects elements into their places.
struct Sink {
    values: Values,
}

impl Sink {
    fn new(printed: Printed, n: usize) -> Sink {
        let values = match printed {
            Printed::Bool => Values::Bool(vec![false; n]),
            Printed::Int(_) => Values::Int(vec![0; n]),
            Printed::Float(w) => Values::Float(vec![0.0; n], w),
            Printed::Complex(w) => Values::Complex(vec![(0.0, 0.0); n], w),
        };
        Sink { values }
    }

    fn put(&mut self, at: usize, e: Element) {
        match (&mut self.values, e) {
            (Values::Bool(v), Element::Real(x)) => v[at] = x != 0.0,
            (Values::Int(v), Element::Int(x)) => v[at] = x,
            (Values::Float(v, _), Element::Real(x)) => v[at] = x,
            (Values::Complex(v, _), Element::Complex(re, im)) => v[at] = (re, im),
            _ => {}
        }
    }
}

/// Read the elements of entry `index` at the row-major flat indices `wanted` (each below the
/// tensor's element count; the values come back in that order).
pub(crate) fn read_elements(file: &TensorFile, index: usize, shape: &[u64], wanted: &[u64]) -> Result<Read> {
    let entry = &file.entries()[index];
    let info = entry.info();
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by_key(|&i| wanted[i]);
    let dtype = unpaired(info.dtype());
    let row_bits =
        checked::numel(shape.get(1..).unwrap_or(&[])).and_then(|n| checked::mul(n, dtype.bits(), "row size"));
    let by_rows = *info.layout() == Layout::Dense
        && entry.storage().encoding() == Encoding::Raw
        && !shape.is_empty()
        && matches!(row_bits, Ok(b) if b % 8 == 0 && b > 0);
    if by_rows {
        let decoder = Decoder::new(dtype).map_err(|e| e.for_tensor(info.name()))?;
        let printed = Printed::of(dtype);
        let mut sink = Sink::new(printed, wanted.len());
        let row = checked::numel(&shape[1..])?;
        let mut i = 0;
        while i < order.len() {
            // A run of consecutive rows holding the next wanted elements.
            let first = wanted[order[i]] / row;
            let mut last = first;
            let mut j = i;
            while j < order.len() && wanted[order[j]] / row <= last + 1 {
                last = wanted[order[j]] / row;
                j += 1;
            }
            let bytes = file.read_rows(index, first..last + 1)?;
            let base = first * row;
            for &at in &order[i..j] {
                let e = decoder.element(&bytes, wanted[at] - base).map_err(|e| e.for_tensor(info.name()))?;
                sink.put(at, e);
            }
            i = j;
        }
        return Ok(Read { printed, dequantized: false, values: sink.values });
    }
    let pieces = numbers::dense_pieces(file, index, false)?;
    let decoder = Decoder::new(unpaired(pieces.dtype)).map_err(|e| e.for_tensor(info.name()))?;
    let printed = Printed::of(pieces.dtype);
    let mut sink = Sink::new(printed, wanted.len());
    let mut base = 0u64;
    let mut next = 0;
    for piece in numbers::aligned(pieces.chunks, decoder.group_bytes as usize) {
        if next == order.len() {
            break;
        }
        let piece = piece.map_err(|e| e.for_tensor(info.name()))?;
        let count = piece.len() as u64 / decoder.group_bytes * decoder.per_group;
        while next < order.len() && wanted[order[next]] < base + count {
            let at = order[next];
            let e = decoder.element(&piece, wanted[at] - base).map_err(|e| e.for_tensor(info.name()))?;
            sink.put(at, e);
            next += 1;
        }
        base += count;
    }
    if next < order.len() {
        let detail = format!("the data holds {base} elements; element {} was asked for", wanted[order[next]]);
        return Err(Error::invalid(Rule::SizeMismatch, detail).for_tensor(info.name()));
    }
    Ok(Read { printed, dequantized: pieces.dequantized, values: sink.values })
}
