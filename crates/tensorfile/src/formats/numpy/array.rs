//! Stored array bytes to the row-major little-endian bytes readers return: little-endian
//! C-order data as it is (a slice of the map for a local file), big-endian data byte-swapped,
//! Fortran-order data transposed, each into one buffer the size of the tensor.

use crate::model::{ByteOrder, DType};
use crate::source::Bytes;
use crate::swap;

/// `stored` (exactly the array's bytes) as row-major little-endian bytes.
pub(crate) fn to_row_major_le(stored: Bytes, dtype: DType, order: ByteOrder, fortran: bool, shape: &[u64]) -> Bytes {
    let unit = dtype.swap_unit();
    let swap = order == ByteOrder::Big && unit > 1;
    let transpose = fortran && shape.len() > 1 && !stored.is_empty();
    if !swap && !transpose {
        return stored;
    }
    let mut out =
        if transpose { from_fortran(&stored, shape, dtype.size().unwrap_or(1) as usize) } else { stored.to_vec() };
    if swap {
        swap::swap_in_place(&mut out, unit);
    }
    Bytes::from_vec(out)
}

/// Fortran-order elements of `elem` bytes (the first index varies fastest) rearranged into
/// row-major order (the last index varies fastest). `src` holds exactly the shape's elements
/// (checked by the reader against the dtype and shape), so no index leaves it.
fn from_fortran(src: &[u8], shape: &[u64], elem: usize) -> Vec<u8> {
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let rank = dims.len();
    // Fortran strides, in elements: dimension k steps over the product of the ones before it.
    let mut stride = vec![1usize; rank];
    for k in 1..rank {
        stride[k] = stride[k - 1] * dims[k - 1];
    }
    let mut out = Vec::with_capacity(src.len());
    let last = rank - 1;
    let (inner, inner_stride) = (dims[last], stride[last]);
    let mut index = vec![0usize; rank];
    let mut base = 0usize;
    // Walk the output in row-major order, a run of the last dimension at a time.
    loop {
        for i in 0..inner {
            let at = (base + i * inner_stride) * elem;
            out.extend_from_slice(&src[at..at + elem]);
        }
        // Step the outer dimensions like an odometer, keeping `base` their Fortran offset.
        let mut k = last;
        loop {
            if k == 0 {
                return out;
            }
            k -= 1;
            index[k] += 1;
            base += stride[k];
            if index[k] < dims[k] {
                break;
            }
            base -= stride[k] * dims[k];
            index[k] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_order_is_transposed() {
        // A 2x3 array [[0,1,2],[3,4,5]] in Fortran order: columns first.
        let f = Bytes::from_vec(vec![0, 3, 1, 4, 2, 5]);
        let out = to_row_major_le(f, DType::UInt8, ByteOrder::Little, true, &[2, 3]);
        assert_eq!(&*out, &[0, 1, 2, 3, 4, 5]);
        // 2x2x2 of u16: element (i,j,k) = 4i+2j+k, stored with i fastest, big-endian.
        let mut stored = Vec::new();
        for k in 0..2u16 {
            for j in 0..2u16 {
                for i in 0..2u16 {
                    stored.extend_from_slice(&(4 * i + 2 * j + k).to_be_bytes());
                }
            }
        }
        let out = to_row_major_le(Bytes::from_vec(stored), DType::UInt16, ByteOrder::Big, true, &[2, 2, 2]);
        let want: Vec<u8> = (0..8u16).flat_map(u16::to_le_bytes).collect();
        assert_eq!(&*out, &want[..]);
    }

    #[test]
    fn little_endian_c_order_is_not_copied_and_big_endian_is_swapped() {
        let stored = Bytes::from_vec(vec![1, 2, 3, 4]);
        let out = to_row_major_le(stored.clone(), DType::Float32, ByteOrder::Little, false, &[1]);
        assert_eq!(out.as_ptr(), stored.as_ptr());
        let out = to_row_major_le(stored.clone(), DType::Complex64, ByteOrder::Big, false, &[]);
        assert_eq!(&*out, &[4, 3, 2, 1]);
        let out = to_row_major_le(stored.clone(), DType::UInt8, ByteOrder::Big, true, &[4, 1]);
        assert_eq!(&*out, &[1, 2, 3, 4]);
        let empty = to_row_major_le(Bytes::from_vec(vec![]), DType::Int64, ByteOrder::Big, true, &[0, 3]);
        assert!(empty.is_empty());
    }
}
