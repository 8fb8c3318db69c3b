//! safetensors: a u64 header length, a JSON header, then tensors tiling the data region.
//!
//! Read with the format's own validation rules (header limit, exact tiling, `__metadata__`
//! string to string) plus ours: duplicate names refused, unknown dtypes reported per tensor.

mod extent;
mod header;
mod edit;
mod read;
mod write;

pub use read::SafetensorsReader;
pub use write::SafetensorsWriter;

use crate::error::{Error, Result};
use crate::formats::{Caps, Extent, FormatUnit};
use crate::model::{DType, Kind, TensorInfo};

const TABLE: [(&str, DType); 22] = [
    ("BOOL", DType::Bool),
    ("F4", DType::Float4E2M1Fn),
    ("F6_E2M3", DType::Float6E2M3Fn),
    ("F6_E3M2", DType::Float6E3M2Fn),
    ("U8", DType::UInt8),
    ("I8", DType::Int8),
    ("F8_E5M2", DType::Float8E5M2),
    ("F8_E4M3", DType::Float8E4M3Fn),
    ("F8_E8M0", DType::Float8E8M0Fnu),
    ("F8_E4M3FNUZ", DType::Float8E4M3Fnuz),
    ("F8_E5M2FNUZ", DType::Float8E5M2Fnuz),
    ("I16", DType::Int16),
    ("U16", DType::UInt16),
    ("F16", DType::Float16),
    ("BF16", DType::BFloat16),
    ("I32", DType::Int32),
    ("U32", DType::UInt32),
    ("F32", DType::Float32),
    ("C64", DType::Complex64),
    ("F64", DType::Float64),
    ("I64", DType::Int64),
    ("U64", DType::UInt64),
];

/// The safetensors unit.
pub(crate) static UNIT: FormatUnit = FormatUnit {
    name: "safetensors",
    title: "safetensors",
    extensions: &["safetensors"],
    recognise: |probe| looks_like(probe.head()),
    open: |src| Ok(Box::new(SafetensorsReader::open(src)?)),
    writer: Some(|out, plan, options| Ok(Box::new(SafetensorsWriter::new(out, plan, options)?))),
    updater: None,
    meta_editor: Some(edit::edit),
    check_supported,
    write_order,
    variant: None,
    companion: None,
    caps: Caps { holds_dtype: |d| dtype_name(d).is_some(), file_metadata: true, ..Caps::PLAIN },
    extent: Extent { magics: &[], found_further: None, confirm: None, measure: extent::measure },
};

/// The safetensors library's order: by dtype, in the reverse of [`TABLE`]'s order (which is
/// the library's own order of its dtypes, narrowest first), tensors of one dtype in the order
/// given. safetensors tiles its data with no padding: wider dtypes first keep every tensor
/// aligned to its element size. The library sorts tensors of one dtype by name: a plan given
/// in name order comes out in exactly its order, and the file is byte for byte the one it
/// writes of the same tensors.
fn write_order(plan: &[TensorInfo]) -> Vec<usize> {
    let rank = |i: usize| TABLE.iter().position(|(_, d)| *d == plan[i].dtype());
    let mut order: Vec<usize> = (0..plan.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(rank(i)));
    order
}

/// `s` as the table spells it, when it names a dtype: the header's dtype text kept without
/// a copy.
pub(super) fn known_dtype_name(s: &str) -> Option<&'static str> {
    TABLE.iter().find(|(n, _)| *n == s).map(|(n, _)| *n)
}

/// The safetensors spelling of a dtype (`F32`, `BF16`, `F8_E4M3`...).
pub fn dtype_name(d: DType) -> Option<&'static str> {
    TABLE.iter().find(|(_, t)| *t == d).map(|(n, _)| *n)
}

/// The dtype of a safetensors dtype name (`F32`, `BF16`, `F8_E4M3`...); `None` for a name
/// safetensors does not define.
pub fn dtype_from_name(name: &str) -> Option<DType> {
    TABLE.iter().find(|(n, _)| *n == name).map(|(_, d)| *d)
}

/// Whether `bytes` start like a safetensors file: a plausible header length then `{`.
pub fn looks_like(bytes: &[u8]) -> bool {
    let Ok(n) = crate::cursor::u64_le_at(bytes, 0, "header length") else { return false };
    (2..=crate::limits::MAX_SAFETENSORS_HEADER).contains(&n) && bytes.get(8) == Some(&b'{')
}

/// Whether a safetensors file can store `info`: dense, of a dtype safetensors names, and a
/// blob only as a 1-D uint8 array; the error says why not.
pub fn check_supported(info: &TensorInfo) -> Result<()> {
    if dtype_name(info.dtype()).is_none() {
        return Err(Error::unsupported(format!("safetensors has no dtype {}", info.dtype())));
    }
    if !info.layout().reads_dense() {
        return Err(Error::unsupported(format!(
            "safetensors holds dense tensors only, not {} ones",
            info.layout().describe()
        )));
    }
    if info.kind() == Kind::Blob && !(info.dtype() == DType::UInt8 && info.shape().len() == 1) {
        return Err(Error::unsupported("blob that is not a 1-D uint8 array"));
    }
    Ok(())
}
