//! Converting with a target dtype ([`super::ConvertOptions::dtype`]): which tensors are cast,
//! how they are described to the target, and their data cast.

use crate::error::{Error, Result};
use crate::file::TensorFile;
use crate::model::{DType, Kind, Layout, SparseData, TensorData, TensorInfo, cast, quant};
use crate::source::Bytes;

/// `info` as a cast to `dtype` makes it, and whether it is cast: a floating tensor of another
/// dtype takes `dtype`, a quantized one becomes dense of `dtype` (an error when it has no
/// reference dequantization); other entries (integers, bool, complex, blobs) stay as they are.
pub(super) fn as_cast(info: TensorInfo, dtype: Option<DType>) -> Result<(TensorInfo, bool)> {
    let Some(to) = dtype.filter(|_| info.kind() == Kind::Tensor) else {
        return Ok((info, false));
    };
    let quantized = info.layout().quant();
    if let Some(q) = quantized.filter(|q| !quant::can_dequantize(q)) {
        return Err(Error::unsupported(format!(
            "cannot cast to {to}: {} has no reference dequantization",
            q.describe()
        )));
    }
    if quantized.is_none() && (info.dtype() == to || !cast::can_cast_from(info.dtype())) {
        return Ok((info, false));
    }
    let layout = if quantized.is_some() { Layout::Dense } else { info.layout().clone() };
    let extra = info.extra().to_vec();
    let cast = TensorInfo::new(info.name(), info.kind(), to, info.shape().to_vec(), layout)?.with_extra(extra);
    Ok((cast, true))
}

/// Dense or sparse `data` of `from` with its elements (the values of sparse data) cast to `to`.
pub(super) fn cast_data(data: TensorData, from: DType, to: DType) -> Result<TensorData> {
    if data.is_dense() {
        return Ok(TensorData::dense(Bytes::from_vec(cast::cast(data.as_dense()?, from, to)?)));
    }
    let s = data.to_sparse()?;
    let values = Bytes::from_vec(cast::cast(s.values(), from, to)?);
    let cast = SparseData::new(s.format(), s.nnz(), s.indptr().to_vec(), s.indices().to_vec(), values)?;
    Ok(TensorData::sparse(cast))
}

/// Bytes planned entry `index` of `src` gives the target: what reading it yields, or for a
/// tensor cast to another dtype or decoded to dense, the planned tensor's size.
pub(crate) fn written_bytes(src: &TensorFile, index: usize, planned: &TensorInfo) -> u64 {
    let entry = &src.entries()[index];
    let decoded = planned.layout().reads_dense() && !entry.info().layout().reads_dense();
    if planned.dtype() == entry.info().dtype() && !decoded {
        return entry.nbytes();
    }
    planned.nbytes().unwrap_or(entry.nbytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SparseFormat;
    use crate::model::quant::{BitOrder, GgmlType, GroupQuant, Quant, ScaleForm, ZeroPoint};

    fn info(dtype: DType, layout: Layout) -> TensorInfo {
        TensorInfo::new("t", Kind::Tensor, dtype, vec![4, 8], layout).unwrap()
    }

    #[test]
    fn floating_and_quantized_tensors_are_cast_the_others_kept() {
        let to = Some(DType::BFloat16);
        let (cast, is_cast) = as_cast(info(DType::Float16, Layout::Dense), to).unwrap();
        assert!(is_cast);
        assert_eq!((cast.dtype(), cast.layout()), (DType::BFloat16, &Layout::Dense));
        let sparse = Layout::Sparse { format: SparseFormat::Csr, nnz: 3 };
        let (cast, _) = as_cast(info(DType::Float32, sparse.clone()), to).unwrap();
        assert_eq!((cast.dtype(), cast.layout()), (DType::BFloat16, &sparse));
        for kept in [
            DType::Int8,
            DType::Int4,
            DType::UInt2,
            DType::Bool,
            DType::Complex64,
            DType::BFloat16,
            DType::Float4E2M1FnX2,
        ] {
            let (same, is_cast) = as_cast(info(kept, Layout::Dense), to).unwrap();
            assert_eq!((same.dtype(), is_cast), (kept, false), "{kept}");
        }
        let (blob, is_cast) = as_cast(TensorInfo::blob("b", 8), to).unwrap();
        assert_eq!((blob.dtype(), is_cast), (DType::UInt8, false));
        assert!(!as_cast(info(DType::Float16, Layout::Dense), None).unwrap().1);

        let group = Quant::Group(GroupQuant {
            bits: 4,
            group_size: 8,
            axis: 1,
            word: DType::UInt8,
            order: BitOrder::LsbFirst,
            scale_form: ScaleForm::F32Factors,
            scale_dtype: DType::Float32,
            zero_point: ZeroPoint::None,
        });
        // Quantized: dequantized, then cast, dense; to float32 too (the dtype it reads as).
        for to in [DType::BFloat16, DType::Float32] {
            let (cast, is_cast) = as_cast(info(DType::Float32, Layout::Quantized(group.clone())), Some(to)).unwrap();
            assert_eq!((cast.dtype(), cast.layout(), is_cast), (to, &Layout::Dense, true));
        }
        // Blocks without a reference dequantization (while some type has none) cannot be cast.
        let no_reference = GgmlType::ALL.iter().map(|&t| Quant::Ggml(t)).find(|q| !quant::can_dequantize(q));
        if let Some(q) = no_reference {
            let q = TensorInfo::new("q", Kind::Tensor, DType::Float32, vec![0], Layout::Quantized(q)).unwrap();
            assert!(as_cast(q, to).unwrap_err().detail().contains("no reference dequantization"));
        }
    }

    #[test]
    fn sparse_values_are_cast_and_indices_kept() {
        let values = Bytes::from_vec([1.5f32, -0.0, 3.0e38].iter().flat_map(|v| v.to_le_bytes()).collect());
        let data =
            TensorData::sparse(SparseData::new(SparseFormat::Csr, 3, vec![0, 1, 3], vec![2, 0, 1], values).unwrap());
        let cast = cast_data(data, DType::Float32, DType::Float16).unwrap().to_sparse().unwrap();
        assert_eq!((cast.indptr(), cast.indices()), (&[0, 1, 3][..], &[2, 0, 1][..]));
        assert_eq!(&cast.values()[..], &[0x00, 0x3E, 0x00, 0x80, 0x00, 0x7C]);
    }
}
