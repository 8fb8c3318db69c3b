//! The opened file that tensors and staging plans are read from: the Python class
//! `NativeFile` itself, below the modules that use it (`tensor`, `staging`); what Python
//! calls on it is in `file`.

use std::sync::Arc;

use pyo3::prelude::*;
use tensorfile::TensorFile;

/// An opened tensor file, shared by every tensor read from it; safe to use from many threads.
#[pyclass(frozen, module = "tensorfile._native")]
pub struct NativeFile {
    pub(crate) file: Arc<TensorFile>,
    path: String,
}

impl NativeFile {
    /// `file`, opened from `path` as the caller gave it.
    pub fn new(file: Arc<TensorFile>, path: String) -> Self {
        NativeFile { file, path }
    }

    /// The path as the caller gave it.
    pub fn path(&self) -> &str {
        &self.path
    }
}
