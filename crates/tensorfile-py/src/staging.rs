//! Staging a file's tensors through a few buffers owned here on their way to a device
//! ([`tensorfile::io::stage`]): the Python side registers the buffers with the driver as pinned
//! memory and starts a pipeline whose threads fill stage after stage into them (the GIL never
//! needed); it waits for each stage in order (the GIL released), copies its pieces to the
//! device, and releases the buffer once those copies are done.

use std::sync::{Arc, Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use rayon::prelude::*;
use tensorfile::io::stage::{Direct, Held, Piece, StageBuffer, StagePipeline, StagePlan, StageTensor};
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
    buffer: Arc<StageBuffer>,
    address: usize,
    len: usize,
}

/// A staging buffer of `len` bytes.
#[pyfunction]
pub fn stage_buffer(py: Python<'_>, len: usize) -> PyResult<NativeStageBuffer> {
    let buffer = py.detach(|| StageBuffer::new(len)).py()?;
    let (address, len) = (buffer.address(), buffer.len());
    Ok(NativeStageBuffer { buffer: Arc::new(buffer), address, len })
}

/// Threads filling a plan's stages into a ring of staging buffers (stage `k` into buffer
/// `k % len(buffers)`), ahead of the Python thread that copies them out.
#[pyclass(frozen, module = "tensorfile._native")]
pub struct NativeStagePipeline {
    pipeline: StagePipeline,
}

#[pymethods]
impl NativeStagePipeline {
    /// Let one more stage be filled: once per buffer to start (each once registered), then
    /// once after the copies out of each stage are done, in order.
    fn release(&self) {
        self.pipeline.release();
    }

    /// Wait (the GIL released) until stage `k` is filled; the index of the buffer holding
    /// it. Raises the first failure of any stage.
    fn wait(&self, py: Python<'_>, k: usize) -> PyResult<usize> {
        py.detach(|| self.pipeline.wait(k).map(|filled| filled.index())).py()
    }

    /// Stop the threads (a part under way ends first) and wait for them.
    fn stop(&self, py: Python<'_>) {
        py.detach(|| self.pipeline.stop());
    }
}

#[pymethods]
impl NativeStageBuffer {
    /// numpy's array interface (version 3): the buffer's bytes, read-only.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        array_interface(py, self.address, self.len, true)
    }

    /// Where the buffer starts and its length, for registering it with a driver.
    fn span(&self) -> (usize, usize) {
        (self.address, self.len)
    }

    /// The buffer held for this caller to write (`NativeHeldBuffer`): refused while a
    /// pipeline or another holder has it.
    fn hold(&self) -> PyResult<NativeHeldBuffer> {
        let held = self.buffer.hold().py()?;
        Ok(NativeHeldBuffer { held: Mutex::new(Some(held)), address: self.address, len: self.len })
    }
}

/// A staging buffer held by Python to pack tensors already in memory into it, as numpy sees
/// it: writable. Let go by `release()` (or when dropped); the caller writes only before.
#[pyclass(frozen, module = "tensorfile._native")]
pub struct NativeHeldBuffer {
    held: Mutex<Option<Held>>,
    address: usize,
    len: usize,
}

#[pymethods]
impl NativeHeldBuffer {
    /// numpy's array interface (version 3): the buffer's bytes, writable.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.held.lock().unwrap_or_else(PoisonError::into_inner).is_none() {
            return Err(Error::usage("a staging buffer written after it was let go")).py();
        }
        array_interface(py, self.address, self.len, false)
    }

    /// Let the buffer go.
    fn release(&self) {
        self.held.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

/// numpy's array interface (version 3) for `len` bytes at `address`.
fn array_interface(py: Python<'_>, address: usize, len: usize, readonly: bool) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("version", 3)?;
    d.set_item("shape", PyTuple::new(py, [len])?)?;
    d.set_item("typestr", "|u1")?;
    d.set_item("data", (address, readonly))?;
    d.set_item("strides", py.None())?;
    Ok(d)
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

    /// Fill `buffer` with stage `k` (the GIL released), on all cores. The caller has waited
    /// for every copy out of that buffer before: the bytes there are overwritten.
    fn fill(&self, py: Python<'_>, k: usize, buffer: Py<NativeStageBuffer>) -> PyResult<()> {
        let plan = self.plan.clone();
        py.detach(move || plan.fill(k, buffer.get().buffer.hold()?.bytes_mut())).py()
    }

    /// Start `threads` threads (by default the library's thread count) filling the stages
    /// into `buffers`, which they hold until stopped; none is filled before a release.
    #[pyo3(signature = (buffers, threads = None))]
    fn pipeline(
        &self,
        py: Python<'_>,
        buffers: Vec<Py<NativeStageBuffer>>,
        threads: Option<usize>,
    ) -> PyResult<NativeStagePipeline> {
        let buffers: Vec<Arc<StageBuffer>> = buffers.iter().map(|b| b.get().buffer.clone()).collect();
        let threads = threads.unwrap_or_else(tensorfile::thread_count);
        let plan = self.plan.clone();
        let pipeline = py.detach(move || StagePipeline::start(plan, buffers, threads)).py()?;
        Ok(NativeStagePipeline { pipeline })
    }
}
