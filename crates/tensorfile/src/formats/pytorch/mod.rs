//! What PyTorch's formats (`torch.save` files, `.pt2` archives) share: tensors as strided
//! views of storages, and the export schema's dtype numbers.

pub mod pt;
pub mod pt2;

use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::zip::Archive;
use crate::limits::MAX_VIEW_EXPANSION;
use crate::model::{DType, Layout};
use crate::source::Bytes;

/// The most bytes of a record read at open for its CRC alone.
const SMALL_RECORD_BYTES: u64 = 64 << 10;

/// Read, for their CRCs, the records of `archive` that hold no tensor's storage (outside the
/// `storage_folders`, relative to the root, where a `.json` is still a record of its own) and
/// are at most [`SMALL_RECORD_BYTES`]: versions, byte order, serialization ids, configs, code.
/// A byte flipped in any of them is seen at open, as one in `data.pkl` is, not only in those
/// whose content a reader uses; a storage's CRC is checked when it is read with verification.
pub(crate) fn check_small_records(archive: &Archive, storage_folders: &[&str]) -> Result<()> {
    let root = archive.root().map(|r| format!("{r}/"));
    for e in archive.entries() {
        let name = root.as_deref().and_then(|r| e.name.strip_prefix(r)).unwrap_or(&e.name);
        let storage = storage_folders.iter().any(|f| name.starts_with(f)) && !name.ends_with(".json");
        if !storage && !e.name.ends_with('/') && e.size <= SMALL_RECORD_BYTES {
            archive.read(e, true)?;
        }
    }
    Ok(())
}

/// A tensor as a view of a storage: shape, strides and offset in elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// The element type.
    pub dtype: DType,
    /// Sizes of the dimensions.
    pub shape: Vec<u64>,
    /// Distance between neighbours along each dimension, in elements (one per dimension).
    pub strides: Vec<u64>,
    /// Where the view starts in its storage, in elements.
    pub storage_offset: u64,
}

impl View {
    fn elem(&self) -> u64 {
        self.dtype.size().unwrap_or(1)
    }

    /// Whether the view is the row-major layout of its shape (size-1 dimensions' strides do
    /// not matter), so its bytes are one contiguous run of the storage.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1u64;
        for (&d, &s) in self.shape.iter().zip(&self.strides).rev() {
            if d != 1 && s != expected {
                return false;
            }
            expected = expected.saturating_mul(d);
        }
        true
    }

    /// How an entry describes the view: dense when row-major, else strided.
    pub fn layout(&self) -> Layout {
        if self.is_contiguous() {
            Layout::Dense
        } else {
            Layout::Strided { strides: self.strides.clone(), storage_offset: self.storage_offset }
        }
    }

    /// The view's elements in row-major order: a slice of `storage` when the view is
    /// contiguous, else gathered into a new buffer. Errors if the view leaves the storage.
    pub fn bytes_of(&self, storage: &Bytes) -> Result<Bytes> {
        let (start, span) = self.check_within(storage.len() as u64)?;
        if self.is_contiguous() {
            // Contiguous: the elements' span is exactly the view's bytes.
            storage.slice(start, span)
        } else {
            Ok(Bytes::from_vec(self.gather(storage)))
        }
    }

    /// Check the view lies inside a storage of `storage_bytes` bytes; return the byte range
    /// of its elements' span in the storage.
    pub fn check_within(&self, storage_bytes: u64) -> Result<(u64, u64)> {
        let numel = checked::numel(&self.shape)?;
        let elem = self.elem();
        if numel == 0 {
            return Ok((0, 0));
        }
        let mut last = self.storage_offset;
        for (&d, &s) in self.shape.iter().zip(&self.strides) {
            last = checked::add(last, checked::mul(d - 1, s, "view extent")?, "view extent")?;
        }
        let start = checked::mul(self.storage_offset, elem, "view start")?;
        let end = checked::mul(checked::add(last, 1, "view end")?, elem, "view end")?;
        if end > storage_bytes {
            return Err(Error::invalid(
                Rule::OutOfBounds,
                format!(
                    "view of shape {:?}, strides {:?}, offset {} reaches byte {end} of a {storage_bytes}-byte storage",
                    self.shape, self.strides, self.storage_offset
                ),
            ));
        }
        // Inside its storage, a view holds more bytes than the storage only when its elements
        // repeat (stride 0): reading it materializes every repeat, so bound what it may claim.
        let dense = checked::mul(numel, elem, "view size")?;
        if dense > storage_bytes.max(MAX_VIEW_EXPANSION) {
            return Err(Error::invalid(
                Rule::ExpansionTooLarge,
                format!(
                    "view of shape {:?}, strides {:?} repeats a {storage_bytes}-byte storage into {dense} bytes (limit {MAX_VIEW_EXPANSION})",
                    self.shape, self.strides
                ),
            ));
        }
        Ok((start, end - start))
    }

    /// The view's elements, gathered into row-major order from `storage` (already checked
    /// with [`View::check_within`]).
    pub fn gather(&self, storage: &[u8]) -> Vec<u8> {
        let elem = self.elem() as usize;
        let numel: u64 = self.shape.iter().product();
        let mut out = Vec::with_capacity(numel as usize * elem);
        self.for_each_offset(|off| {
            let at = off as usize * elem;
            out.extend_from_slice(&storage[at..at + elem]);
        });
        out
    }

    /// Write row-major `src` into the view's places in `storage` (already checked).
    pub fn scatter(&self, storage: &mut [u8], src: &[u8]) {
        let elem = self.elem() as usize;
        let mut k = 0;
        self.for_each_offset(|off| {
            let at = off as usize * elem;
            storage[at..at + elem].copy_from_slice(&src[k..k + elem]);
            k += elem;
        });
    }

    /// Call `f` with the storage element offset of every element, in row-major order.
    fn for_each_offset(&self, mut f: impl FnMut(u64)) {
        if self.shape.contains(&0) {
            return;
        }
        let rank = self.shape.len();
        let mut index = vec![0u64; rank];
        loop {
            f(self.storage_offset + index.iter().zip(&self.strides).map(|(i, s)| i * s).sum::<u64>());
            let mut d = rank;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                index[d] += 1;
                if index[d] < self.shape[d] {
                    break;
                }
                index[d] = 0;
            }
        }
    }
}

