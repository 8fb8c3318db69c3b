//! Writing GGUF version 3, little-endian: the header, the key/values and the tensor infos first
//! (every size is known from the plan), then each tensor's data as it arrives, padded to the
//! alignment (the last one too, as gguf-py pads it).

use std::io::Write;

use super::encode::{IndexTensor, encode_index, write_padding};
use super::{ALIGNMENT_KEY, DEFAULT_ALIGNMENT, check_supported, ggml_type};
use crate::checked;
use crate::error::{Error, Result};
use crate::formats::{FormatWriter, Output, WriteOptions, check_data, copy_streamed};
use crate::model::quant::BLOCKS;
use crate::model::{Chunks, MetaValue, Number, TensorData, TensorInfo};

/// A streaming GGUF writer.
pub struct GgufWriter<'w> {
    out: Box<dyn Output + 'w>,
    plan: Vec<TensorInfo>,
    alignment: u64,
    next: usize,
}

/// The metadata as written, with `general.alignment` (when given) as the `u32` readers require,
/// and the alignment it sets (32 when it sets none). An integer, or text holding one, that is a
/// power of two below 2^32 is an alignment; anything else is refused.
fn with_alignment(metadata: &[(String, MetaValue)]) -> Result<(Vec<(String, MetaValue)>, u64)> {
    let mut alignment = DEFAULT_ALIGNMENT;
    let mut out = Vec::with_capacity(metadata.len());
    for (key, value) in metadata {
        if key != ALIGNMENT_KEY {
            out.push((key.clone(), value.clone()));
            continue;
        }
        let given = match value {
            MetaValue::Number(n) => n.as_i128(),
            MetaValue::Int(i) => Some(*i),
            MetaValue::Text(s) => s.trim().parse::<i128>().ok(),
            _ => None,
        };
        let a = given.and_then(|a| u32::try_from(a).ok()).filter(|a| a.is_power_of_two()).ok_or_else(|| {
            Error::usage(format!("{ALIGNMENT_KEY} {} is not a power of two below 2^32", value.to_json()))
        })?;
        alignment = u64::from(a);
        out.push((key.clone(), MetaValue::Number(Number::U32(a))));
    }
    Ok((out, alignment))
}

impl<'w> GgufWriter<'w> {
    /// A writer for the tensors of `plan`, in that order; errors naming the first tensor GGUF
    /// cannot hold, or metadata it cannot store.
    pub fn new(mut out: Box<dyn Output + 'w>, plan: &[TensorInfo], options: &WriteOptions) -> Result<Self> {
        for info in plan {
            check_supported(info).map_err(|e| e.for_tensor(info.name()))?;
        }
        let mut names: Vec<&str> = plan.iter().map(TensorInfo::name).collect();
        names.sort_unstable();
        if let Some(pair) = names.windows(2).find(|p| p[0] == p[1]) {
            return Err(Error::usage(format!("two tensors named {:?}", pair[0])));
        }
        let (metadata, alignment) = with_alignment(&options.metadata)?;
        // ggml's `ne`: the shape, fastest dimension first.
        let nes: Vec<Vec<u64>> = plan.iter().map(|info| info.shape().iter().rev().copied().collect()).collect();
        let mut infos = Vec::with_capacity(plan.len());
        let mut offset = 0u64;
        for (info, ne) in plan.iter().zip(&nes) {
            infos.push(IndexTensor { name: info.name(), ne, ggml_type: ggml_type(info)?.id(), offset });
            offset = checked::align_up(checked::add(offset, info.nbytes()?, "data size")?, alignment)?;
        }
        let head = encode_index(&metadata, &infos)?;
        out.write_all(&head)?;
        // gguf-py starts the data region aligned only when there are tensors.
        if !plan.is_empty() {
            write_padding(&mut out, head.len() as u64, alignment)?;
        }
        Ok(GgufWriter { out, plan: plan.to_vec(), alignment, next: 0 })
    }

    fn planned(&self) -> Result<&TensorInfo> {
        self.plan.get(self.next).ok_or_else(|| Error::usage("more tensors written than planned"))
    }

    /// The padding after a tensor of `len` bytes, and the next tensor.
    fn done(&mut self, len: u64) -> Result<()> {
        write_padding(&mut self.out, len, self.alignment)?;
        self.next += 1;
        Ok(())
    }
}

impl FormatWriter for GgufWriter<'_> {
    fn write(&mut self, data: &TensorData) -> Result<()> {
        let info = self.planned()?;
        check_data(info, data).map_err(|e| e.for_tensor(info.name()))?;
        let bytes = match info.layout().quant() {
            Some(_) => data.part(BLOCKS).ok_or_else(|| Error::usage("ggml data without its blocks"))?,
            None => data.as_dense()?,
        };
        // A slice of a mapped file goes through the output's kernel copy where it has one.
        self.out.write_bytes(bytes)?;
        self.done(bytes.len() as u64)
    }

    fn write_chunks<'s>(&mut self, open: &mut dyn FnMut() -> Result<Chunks<'s>>) -> Result<()> {
        let info = self.plan.get(self.next).ok_or_else(|| Error::usage("more tensors written than planned"))?;
        let written = copy_streamed(&mut *self.out, info, open)?;
        self.done(written)
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        if self.next != self.plan.len() {
            return Err(Error::usage(format!("writer finished after {} of {} tensors", self.next, self.plan.len())));
        }
        self.out.flush()?;
        Ok(())
    }
}
