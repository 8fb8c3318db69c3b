//! Files in memory: a file's bytes opened without a path, and a file written into bytes (what
//! `tensorfile.safetensors` needs for safetensors' `load`, `deserialize`, `save` and
//! `serialize`).

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tensorfile::Error;
use tensorfile::io::Bytes;

use crate::errors::IntoPy;
use crate::opened::NativeFile;
use crate::write::{GivenTensor, Planned, named_format, request};

/// What errors and `path` call a file opened from bytes.
const IN_MEMORY: &str = "<bytes>";

/// Open a copy of `data`, a whole file, as `format` (recognised from its content when None).
#[pyfunction]
#[pyo3(signature = (data, format=None))]
pub fn open_bytes(py: Python<'_>, data: &[u8], format: Option<&str>) -> PyResult<NativeFile> {
    let format = format.map(named_format).transpose()?;
    let bytes = Bytes::from_vec(data.to_vec());
    let file = py
        .detach(|| match format {
            Some(format) => tensorfile::OpenOptions::new().format(format).open_bytes(bytes),
            None => tensorfile::OpenOptions::new().open_bytes(bytes),
        })
        .map_err(|e| e.in_file(IN_MEMORY))
        .py()?;
    Ok(NativeFile::new(Arc::new(file), IN_MEMORY.to_string()))
}

/// A whole file of `format` holding `tensors` (as `write_file` takes them, in the order the
/// format stores them) and `metadata`, as bytes; options the format ignores are named in a
/// `UserWarning`, as `write_file` names them. Each tensor's bytes are taken when it is
/// written, with the GIL, which is released for the rest.
#[pyfunction]
#[pyo3(signature = (tensors, format, metadata=None))]
pub fn write_bytes<'py>(
    py: Python<'py>,
    tensors: Vec<GivenTensor<'_>>,
    format: &str,
    metadata: Option<Vec<(String, String)>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let format = named_format(format)?;
    let options = request(py, format, None, None, false, metadata)?;
    let plan = Planned::new(format, tensors)?;
    let in_memory = |e: Error| e.in_file(IN_MEMORY);
    let mut out = std::io::Cursor::new(Vec::new());
    py.detach(|| plan.write(format, Box::new(&mut out), &options, &in_memory))?;
    Ok(PyBytes::new(py, out.get_ref()))
}
