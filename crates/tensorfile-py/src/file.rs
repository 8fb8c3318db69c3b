//! What Python calls on an opened file (`NativeFile`, defined in `opened`): entries,
//! metadata, the `info` facts, and its tensors.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tensorfile::inspect as listing;
use tensorfile::inspect::FileFacts;
use tensorfile::model::MetaValue;
use tensorfile::stats::{self, StatsOptions, TensorStats};
use tensorfile::{Access, Depth, Verify};

use crate::errors::IntoPy;
use crate::opened::NativeFile;
use crate::staging::{self, NativeStaging};
use crate::tensor::{NativeTensor, read_unread};

/// A metadata value as a Python object (through JSON, which every value has).
fn meta_to_py<'py>(py: Python<'py>, v: &MetaValue) -> PyResult<Bound<'py, PyAny>> {
    json_to_py(py, &v.to_json())
}

pub fn json_to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (v.to_string(),))
}

#[pymethods]
impl NativeFile {
    /// Open `path` (format detected by content); `data` is the `.ptd` holding an ExecuTorch
    /// program's external tensors.
    /// `access`: `map` (the default), `whole` (read whole first, around the page cache) or
    /// `auto` (whole when the file is not cached), for a local file without `data`.
    /// `verify`: `off`, `checksums` (every checksum the format stores, on each tensor read) or
    /// `full` (those and the sha256 of each file whose digest is known); `expect_sha256`: the
    /// digest the file must have (implies `full`).
    #[staticmethod]
    #[pyo3(signature = (path, data=None, access="map", verify="off", expect_sha256=None))]
    fn open(
        py: Python<'_>,
        path: PathBuf,
        data: Option<PathBuf>,
        access: &str,
        verify: &str,
        expect_sha256: Option<String>,
    ) -> PyResult<NativeFile> {
        let display = path.display().to_string();
        let access = match access {
            "map" => Access::Map,
            "whole" => Access::ReadWhole,
            "auto" => Access::ReadWholeIfCold,
            other => {
                return Err(tensorfile::Error::usage(format!(
                    "access must be 'map', 'whole' or 'auto', not {other:?}"
                )))
                .py();
            }
        };
        let verify = match verify {
            "off" => Verify::Off,
            "checksums" => Verify::Checksums,
            "full" => Verify::Full,
            other => {
                return Err(tensorfile::Error::usage(format!(
                    "verify must be False, 'checksums' or True, not {other:?}"
                )))
                .py();
            }
        };
        let mut options = tensorfile::OpenOptions::new();
        options.verify(verify);
        if let Some(hex) = &expect_sha256 {
            options.expect_sha256(hex).py()?;
        }
        match &data {
            None => options.access(access),
            Some(data) => options.data(data),
        };
        let file = py.detach(|| options.open(&path)).py()?;
        Ok(NativeFile::new(Arc::new(file), display))
    }

    #[getter(path)]
    fn py_path(&self) -> &str {
        self.path()
    }

    #[getter]
    fn format(&self) -> &'static str {
        self.file.format().name()
    }

    /// The names of the readable entries, in file order.
    fn names(&self) -> Vec<String> {
        self.file.entries().iter().map(|e| e.info().name().to_string()).collect()
    }

    /// Every entry as `ls --json` lists it, as JSON text: the readable ones in file order,
    /// then the unreadable ones.
    fn entries_json(&self) -> String {
        serde_json::Value::Array(listing::entry_rows(&self.file)).to_string()
    }

    /// Entries that cannot be read: name, dtype and shape as the file gives them, and why.
    fn unreadable<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for u in self.file.unreadable() {
            let d = PyDict::new(py);
            d.set_item("name", u.name())?;
            d.set_item("dtype", u.dtype())?;
            d.set_item("shape", u.shape().to_vec())?;
            d.set_item("error", u.error().to_string())?;
            d.set_item("rule", u.error().rule().map(|r| r.id()))?;
            list.append(d)?;
        }
        Ok(list)
    }

    /// Format, version and file-level metadata.
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let summary = self.file.summary();
        let d = PyDict::new(py);
        d.set_item("format", self.file.format().name())?;
        d.set_item("version", summary.version)?;
        let meta = PyDict::new(py);
        for (k, v) in &summary.metadata {
            meta.set_item(k, meta_to_py(py, v)?)?;
        }
        d.set_item("metadata", meta)?;
        Ok(d)
    }

    /// Read the bytes of `tensors` (of this file) now, in order: of a remote file, fetched
    /// ahead on a few threads ([`TensorFile::read_each`]) rather than one after another on
    /// first use. Sparse tensors and tensors already read are left as they are.
    fn load_tensors(&self, py: Python<'_>, tensors: Vec<PyRef<'_, NativeTensor>>) -> PyResult<()> {
        // With digests to check, they are checked beside the reads, and nothing is handed
        // over unless they hold.
        read_unread(py, &self.file, &tensors, |file, indices| {
            file.while_checking_digests(|| {
                if file.verifies() && !file.is_remote() {
                    // Every tensor's checksum checked on the library's threads (they are all
                    // held anyway): the check runs at the cores' speed, not one's.
                    use rayon::prelude::*;
                    return indices.par_iter().map(|&i| file.read_index(i)).collect();
                }
                let mut read = Vec::with_capacity(indices.len());
                file.read_each(&indices, file.verifies(), &mut |_, data| {
                    read.push(data?);
                    Ok(())
                })
                .map(|()| read)
            })
        })
    }

    /// A plan carrying the bytes of `tensors` (of this file, dense; read now where they were
    /// not, in parallel) through staging buffers of `chunk` bytes on their way to a device;
    /// windows of the file read with `O_DIRECT` where `direct` says (`auto`: when the file is
    /// not in the page cache, `always`, `never`).
    #[pyo3(signature = (tensors, chunk, direct = "auto"))]
    fn staging(
        &self,
        py: Python<'_>,
        tensors: Vec<PyRef<'_, NativeTensor>>,
        chunk: usize,
        direct: &str,
    ) -> PyResult<NativeStaging> {
        staging::plan(py, &self.file, &tensors, chunk, direct)
    }

    /// What `tensorfile info --json` prints, as JSON text.
    fn info_json(&self) -> String {
        FileFacts::of(&self.file).to_json(self.path()).to_string()
    }

    /// Check the structure and every stored checksum, and with `deep` decode every tensor
    /// too: what `tensorfile verify --json` prints (with `--deep` when `deep`), as JSON text.
    #[pyo3(signature = (deep = true))]
    fn verify_json(&self, py: Python<'_>, deep: bool) -> String {
        let file = self.file.clone();
        let depth = if deep { Depth::Deep } else { Depth::Checksums };
        py.detach(move || file.verify_with(depth)).to_json(self.path()).to_string()
    }

    /// The statistics of tensors `names` (every entry when `None`), with an `hist`-bin
    /// histogram when given: the records of `tensorfile stats --json`, as JSON text.
    #[pyo3(signature = (names = None, hist = None))]
    fn stats_json(&self, py: Python<'_>, names: Option<Vec<String>>, hist: Option<usize>) -> PyResult<String> {
        let file = self.file.clone();
        let options = StatsOptions { names: names.unwrap_or_default(), hist };
        let tensors = py.detach(move || stats::summarise(&file, &options, &|_| {})).py()?;
        Ok(serde_json::Value::Array(tensors.iter().map(TensorStats::to_json).collect()).to_string())
    }

    fn __len__(&self) -> usize {
        self.file.entries().len()
    }

    fn __contains__(&self, name: &str) -> bool {
        self.file.index_of(name).is_some()
    }
}
