//! A checkpoint converted and quantized in one pass: the tensors the converter would write,
//! made one at a time and handed to llama-quantize's planner and writer as if read from the
//! converter's file, which is never written. The bytes are those of `convert_hf_to_gguf.py`
//! followed by `llama-quantize`; with the converter's split, of its parts followed by
//! `llama-quantize --keep-split`.

use std::path::Path;

use super::parts::{self, OutputSplit};
use super::{CheckpointConverted, CheckpointOptions, Prepared, prepare, write};
use crate::checked;
use crate::convert::Progress;
use crate::error::{Error, Result};
use crate::formats::gguf;
use crate::llama::{InputTensor, QuantizeInput, QuantizeRequest, QuantizeSource, Quantized, quantize_model};
use crate::model::{TensorData, TensorInfo};

/// gguf-py's alignment of tensor data, which the converter's files keep.
const ALIGNMENT: u64 = 32;

impl QuantizeSource for Prepared {
    fn tensor(&self, index: usize) -> Result<(TensorInfo, TensorData, u64)> {
        let p = self.planned.get(index).ok_or_else(|| Error::usage("a planned tensor the conversion lacks"))?;
        let data = write::tensor_data(&self.checkpoint, p)?;
        Ok((p.info.clone(), data, p.info.nbytes()?))
    }

    fn in_source(&self, e: Error) -> Error {
        if e.path().is_none() { e.in_file(&self.dir) } else { e }
    }
}

/// The converter's file as llama-quantize would read it, cut as `split` says: the key/values
/// of its first part, and its tensors with their types, `ne`, parts and offsets as gguf-py lays
/// them out.
fn input_of(prepared: &Prepared, split: OutputSplit) -> Result<QuantizeInput> {
    let sizes: Vec<u64> = prepared.planned.iter().map(|p| p.info.nbytes()).collect::<Result<_>>()?;
    let runs = parts::cut(&sizes, split);
    let count = u16::try_from(runs.len()).map_err(|_| Error::usage("more than 65535 parts"))?;
    let total = i32::try_from(sizes.len()).map_err(|_| Error::usage("more than 2^31-1 tensors"))?;
    let mut tensors = Vec::with_capacity(prepared.planned.len());
    for (part, run) in (0..count).zip(runs) {
        let mut offset = 0u64;
        for p in &prepared.planned[run] {
            let info = &p.info;
            tensors.push(InputTensor {
                name: info.name().to_string(),
                ggml_type: gguf::ggml_type(info).map_err(|e| e.for_tensor(info.name()))?,
                ne: info.shape().iter().rev().copied().collect(),
                split: part,
                offset,
            });
            offset = checked::align_up(checked::add(offset, info.nbytes()?, "data size")?, ALIGNMENT)?;
        }
    }
    Ok(QuantizeInput { metadata: parts::part_kvs(&prepared.kvs, 0, count, total), tensors })
}

/// Convert the checkpoint in `dir` and quantize it as `llama-quantize` quantizes the
/// converter's file, into `dest`: the bytes of `convert_hf_to_gguf.py` followed by
/// `llama-quantize`, in one pass (each tensor made as the converter makes it and quantized at
/// once; no converted file is written).
pub fn convert_and_quantize(
    dir: &Path,
    dest: &Path,
    options: &CheckpointOptions,
    request: &QuantizeRequest,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<(CheckpointConverted, Quantized)> {
    if options.vocab_only {
        return Err(Error::usage("a vocabulary alone has no tensors to quantize"));
    }
    if options.split.no_tensor_first_split {
        // llama-quantize keeps the parts that hold tensors; a first part of none it cannot write.
        return Err(Error::usage("a quantized output has no part of key/values alone (llama-quantize writes none)"));
    }
    let prepared = prepare(dir, options)?;
    let input = input_of(&prepared, options.split)?;
    // The converter's parts quantized as llama-quantize --keep-split quantizes them (without it
    // llama-quantize would merge them back into the file an unsplit conversion gives).
    let mut request = request.clone();
    request.keep_split |= input.tensors.iter().any(|t| t.split > 0);
    let quantized = quantize_model(&input, &prepared, dest, &request, progress)?;
    let converted =
        prepared.converted(write::Written { bytes: quantized.bytes_in, files: Vec::new(), removed: Vec::new() });
    Ok((converted, quantized))
}
