//! Staging a file's tensors through a few buffers owned here on their way to a device
//! ([`tensorfile::io::stage`]): the Python side registers the buffers with the driver as pinned
//! memory, asks for each stage to be filled (on all cores, the GIL released) and copies the
//! stage's pieces to the device, filling a buffer again only once its copies are done.

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use rayon::prelude::*;
use tensorfile::io::stage::{Direct, Piece, StageBuffer, StagePlan, StageTensor};
use tensorfile::model::{ByteOrder, Encoding};
use tensorfile::{Error, TensorFile};

use crate::errors::IntoPy;
use crate::tensor::{NativeTensor, read_unread};

/// A plan of stages over some tensors of a file.
#[pyclass(frozen, module = "tensorfile._native")]
pub struct NativeStaging {
    plan: Arc<StagePlan>,
}

/// One staging buffer (page-aligned memory owned here, reused from load to load so that a
/// driver's registration of it lasts), as numpy sees it: read-only, since only this crate
/// writes to it, and kept alive as the base of every array made from it.
#[pyclass(frozen, module = "tensorfile._native")]
pub struct NativeStageBuffer {
    buffer: Mutex<StageBuffer>,
    address: usize,
    len: usize,
}

/// A staging buffer of `len` bytes.
#[pyfunction]
pub fn stage_buffer(py: Python<'_>, len: usize) -> PyResult<NativeStageBuffer> {
    let buffer = py.detach(|| StageBuffer::new(len)).py()?;
    let (address, len) = (buffer.address(), buffer.bytes().len());
    Ok(NativeStageBuffer { buffer: Mutex::new(buffer), address, len })
}

#[pymethods]
impl NativeStageBuffer {
    /// numpy's array interface (version 3): the buffer's bytes, read-only.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, [self.len])?)?;
        d.set_item("typestr", "|u1")?;
        d.set_item("data", (self.address, true))?;
        d.set_item("strides", py.None())?;
        Ok(d)
    }

    /// Where the buffer starts and its length, for registering it with a driver.
    fn span(&self) -> (usize, usize) {
        (self.address, self.len)
    }
}

/// The plan for `tensors` (tensors of `file`, dense, read now where they were not: all at
/// once on rayon's threads) through buffers of `chunk` bytes.
pub fn plan(
    py: Python<'_>,
    file: &Arc<TensorFile>,
    tensors: &[PyRef<'_, NativeTensor>],
    chunk: usize,
    direct: &str,
) -> PyResult<NativeStaging> {
    let direct = match direct {
        "auto" => Direct::Auto,
        "always" => Direct::Always,
        "never" => Direct::Never,
        other => return Err(Error::usage(format!("direct must be 'auto', 'always' or 'never', not {other:?}"))).py(),
    };
    if let Some(other) = tensors.iter().find(|t| !Arc::ptr_eq(t.file(), file)) {
        return Err(Error::usage(format!("{} is a tensor of another file", other.name()))).py();
    }
    // Tensors that must be decoded (compressed, swapped, remote) are read when their stage is
    // filled and dropped after it: the file is never held decoded whole. The others (slices
    // of the file's map) are read now, at once on rayon's threads.
    let later: Vec<bool> = tensors.iter().map(|t| t.unread() && !is_slice_of_file(file, t.index())).collect();
    let now: Vec<&NativeTensor> = tensors.iter().zip(&later).filter(|(_, l)| !**l).map(|(t, _)| &**t).collect();
    read_unread(py, file, &now, |file, indices| indices.par_iter().map(|&i| file.read_index(i)).collect())?;
    let mut staged = Vec::with_capacity(tensors.len());
    for (t, later) in tensors.iter().zip(later) {
        staged.push(if later {
            let (file, index, name) = (file.clone(), t.index(), t.name().to_string());
            let len = file.entries()[index].nbytes();
            StageTensor::later(
                len,
                Box::new(move || file.read_index(index)?.as_dense().cloned().map_err(|e| e.for_tensor(&name))),
            )
        } else {
            StageTensor::Ready(t.dense_bytes(py)?)
        });
    }
    let plan = py.detach(move || StagePlan::with_later(staged, chunk, direct)).py()?;
    Ok(NativeStaging { plan: Arc::new(plan) })
}

/// Whether entry `index` reads as a slice of the file's bytes as they are (raw, little-endian,
/// local): nothing to decode, nothing held.
fn is_slice_of_file(file: &TensorFile, index: usize) -> bool {
    let storage = file.entries()[index].storage();
    !file.is_remote() && storage.encoding() == Encoding::Raw && storage.byte_order() == ByteOrder::Little
}

#[pymethods]
impl NativeStaging {
    /// Stages in the plan.
    fn __len__(&self) -> usize {
        self.plan.len()
    }

    /// The bytes of each buffer.
    #[getter]
    fn chunk(&self) -> usize {
        self.plan.chunk()
    }

    /// The pieces of stage `k`: `(tensor, offset, len, at)` each, `len` bytes from `offset`
    /// in tensor `tensor` (its position in the list planned) lie at `at` in the buffer.
    fn pieces(&self, k: usize) -> PyResult<Vec<(usize, u64, u64, u64)>> {
        let pieces = self.plan.pieces(k).py()?;
        Ok(pieces.iter().map(|&Piece { tensor, offset, len, at }| (tensor, offset, len, at)).collect())
    }

    /// Whether stage `k` is read with `O_DIRECT`.
    fn is_direct(&self, k: usize) -> PyResult<bool> {
        self.plan.is_direct(k).py()
    }

    /// Fill `buffer` with stage `k` (the GIL released), on all cores, or with `alone` on this
    /// thread only (a caller running a filler per core). The caller has waited for every copy
    /// out of that buffer before: the bytes there are overwritten.
    #[pyo3(signature = (k, buffer, alone = false))]
    fn fill(&self, py: Python<'_>, k: usize, buffer: Py<NativeStageBuffer>, alone: bool) -> PyResult<()> {
        let plan = self.plan.clone();
        py.detach(move || {
            let mut held = buffer.get().buffer.lock().unwrap_or_else(|e| e.into_inner());
            if alone { plan.fill_alone(k, held.bytes_mut()) } else { plan.fill(k, held.bytes_mut()) }
        })
        .py()
    }
}
