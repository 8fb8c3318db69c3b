//! `tensorfile._native`: the Rust side of the Python package `tensorfile`. It opens files,
//! describes tensors to numpy through the array interface (`__array_interface__`: the address,
//! dtype and shape of read-only memory, the memory map itself when the file stores the tensor
//! raw and little-endian), and writes, converts and edits the metadata of files; the Python side
//! (`python/tensorfile/`) turns tensors into numpy arrays and torch tensors.
//!
//! The crate has no `unsafe` code: an address handed to numpy is only an integer here, and the
//! tensor object that owns the memory stays alive as the array's base.
//!
//! The GIL is released around everything that touches a file: opening, reading, decoding,
//! writing and converting.

mod compare;
mod errors;
mod file;
mod memory;
mod meta;
mod opened;
mod report;
mod staging;
mod tensor;
mod write;

use pyo3::prelude::*;

/// Every format the library knows, as `tensorfile formats --json` lists it, as JSON text.
#[pyfunction]
fn formats_json() -> String {
    serde_json::Value::Array(tensorfile::inspect::format_rows()).to_string()
}

/// Use `n` threads for the library's parallel work for the rest of the process (before any).
#[pyfunction]
fn set_threads(n: usize) -> PyResult<()> {
    errors::IntoPy::py(tensorfile::set_threads(n))
}

/// Keep the ranges read from remote files in `dir` (at most `limit`: bytes, or a size as
/// the CLI's `--cache-limit` takes it), for the rest of the process; `None` turns it off.
#[pyfunction]
#[pyo3(signature = (dir, limit=None))]
fn set_remote_cache(dir: Option<std::path::PathBuf>, limit: Option<String>) -> PyResult<()> {
    let limit = match limit {
        Some(text) => errors::IntoPy::py(tensorfile::convert::parse_size(&text))?,
        None => tensorfile::io::DEFAULT_CACHE_LIMIT,
    };
    tensorfile::io::set_remote_cache(dir.map(|dir| tensorfile::io::RemoteCache { dir, limit }));
    Ok(())
}

/// How many threads the library's parallel work uses.
#[pyfunction]
fn threads() -> usize {
    tensorfile::thread_count()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<opened::NativeFile>()?;
    m.add_class::<tensor::NativeTensor>()?;
    m.add_class::<tensor::NativeBuffer>()?;
    m.add_class::<staging::NativeStaging>()?;
    m.add_class::<staging::NativeStageBuffer>()?;
    m.add_class::<staging::NativeStagePipeline>()?;
    m.add_class::<staging::NativeHeldBuffer>()?;
    m.add_function(wrap_pyfunction!(write::write_file, m)?)?;
    m.add_function(wrap_pyfunction!(write::convert, m)?)?;
    m.add_function(wrap_pyfunction!(memory::open_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(memory::write_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(formats_json, m)?)?;
    m.add_function(wrap_pyfunction!(set_threads, m)?)?;
    m.add_function(wrap_pyfunction!(threads, m)?)?;
    m.add_function(wrap_pyfunction!(set_remote_cache, m)?)?;
    m.add_function(wrap_pyfunction!(staging::stage_buffer, m)?)?;
    m.add_function(wrap_pyfunction!(compare::diff_json, m)?)?;
    m.add_function(wrap_pyfunction!(report::report_page, m)?)?;
    m.add_function(wrap_pyfunction!(meta::edit_metadata, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
