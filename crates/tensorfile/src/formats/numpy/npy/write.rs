//! Writing an `.npy` file: the header, then the one tensor's bytes as they arrive.

use std::io::Write;

use super::super::{check_supported, numpy_descr, write::header};
use crate::error::{Error, Result};
use crate::formats::{FormatWriter, Output, check_data, copy_streamed};
use crate::model::{Chunks, TensorData, TensorInfo};

/// A streaming `.npy` writer: a file holds exactly one array.
pub struct NpyWriter<'w> {
    out: Box<dyn Output + 'w>,
    info: TensorInfo,
    written: bool,
}

/// The header of an `.npy` file holding `info` (checked to be one NumPy holds).
pub(crate) fn header_of(info: &TensorInfo) -> Result<Vec<u8>> {
    check_supported(info)?;
    let descr =
        numpy_descr(info.dtype()).ok_or_else(|| Error::unsupported(format!("NumPy has no dtype {}", info.dtype())))?;
    header(descr, info.shape()).map_err(|e| e.for_tensor(info.name()))
}

impl<'w> NpyWriter<'w> {
    /// A writer for `plan`, which must hold exactly one tensor NumPy can store.
    pub fn new(mut out: Box<dyn Output + 'w>, plan: &[TensorInfo]) -> Result<Self> {
        let [info] = plan else {
            return Err(Error::usage(format!(
                "an .npy file holds exactly one array, not {}: write an .npz instead",
                plan.len()
            )));
        };
        out.write_all(&header_of(info)?)?;
        Ok(NpyWriter { out, info: info.clone(), written: false })
    }

    fn next(&mut self) -> Result<()> {
        if std::mem::replace(&mut self.written, true) {
            return Err(Error::usage("more tensors written than planned"));
        }
        Ok(())
    }
}

impl FormatWriter for NpyWriter<'_> {
    fn write(&mut self, data: &TensorData) -> Result<()> {
        self.next()?;
        check_data(&self.info, data).map_err(|e| e.for_tensor(self.info.name()))?;
        self.out.write_all(data.as_dense()?)?;
        Ok(())
    }

    fn write_chunks<'s>(&mut self, open: &mut dyn FnMut() -> Result<Chunks<'s>>) -> Result<()> {
        self.next()?;
        copy_streamed(&mut *self.out, &self.info, open).map(|_| ())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        if !self.written {
            return Err(Error::usage("writer finished before its one tensor"));
        }
        self.out.flush()?;
        Ok(())
    }
}