/// Row-major strides (in elements) of a shape.
pub fn row_major_strides(shape: &[u64]) -> Vec<u64> {
    let mut strides = vec![1u64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].saturating_mul(shape[i + 1]);
    }
    strides
}

/// The dtype of a number in the export schema (`torch/_export/serde/schema.py`'s ScalarType,
/// not c10's).
pub fn export_dtype(n: i64) -> Option<DType> {
    Some(match n {
        1 => DType::UInt8,
        2 => DType::Int8,
        3 => DType::Int16,
        4 => DType::Int32,
        5 => DType::Int64,
        6 => DType::Float16,
        7 => DType::Float32,
        8 => DType::Float64,
        9 => DType::Complex32,
        10 => DType::Complex64,
        11 => DType::Complex128,
        12 => DType::Bool,
        13 => DType::BFloat16,
        28 => DType::UInt16,
        29 => DType::Float8E4M3Fn,
        30 => DType::Float8E5M2,
        31 => DType::Float8E4M3Fnuz,
        32 => DType::Float8E5M2Fnuz,
        33 => DType::Float8E8M0Fnu,
        34 => DType::UInt32,
        35 => DType::UInt64,
        _ => return None,
    })
}

/// Whether torch has this dtype (for writing `torch.save` files): no sub-byte one (torch
/// packs float4 in pairs, `float4_e2m1fn_x2`), and of the opaque ones only its raw 16-bit
/// words.
pub fn torch_has(d: DType) -> bool {
    !d.is_sub_byte() && (!d.is_opaque() || d == DType::Bits16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposed_and_offset_views() {
        // Storage 0..12 as u8; a 3x2 view that is the transpose of a 2x3 block at offset 2.
        let storage: Vec<u8> = (0..12).collect();
        let v = View { dtype: DType::UInt8, shape: vec![3, 2], strides: vec![1, 3], storage_offset: 2 };
        assert!(!v.is_contiguous());
        assert_eq!(v.check_within(12).unwrap(), (2, 6));
        assert_eq!(v.gather(&storage), [2, 5, 3, 6, 4, 7]);
        let mut s2 = storage.clone();
        v.scatter(&mut s2, &[20, 50, 30, 60, 40, 70]);
        assert_eq!(&s2[2..8], &[20, 30, 40, 50, 60, 70]);
        assert_eq!(v.check_within(7).unwrap_err().rule(), Some(Rule::OutOfBounds));
        let c = View { dtype: DType::Float32, shape: vec![2, 1, 3], strides: vec![3, 99, 1], storage_offset: 0 };
        assert!(c.is_contiguous());
        let huge =
            View { dtype: DType::Float32, shape: vec![1 << 40, 2], strides: vec![1 << 40, 1], storage_offset: 0 };
        assert!(huge.check_within(1 << 20).is_err());
    }

    #[test]
    fn repeating_views_are_bounded() {
        let view = |n: u64| View { dtype: DType::Float32, shape: vec![n, 3], strides: vec![0, 1], storage_offset: 0 };
        // expand(): a row repeated, as torch saves it.
        assert_eq!(view(1000).check_within(12).unwrap(), (0, 12));
        // 4 TiB from 12 bytes: refused before anything is allocated.
        assert_eq!(view(1 << 38).check_within(12).unwrap_err().rule(), Some(Rule::ExpansionTooLarge));
    }
}
