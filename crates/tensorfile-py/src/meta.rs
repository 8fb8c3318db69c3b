//! Editing a file's metadata: the library's [`tensorfile::edit_metadata`] with the edits a
//! dict of the package's keyword arguments gives.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tensorfile::{Error, MetaEdit, TensorFile, edit_metadata as edit};

use crate::errors::IntoPy;

/// The keys `edit_metadata`'s options may have.
const META_OPTIONS: &[&str] = &["set", "delete"];

/// Write `out`: the file at `path` with its metadata edited as `options` says (`set`: a list
/// of `KEY=VALUE` or `KEY:TYPE=VALUE` texts, as `tensorfile meta --set` takes them;
/// `delete`: a list of keys). Returns the report as JSON text
/// ([`tensorfile::MetaReport::to_json`]).
#[pyfunction]
pub fn edit_metadata(py: Python<'_>, path: PathBuf, out: PathBuf, options: &Bound<'_, PyDict>) -> PyResult<String> {
    let mut job = MetaEdit::default();
    for key in options.keys() {
        let key: String = key.extract()?;
        if !META_OPTIONS.contains(&key.as_str()) {
            return Err(Error::usage(format!("edit_metadata has no option {key:?}"))).py();
        }
    }
    let list = |key: &str| -> PyResult<Vec<String>> {
        match options.get_item(key)? {
            Some(v) if !v.is_none() => Ok(v.extract()?),
            _ => Ok(Vec::new()),
        }
    };
    for s in list("set")? {
        job = job.set(&s).py()?;
    }
    for key in list("delete")? {
        job = job.delete(key);
    }
    let report = py
        .detach(|| {
            let file = TensorFile::open(&path)?;
            edit(&file, &out, &job)
        })
        .py()?;
    Ok(report.to_json(&out).to_string())
}
