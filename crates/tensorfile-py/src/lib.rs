//! `tensorfile._native`: the Rust side of the Python package `tensorfile`. It opens files,
//! serves tensors as read-only buffers over the memory map (no copy when the file stores the
//! tensor raw and little-endian), and writes and converts files; the Python side
//! (`python/tensorfile/`) turns buffers into numpy arrays and torch tensors.
//!
//! The GIL is released around everything that touches a file: opening, reading, decoding,
//! writing and converting.

// Filling the `Py_buffer` CPython hands to `__getbuffer__` writes through a raw pointer: the
// crate's one `unsafe` module.
#[allow(unsafe_code)]
mod buffer;
mod errors;
mod file;
mod tensor;
mod write;

use pyo3::prelude::*;

/// Every format the library knows, as `tensorfile formats --json` lists it, as JSON text.
#[pyfunction]
fn formats_json() -> String {
    serde_json::Value::Array(tensorfile::listing::format_rows()).to_string()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<file::NativeFile>()?;
    m.add_class::<tensor::NativeTensor>()?;
    m.add_function(wrap_pyfunction!(write::write_file, m)?)?;
    m.add_function(wrap_pyfunction!(write::convert, m)?)?;
    m.add_function(wrap_pyfunction!(formats_json, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
