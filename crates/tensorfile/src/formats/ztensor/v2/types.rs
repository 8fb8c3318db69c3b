//! Storage types (the closed set of 12, spec §4.1) and the registered logical types laid over
//! them (Appendix A): their names, the dtype of this library each stands for, their size
//! functions and their content rules.

use crate::error::{Error, Result, Rule};
use crate::model::DType;

/// A storage type: byte width and little-endian order, every bit pattern valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    F64,
    F32,
    F16,
    Bf16,
    I64,
    I32,
    I16,
    I8,
    U64,
    U32,
    U16,
    U8,
}

const STORAGE: [(Storage, &str, DType); 12] = [
    (Storage::F64, "f64", DType::Float64),
    (Storage::F32, "f32", DType::Float32),
    (Storage::F16, "f16", DType::Float16),
    (Storage::Bf16, "bf16", DType::BFloat16),
    (Storage::I64, "i64", DType::Int64),
    (Storage::I32, "i32", DType::Int32),
    (Storage::I16, "i16", DType::Int16),
    (Storage::I8, "i8", DType::Int8),
    (Storage::U64, "u64", DType::UInt64),
    (Storage::U32, "u32", DType::UInt32),
    (Storage::U16, "u16", DType::UInt16),
    (Storage::U8, "u8", DType::UInt8),
];

impl Storage {
    /// The storage type of this name; `UnknownDType` for any other (the set is closed).
    pub fn from_name(name: &str) -> Result<Storage> {
        STORAGE
            .iter()
            .find(|(_, n, _)| *n == name)
            .map(|(s, _, _)| *s)
            .ok_or_else(|| Error::invalid(Rule::UnknownDType, format!("unknown dtype {name:?} (not a storage type)")))
    }

    fn entry(self) -> &'static (Storage, &'static str, DType) {
        // Every variant is in the table.
        STORAGE.iter().find(|(s, _, _)| *s == self).unwrap_or(&STORAGE[0])
    }

    /// The name a manifest spells it with.
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// This library's dtype of the same elements.
    pub fn dtype(self) -> DType {
        self.entry().2
    }

    /// Bytes per element.
    pub fn width(self) -> u64 {
        self.dtype().size().unwrap_or(1)
    }

    /// Whether elements are integers (signed or not).
    pub fn is_integer(self) -> bool {
        !matches!(self, Storage::F64 | Storage::F32 | Storage::F16 | Storage::Bf16)
    }

    /// Whether elements are floats.
    pub fn is_float(self) -> bool {
        !self.is_integer()
    }
}

/// The registered logical types: name, required storage type, dtype, and bytes per element
/// in halves (for the fp4 type, two elements per byte).
const LOGICAL: [(&str, Storage, DType, u64); 9] = [
    ("bool", Storage::U8, DType::Bool, 2),
    ("f8_e4m3fn", Storage::U8, DType::Float8E4M3Fn, 2),
    ("f8_e5m2", Storage::U8, DType::Float8E5M2, 2),
    ("f8_e4m3fnuz", Storage::U8, DType::Float8E4M3Fnuz, 2),
    ("f8_e5m2fnuz", Storage::U8, DType::Float8E5M2Fnuz, 2),
    ("f8_e8m0", Storage::U8, DType::Float8E8M0Fnu, 2),
    ("f4_e2m1", Storage::U8, DType::Float4E2M1Fn, 1),
    ("complex64", Storage::F32, DType::Complex64, 16),
    ("complex128", Storage::F64, DType::Complex128, 32),
];

/// What a part's elements are: a storage type, seen through a logical type or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Element {
    pub storage: Storage,
    /// The registered logical type, by its index in the table; `None` for plain storage.
    logical: Option<usize>,
}

/// A part's `dtype` and `type`, understood.
pub enum Typed {
    Known(Element),
    /// A logical type this library does not know: the part cannot be decoded.
    Unknown(String),
}

impl Element {
    /// A plain storage type.
    pub fn plain(storage: Storage) -> Element {
        Element { storage, logical: None }
    }

