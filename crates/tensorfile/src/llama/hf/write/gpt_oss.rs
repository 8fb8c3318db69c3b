//! gpt-oss's expert tensors' bytes: MXFP4 blocks and scales repacked into ggml's MXFP4, dense
//! experts transposed, and the gate and up halves of `gate_up_proj` (and of its bias) taken
//! apart (`plan/gpt_oss.rs` says which).

use super::super::checkpoint::{Checkpoint, SourceTensor};
use super::super::plan::Planned;
use super::super::plan::gpt_oss::{Part, Rows};
use crate::convert::as_f32;
use crate::error::{Error, Result};
use crate::model::TensorData;
use crate::model::quant::{BLOCKS, GgmlType, Quant};
use crate::source::Bytes;

/// One MXFP4 block of 16 code bytes as gpt-oss's checkpoints store it (byte `i`: element `2i`
/// in the low nibble, `2i + 1` in the high one) in ggml's order (byte `j`: element `j` low,
/// `j + 16` high).
pub(crate) fn repack_mxfp4_codes(codes: &[u8; 16]) -> [u8; 16] {
    let element = |k: usize| if k % 2 == 0 { codes[k / 2] & 0x0f } else { codes[k / 2] >> 4 };
    std::array::from_fn(|j| element(j) | (element(j + 16) << 4))
}

/// The bytes of a source, read densely, and its shape.
fn read(checkpoint: &Checkpoint, s: &SourceTensor) -> Result<(Bytes, Vec<u64>)> {
    let file = &checkpoint.parts[s.part];
    let shape = file.entries()[s.index].info().shape().to_vec();
    let data = file.read_verified(s.index).map_err(|e| e.for_tensor(&s.name))?;
    Ok((data.as_dense().map_err(|e| e.for_tensor(&s.name))?.clone(), shape))
}

/// `blocks` (`[experts, rows, n, 16]`) and their `scales` (`[experts, rows, n]`), the rows
/// `rows` says kept, as ggml's MXFP4: per row, per block, the scale byte then the 16 codes
/// repacked.
fn mxfp4(blocks: &[u8], scales: &[u8], shape: &[u64], rows: Rows) -> Result<Vec<u8>> {
    let [experts, all_rows, n, 16] = shape[..] else {
        return Err(Error::usage(format!("MXFP4 blocks of shape {shape:?}, not [experts, rows, blocks, 16]")));
    };
    let count = experts.checked_mul(all_rows).and_then(|r| r.checked_mul(n));
    if count.and_then(|c| c.checked_mul(16)) != Some(blocks.len() as u64) || count != Some(scales.len() as u64) {
        return Err(Error::usage(format!(
            "MXFP4 blocks of {} bytes and scales of {} bytes do not fill the shape {shape:?}",
            blocks.len(),
            scales.len()
        )));
    }
    if blocks.is_empty() {
        return Ok(Vec::new());
    }
    let n = n as usize;
    let mut out = Vec::with_capacity(scales.len() / 2 * 17);
    let block_rows = blocks.chunks_exact(n * 16).zip(scales.chunks_exact(n.max(1)));
    for (i, (row_blocks, row_scales)) in block_rows.enumerate() {
        if !rows.keeps(i % all_rows as usize) {
            continue;
        }
        for (codes, &scale) in row_blocks.chunks_exact(16).zip(row_scales) {
            out.push(scale);
            let codes: &[u8; 16] = codes.try_into().map_err(|_| Error::usage("a partial MXFP4 block"))?;
            out.extend_from_slice(&repack_mxfp4_codes(codes));
        }
    }
    Ok(out)
}

/// `values` of `shape` (`[experts, in, out]`) as `[experts, out, in]`, the rows `rows` says
/// kept.
fn transposed(values: &[f32], shape: &[u64], rows: Rows) -> Result<Vec<f32>> {
    let [experts, inner, outer] = shape[..] else {
        return Err(Error::usage(format!("experts of shape {shape:?}, not [experts, in, out]")));
    };
    let fits = experts.checked_mul(inner).and_then(|n| n.checked_mul(outer));
    if fits != Some(values.len() as u64) {
        return Err(Error::usage(format!("{} values do not fill the shape {shape:?}", values.len())));
    }
    let (inner, outer) = (inner as usize, outer as usize);
    let mut out = Vec::with_capacity(values.len());
    if inner == 0 || outer == 0 {
        return Ok(out);
    }
    for expert in values.chunks_exact(inner * outer) {
        for o in (0..outer).filter(|&o| rows.keeps(o)) {
            out.extend((0..inner).map(|i| expert[i * outer + o]));
        }
    }
    Ok(out)
}

