//! Writing what [`super::plan`] decided: each output file's header as planned, then every
//! tensor in the planned order, its rows quantized as ggml's `ggml_quantize_chunk` quantizes
//! them (from `f32`: F16, BF16 and quantized inputs widened or dequantized first, as
//! llama-quantize does) or its bytes copied, each padded with zeros to the alignment. One
//! tensor in memory at a time; every output staged under a temporary name and put in place
//! together at the end.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Imatrix, PlannedTensor, QuantizeInput, QuantizePlan, QuantizeRequest, plan, split_path};
use crate::convert::Progress;
use crate::convert::as_f32;
use crate::error::{Error, Result, Rule};
use crate::file::TensorFile;
use crate::formats::gguf;
use crate::model::quant::{BLOCKS, GgmlType, ggml};
use crate::model::{TensorData, TensorInfo};
use crate::output::{AtomicFile, StagedFile};

/// What a quantization wrote.
#[derive(Debug, Clone)]
pub struct Quantized {
    /// The files written: one, or one per split of the input (`keep_split`).
    pub files: Vec<PathBuf>,
    /// The plan they follow (types, key/values, layout).
    pub plan: QuantizePlan,
    /// Bytes of tensor data read from the input.
    pub bytes_in: u64,
    /// Bytes of tensor data written (without padding).
    pub bytes_out: u64,
}

impl Quantized {
    /// (name, type in the input, type written) of every tensor whose type changed.
    pub fn changed(&self) -> Vec<(&str, GgmlType, GgmlType)> {
        self.plan
            .files
            .iter()
            .flat_map(|f| &f.tensors)
            .filter(|t| t.quantized())
            .map(|t| (t.name.as_str(), t.from, t.to))
            .collect()
    }
}