    /// The element of storage `storage` and logical type `logical`. A registered logical type
    /// over another storage type than its own refuses the file (`BadField`); an unknown one is
    /// [`Typed::Unknown`].
    pub fn of(storage: Storage, logical: Option<&str>) -> Result<Typed> {
        let Some(name) = logical else { return Ok(Typed::Known(Element::plain(storage))) };
        let Some(k) = LOGICAL.iter().position(|(n, _, _, _)| *n == name) else {
            return Ok(Typed::Unknown(name.to_string()));
        };
        let required = LOGICAL[k].1;
        if storage != required {
            return Err(Error::invalid(
                Rule::BadField,
                format!("logical type {name} is stored as {}, not {}", required.name(), storage.name()),
            ));
        }
        Ok(Typed::Known(Element { storage, logical: Some(k) }))
    }

    /// The logical type's name, when there is one.
    pub fn logical(self) -> Option<&'static str> {
        self.logical.map(|k| LOGICAL[k].0)
    }

    /// This library's dtype of one element.
    pub fn dtype(self) -> DType {
        match self.logical {
            Some(k) => LOGICAL[k].2,
            None => self.storage.dtype(),
        }
    }

    /// Bytes `n` elements take (the type's size function); `None` on overflow.
    pub fn size(self, n: u64) -> Option<u64> {
        match self.logical {
            Some(k) => n.checked_mul(LOGICAL[k].3).map(|halves| halves.div_ceil(2)),
            None => n.checked_mul(self.storage.width()),
        }
    }

    /// Decoded bytes checked against the type's content rules: bool bytes are 0 or 1.
    pub fn check_values(self, bytes: &[u8]) -> Result<()> {
        if self.logical() == Some("bool") {
            if let Some(at) = bytes.iter().position(|&b| b > 1) {
                return Err(Error::invalid(
                    Rule::BadValue,
                    format!("bool element {at} is the byte {:#04x}, not 0 or 1", bytes[at]),
                ));
            }
        }
        Ok(())
    }
}

/// The manifest's name for elements of `dtype` (a storage or a logical type), for the dtypes
/// zTensor 2 can store.
#[cfg(any(test, feature = "internals"))]
pub fn element_name(dtype: DType) -> Option<&'static str> {
    let logical = LOGICAL.iter().find(|(_, _, d, _)| *d == dtype).map(|(n, _, _, _)| *n);
    logical.or_else(|| STORAGE.iter().find(|(_, _, d)| *d == dtype).map(|(_, n, _)| *n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(storage: &str, logical: Option<&str>) -> Element {
        match Element::of(Storage::from_name(storage).unwrap(), logical).unwrap() {
            Typed::Known(e) => e,
            Typed::Unknown(t) => panic!("{t} unknown"),
        }
    }

    #[test]
    fn storage_and_logical_types_map_to_dtypes_with_their_sizes() {
        for (_, name, dtype) in STORAGE {
            let e = known(name, None);
            assert_eq!((e.dtype(), e.size(3)), (dtype, Some(3 * dtype.size().unwrap())));
            assert_eq!(element_name(dtype), Some(name));
        }
        assert_eq!(known("u8", Some("bool")).dtype(), DType::Bool);
        assert_eq!(known("u8", Some("f4_e2m1")).size(5), Some(3));
        assert_eq!(known("u8", Some("f8_e8m0")).size(5), Some(5));
        assert_eq!(known("f32", Some("complex64")).size(3), Some(24));
        assert_eq!(known("f64", Some("complex128")).dtype(), DType::Complex128);
        assert_eq!(element_name(DType::Bool), Some("bool"));
        assert_eq!(element_name(DType::Float4E2M1FnX2), None);
        assert!(known("u8", None).size(u64::MAX).is_some());
        assert!(known("u16", None).size(u64::MAX).is_none());
    }

    #[test]
    fn unknown_names_and_mismatched_storage() {
        assert_eq!(Storage::from_name("f4").unwrap_err().rule(), Some(Rule::UnknownDType));
        assert_eq!(Storage::from_name("bool").unwrap_err().rule(), Some(Rule::UnknownDType));
        let f32 = Storage::from_name("f32").unwrap();
        assert!(matches!(Element::of(f32, Some("x.future/1")).unwrap(), Typed::Unknown(t) if t == "x.future/1"));
        assert_eq!(Element::of(f32, Some("bool")).err().and_then(|e| e.rule()), Some(Rule::BadField));
    }

    #[test]
    fn bool_bytes_are_zero_or_one() {
        let b = known("u8", Some("bool"));
        assert!(b.check_values(&[0, 1, 1, 0]).is_ok());
        assert_eq!(b.check_values(&[0, 2]).unwrap_err().rule(), Some(Rule::BadValue));
        assert!(known("u8", None).check_values(&[7]).is_ok());
    }
}