/// The tensor's bytes as planned for gpt-oss's experts (`part`).
pub(super) fn tensor_data(checkpoint: &Checkpoint, p: &Planned, part: Part) -> Result<TensorData> {
    let source = p.sources.first().ok_or_else(|| Error::usage("a gpt-oss expert tensor of no source"))?;
    let values = match part {
        Part::Mxfp4(rows) => {
            let scales = p.sources.get(1).ok_or_else(|| Error::usage("MXFP4 blocks without their scales"))?;
            let (blocks, shape) = read(checkpoint, source)?;
            let (scale_bytes, _) = read(checkpoint, scales)?;
            let bytes = mxfp4(&blocks, &scale_bytes, &shape, rows).map_err(|e| e.for_tensor(&source.name))?;
            return Ok(TensorData::quantized(Quant::Ggml(GgmlType::MXFP4), vec![(BLOCKS, Bytes::from_vec(bytes))]));
        }
        Part::Transposed(rows) | Part::Bias(rows) => {
            let file = &checkpoint.parts[source.part];
            let read_as = file.entries()[source.index].info();
            let values = as_f32(read_as, file.read_verified(source.index)?).map_err(|e| e.for_tensor(&source.name))?;
            match part {
                Part::Transposed(_) => transposed(&values, read_as.shape(), rows),
                _ => {
                    let last = read_as.shape().last().copied().unwrap_or(1).max(1) as usize;
                    let kept = values
                        .chunks_exact(last)
                        .flat_map(|row| row.iter().enumerate().filter(|(i, _)| rows.keeps(*i)).map(|(_, v)| *v));
                    Ok(kept.collect())
                }
            }
            .map_err(|e| e.for_tensor(&source.name))?
        }
    };
    let row = usize::try_from(p.info.shape().last().copied().unwrap_or(1)).unwrap_or(1).max(1);
    let t = match p.info.layout().quant() {
        Some(Quant::Ggml(t)) => *t,
        _ => GgmlType::for_dtype(p.info.dtype()).ok_or_else(|| Error::usage("an output type ggml cannot store"))?,
    };
    let bytes = if values.is_empty() { Vec::new() } else { t.quantize(&values, row, None)? };
    Ok(match t.plain() {
        Some(_) => TensorData::dense(Bytes::from_vec(bytes)),
        None => TensorData::quantized(Quant::Ggml(t), vec![(BLOCKS, Bytes::from_vec(bytes))]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mxfp4_codes_move_to_ggml_order() {
        // Element k holds k % 16: byte i of the checkpoint holds 2i (low) and 2i + 1 (high).
        let codes: [u8; 16] = std::array::from_fn(|i| (((2 * i) % 16) | (((2 * i + 1) % 16) << 4)) as u8);
        let ggml = repack_mxfp4_codes(&codes);
        // Byte j holds element j (low) and j + 16 (high): both j.
        let want: [u8; 16] = std::array::from_fn(|j| (j | (j << 4)) as u8);
        assert_eq!(ggml, want);
    }

    #[test]
    fn mxfp4_rows_are_kept_as_asked_with_their_scales_first() {
        // One expert, 2 rows of one block.
        let blocks: Vec<u8> = (0..32).collect();
        let scales = [100u8, 200];
        let even = mxfp4(&blocks, &scales, &[1, 2, 1, 16], Rows::Even).unwrap();
        assert_eq!(even.len(), 17);
        assert_eq!(even[0], 100);
        let odd = mxfp4(&blocks, &scales, &[1, 2, 1, 16], Rows::Odd).unwrap();
        assert_eq!(odd[0], 200);
        assert_eq!(mxfp4(&blocks, &scales, &[1, 2, 1, 16], Rows::All).unwrap().len(), 34);
        assert!(mxfp4(&blocks, &scales, &[1, 3, 1, 16], Rows::All).is_err());
        assert!(mxfp4(&blocks, &scales, &[u64::MAX, 3, 1, 16], Rows::All).is_err());
        assert_eq!(mxfp4(&[], &[], &[0, 2, u64::MAX, 16], Rows::All).unwrap(), Vec::<u8>::new());
        assert_eq!(mxfp4(&[], &[], &[1, 2, 0, 16], Rows::All).unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn experts_transpose_and_keep_their_rows() {
        // One expert [in 2, out 3]: value 10i + o.
        let values = [0., 1., 2., 10., 11., 12.];
        assert_eq!(transposed(&values, &[1, 2, 3], Rows::All).unwrap(), [0., 10., 1., 11., 2., 12.]);
        assert_eq!(transposed(&values, &[1, 2, 3], Rows::Even).unwrap(), [0., 10., 2., 12.]);
        assert_eq!(transposed(&values, &[1, 2, 3], Rows::Odd).unwrap(), [1., 11.]);
        assert!(transposed(&values, &[1, 2, 4], Rows::All).is_err());
    }
}