/// Quantize the GGUF model `src` as `request` asks, into `output` (or, with `keep_split`,
/// one file per split of the input, named after `output` as llama-quantize names them),
/// byte for byte as llama-quantize writes it.
pub fn quantize_gguf(
    src: &TensorFile,
    output: &Path,
    request: &QuantizeRequest,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Quantized> {
    let in_src = |e: Error| match src.path() {
        Some(p) if e.path().is_none() => e.in_file(p),
        _ => e,
    };
    let input = QuantizeInput::from_file(src).map_err(in_src)?;
    quantize_model(&input, src, output, request, progress)
}

/// Where the quantizer reads the tensors of its input: a GGUF file, or tensors made as they
/// come (a checkpoint as llama.cpp's converter writes it, never written).
pub(crate) trait QuantizeSource {
    /// Tensor `index` of the input (its place in [`QuantizeInput::tensors`]): its description,
    /// its data, and how many bytes of the input were read for it.
    fn tensor(&self, index: usize) -> Result<(TensorInfo, TensorData, u64)>;

    /// An error about the input, said of its file where the error names none.
    fn in_source(&self, e: Error) -> Error;
}

impl QuantizeSource for TensorFile {
    fn tensor(&self, index: usize) -> Result<(TensorInfo, TensorData, u64)> {
        let entry = self.entries().get(index).ok_or_else(|| Error::usage("a planned tensor the input lacks"))?;
        let data = self.read_verified(index)?;
        Ok((entry.info().clone(), data, entry.nbytes().min(entry.storage().len())))
    }

    fn in_source(&self, e: Error) -> Error {
        match self.path() {
            Some(p) if e.path().is_none() => e.in_file(p),
            _ => e,
        }
    }
}

/// Quantize the model `input` describes, its tensors read from `src`, as `request` asks, into
/// `output` (see [`quantize_gguf`]).
pub(crate) fn quantize_model(
    input: &QuantizeInput,
    src: &dyn QuantizeSource,
    output: &Path,
    request: &QuantizeRequest,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<Quantized> {
    let imatrix = match &request.imatrix {
        Some(path) => Some(Imatrix::read(path)?),
        None => None,
    };
    let planned = plan(input, request, imatrix.as_ref()).map_err(|e| src.in_source(e))?;
    let weights = match &imatrix {
        Some(m) => m.weights().map_err(|e| e.in_file(request.imatrix.as_deref().unwrap_or(Path::new(""))))?,
        None => BTreeMap::new(),
    };
    let names = output_names(output, planned.files.len())?;
    let total: u64 = planned.files.iter().flat_map(|f| &f.tensors).map(|t| t.nbytes).sum();
    let mut done = 0u64;
    let (mut bytes_in, mut bytes_out) = (0u64, 0u64);
    let mut staged: Vec<StagedFile> = Vec::with_capacity(names.len());
    for (file, dest) in planned.files.iter().zip(&names) {
        let mut out = AtomicFile::create(dest)?;
        {
            let mut w = out.writer();
            let mut write = || -> Result<()> {
                w.write_all(&file.header()?)?;
                for t in &file.tensors {
                    let (read, bytes) = tensor_bytes(src, t, &weights).map_err(|e| e.for_tensor(&t.name))?;
                    if bytes.len() as u64 != t.nbytes {
                        return Err(Error::invalid(
                            Rule::BadQuantization,
                            format!("{} bytes made where the plan has {}", bytes.len(), t.nbytes),
                        )
                        .for_tensor(&t.name));
                    }
                    w.write_all(&bytes)?;
                    gguf::write_padding(&mut w, t.nbytes, file.alignment)?;
                    bytes_in += read;
                    bytes_out += t.nbytes;
                    done += t.nbytes;
                    progress(Progress { done_bytes: done, total_bytes: total, tensor: &t.name });
                }
                w.flush()?;
                Ok(())
            };
            write().map_err(|e| {
                if e.path().is_none() && e.tensor().is_some() { src.in_source(e) } else { e.in_file(dest) }
            })?;
        }
        staged.push(out.stage()?);
    }
    for s in staged {
        s.commit()?;
    }
    Ok(Quantized { files: names, plan: planned, bytes_in, bytes_out })
}

/// Where each planned file goes: `output` itself, or llama.cpp's split names made from it
/// (less its `.gguf`, as llama-quantize takes it off).
fn output_names(output: &Path, count: usize) -> Result<Vec<PathBuf>> {
    if count == 1 {
        return Ok(vec![output.to_path_buf()]);
    }
    let count = u16::try_from(count).map_err(|_| Error::unsupported("more than 65535 output files"))?;
    let text = output.to_str().ok_or_else(|| Error::usage("a split output's name must be UTF-8"))?;
    let prefix = text.strip_suffix(".gguf").unwrap_or(text);
    Ok((0..count).map(|i| PathBuf::from(split_path(prefix, i, count))).collect())
}

/// Planned tensor `t`'s bytes in the output, and how many bytes of the input it read.
fn tensor_bytes(
    src: &dyn QuantizeSource,
    t: &PlannedTensor,
    weights: &BTreeMap<Vec<u8>, Vec<f32>>,
) -> Result<(u64, Vec<u8>)> {
    let (info, data, read) = src.tensor(t.source)?;
    if !t.quantized() {
        let bytes = match data.part(BLOCKS) {
            Some(blocks) => blocks.to_vec(),
            None => data.as_dense()?.to_vec(),
        };
        return Ok((read, bytes));
    }
    let values = as_f32(&info, data)?;
    let n_per_row = usize::try_from(t.ne.first().copied().unwrap_or(1)).map_err(|_| Error::usage("a row too long"))?;
    let mut out = ggml::quantize::output_for(t.to, values.len(), n_per_row)?;
    let importance = t.imatrix_entry.as_ref().and_then(|k| weights.get(k));
    // A 3-D tensor (experts) has one importance row per matrix, as llama-quantize uses them.
    let matrices = usize::try_from(t.ne.get(2).copied().unwrap_or(1)).unwrap_or(1).max(1);
    match importance {
        Some(w) if matrices > 1 && n_per_row.checked_mul(matrices) == Some(w.len()) => {
            // Each matrix with its own row of weights; a tensor of no values (a dimension of
            // 0, which llama-quantize writes as the type with no bytes) has nothing to quantize.
            let (in_matrix, out_matrix) = (values.len() / matrices, out.len() / matrices);
            if in_matrix > 0 {
                let matrices = values.chunks_exact(in_matrix).zip(out.chunks_exact_mut(out_matrix));
                for ((v, o), w) in matrices.zip(w.chunks_exact(n_per_row)) {
                    ggml::quantize::quantize_rows(t.to, v, n_per_row, Some(w), o)?;
                }
            }
        }
        Some(w) if w.len() == n_per_row => {
            ggml::quantize::quantize_rows(t.to, &values, n_per_row, Some(w), &mut out)?;
        }
        Some(w) => {
            return Err(Error::invalid(
                Rule::BadQuantization,
                format!("importance weights of {} values for rows of {n_per_row} in {matrices} matrices", w.len()),
            ));
        }
        None => ggml::quantize::quantize_rows(t.to, &values, n_per_row, None, &mut out)?,
    }
    Ok((read, out))
}
