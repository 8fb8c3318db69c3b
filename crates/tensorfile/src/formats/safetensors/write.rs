//! Writing safetensors: the header first (every size is known from the plan), then the data
//! of each tensor as it arrives, tiling the data region exactly.

use std::io::Write;

use serde_json::{Map, Value, json};

use super::{check_supported, dtype_name};
use crate::error::{Error, Result, Rule};
use crate::formats::{FormatWriter, Output, WriteOptions, check_data, copy_streamed};
use crate::limits::MAX_SAFETENSORS_HEADER;
use crate::model::{Chunks, MetaValue, TensorData, TensorInfo};

/// A streaming safetensors writer.
pub struct SafetensorsWriter<'w> {
    out: Box<dyn Output + 'w>,
    plan: Vec<TensorInfo>,
    next: usize,
}

/// The header of a file holding `plan` in that order, padded with spaces to a multiple of 8
/// bytes (as the safetensors library does) so the data region starts aligned.
pub fn header(plan: &[TensorInfo], metadata: &[(String, MetaValue)]) -> Result<Vec<u8>> {
    let mut top = Map::new();
    if !metadata.is_empty() {
        let m: Map<String, Value> = metadata
            .iter()
            .map(|(k, v)| {
                let text = match v {
                    MetaValue::Text(s) => s.clone(),
                    other => other.to_json().to_string(),
                };
                (k.clone(), Value::String(text))
            })
            .collect();
        top.insert("__metadata__".into(), Value::Object(m));
    }
    let mut offset = 0u64;
    for info in plan {
        let dtype = dtype_name(info.dtype())
            .ok_or_else(|| Error::unsupported(format!("safetensors has no dtype {}", info.dtype())))?;
        let end = offset
            .checked_add(info.nbytes()?)
            .ok_or_else(|| Error::invalid(Rule::OutOfBounds, "total size overflows"))?;
        let entry = json!({ "dtype": dtype, "shape": info.shape(), "data_offsets": [offset, end] });
        if top.insert(info.name().to_string(), entry).is_some() {
            return Err(Error::usage(format!("two tensors named {:?}", info.name())));
        }
        offset = end;
    }
    let mut bytes = serde_json::to_vec(&Value::Object(top)).map_err(|e| Error::usage(e.to_string()))?;
    bytes.resize(bytes.len().next_multiple_of(8), b' ');
    if bytes.len() as u64 > MAX_SAFETENSORS_HEADER {
        return Err(Error::unsupported(format!(
            "header of {} bytes exceeds the safetensors limit of {MAX_SAFETENSORS_HEADER}",
            bytes.len()
        )));
    }
    Ok(bytes)
}

impl<'w> SafetensorsWriter<'w> {
    /// A writer for the tensors of `plan`; errors naming the first one safetensors cannot hold.
    pub fn new(mut out: Box<dyn Output + 'w>, plan: &[TensorInfo], options: &WriteOptions) -> Result<Self> {
        for info in plan {
            check_supported(info).map_err(|e| e.for_tensor(info.name()))?;
        }
        let header = header(plan, &options.metadata)?;
        out.write_all(&(header.len() as u64).to_le_bytes())?;
        out.write_all(&header)?;
        Ok(SafetensorsWriter { out, plan: plan.to_vec(), next: 0 })
    }
}

impl FormatWriter for SafetensorsWriter<'_> {
    fn write(&mut self, data: &TensorData) -> Result<()> {
        let info = self.plan.get(self.next).ok_or_else(|| Error::usage("more tensors written than planned"))?;
        check_data(info, data).map_err(|e| e.for_tensor(info.name()))?;
        self.out.write_all(data.as_dense()?)?;
        self.next += 1;
        Ok(())
    }

    fn write_chunks<'s>(&mut self, open: &mut dyn FnMut() -> Result<Chunks<'s>>) -> Result<()> {
        let info = self.plan.get(self.next).ok_or_else(|| Error::usage("more tensors written than planned"))?;
        copy_streamed(&mut *self.out, info, open)?;
        self.next += 1;
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        if self.next != self.plan.len() {
            return Err(Error::usage(format!("writer finished after {} of {} tensors", self.next, self.plan.len())));
        }
        self.out.flush()?;
        Ok(())
    }
}
