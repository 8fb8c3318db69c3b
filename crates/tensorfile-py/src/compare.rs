//! `tensorfile.diff`: how two files' tensors differ, as `tensorfile diff --json` says it.

use std::path::PathBuf;

use pyo3::prelude::*;
use tensorfile::TensorFile;
use tensorfile::compare::{Tolerance, compare_with};

use crate::errors::IntoPy;

/// Compare the tensors of `a` and `b` (any formats, sharded or remote) under the tolerance
/// (numpy's default for the one not given), as JSON text: what `tensorfile diff --json` prints.
#[pyfunction]
#[pyo3(signature = (a, b, atol=None, rtol=None))]
pub fn diff_json(py: Python<'_>, a: PathBuf, b: PathBuf, atol: Option<f64>, rtol: Option<f64>) -> PyResult<String> {
    let tolerance = Tolerance::or_numpy(atol, rtol).py()?;
    let value = py
        .detach(|| {
            let (fa, fb) = (TensorFile::open(&a)?, TensorFile::open(&b)?);
            let mut value = serde_json::json!({ "a": a.display().to_string(), "b": b.display().to_string() });
            if let (Some(all), serde_json::Value::Object(fields)) =
                (value.as_object_mut(), compare_with(&fa, &fb, tolerance).to_json())
            {
                all.extend(fields);
            }
            Ok::<_, tensorfile::Error>(value)
        })
        .py()?;
    Ok(value.to_string())
}
