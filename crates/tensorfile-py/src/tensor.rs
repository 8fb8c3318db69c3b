//! One tensor of an opened file: what it is, and its bytes, read on first use (with the GIL
//! released) and described to numpy through the array interface: writable memory of the
//! tensor's own (a private copy-on-write map of the file, or a buffer), or, where asked for,
//! a read-only view of the bytes as read.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyTuple};
use tensorfile::io::{Bytes, PrivateBytes};
use tensorfile::model::{SparseFormat, TensorData, cast};
use tensorfile::{DType, Error, TensorFile};

use crate::errors::IntoPy;
use crate::opened::NativeFile;

/// One part of a tensor's layout as Python gets it: role, dtype name, shape, and a view of
/// its bytes.
type LayoutPart = (String, String, Vec<u64>, NativeBuffer);

/// Memory numpy is given: the bytes as read, shared with the file and every other reader
/// (read-only), or memory of the holder's own (writable).
enum Memory {
    Shared(Bytes),
    Private(PrivateBytes),
}

impl Memory {
    fn address(&self) -> usize {
        match self {
            Memory::Shared(b) => b.as_ptr() as usize,
            Memory::Private(p) => p.address(),
        }
    }

    fn read_only(&self) -> bool {
        matches!(self, Memory::Shared(_))
    }

    fn is_mapped(&self) -> bool {
        match self {
            Memory::Shared(b) => b.is_mapped(),
            Memory::Private(p) => p.is_mapped(),
        }
    }
}

/// Bytes with numpy's array interface: a part of a tensor, a tensor decoded by the library,
/// or a read-only view of a tensor's bytes as read; kept alive as the base of every array
/// made from it.
#[pyclass(frozen, module = "tensorfile._native")]
pub struct NativeBuffer {
    memory: Memory,
    typestr: &'static str,
    array_shape: Vec<isize>,
}

impl NativeBuffer {
    /// The bytes typed as `dtype` of `shape` (as bytes in one dimension when the dtype has no
    /// whole-byte type string): read-only when `shared`, else made the buffer's own
    /// ([`Bytes::into_private`]: no copy of a vector no one else holds, a private map of a
    /// file's range).
    fn new(py: Python<'_>, bytes: Bytes, dtype: DType, shape: &[u64], shared: bool) -> PyResult<Self> {
        let (typestr, itemsize) = typestr(dtype);
        let typed = dtype.size().is_some_and(|s| s as usize == itemsize);
        let array_shape = if typed {
            shape.iter().map(|&d| to_isize(d)).collect::<PyResult<_>>()?
        } else {
            vec![to_isize(bytes.len() as u64)?]
        };
        let memory = if shared { Memory::Shared(bytes) } else { Memory::Private(py.detach(|| bytes.into_private())) };
        Ok(NativeBuffer { memory, typestr, array_shape })
    }
}

#[pymethods]
impl NativeBuffer {
    /// numpy's array interface (version 3) over the bytes: writable unless they are a
    /// read-only view of bytes shared with the file.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        interface(py, self.memory.address(), self.memory.read_only(), self.typestr, &self.array_shape)
    }

    /// Whether the bytes come from the file's memory map without a copy: a view of the map,
    /// or a private copy-on-write map of the same pages.
    fn is_mapped(&self) -> bool {
        self.memory.is_mapped()
    }
}

/// The array interface of the memory at `address` typed by `typestr`, C-contiguous of
/// `shape`, read-only or writable.
fn interface<'py>(
    py: Python<'py>,
    address: usize,
    read_only: bool,
    typestr: &str,
    shape: &[isize],
) -> PyResult<Bound<'py, PyDict>> {
    // A slice's pointer is never null, even for no bytes: numpy takes it as it is.
    let d = PyDict::new(py);
    d.set_item("version", 3)?;
    d.set_item("shape", PyTuple::new(py, shape)?)?;
    d.set_item("typestr", typestr)?;
    d.set_item("data", (address, read_only))?;
    d.set_item("strides", py.None())?;
    Ok(d)
}

/// A tensor of a file. Immutable; its bytes are read once and shared by every consumer.
#[pyclass(frozen, subclass, module = "tensorfile._native")]
pub struct NativeTensor {
    file: Arc<TensorFile>,
    index: usize,
    name: String,
    dtype: DType,
    shape: Vec<u64>,
    nbytes: u64,
    sparse: bool,
    /// The quantization scheme's description (`ggml.q4_k`...), for a quantized tensor.
    quantized: Option<String>,
    /// A sub-range of the tensor's rows (`rows`): first row and row count.
    rows: Option<(u64, u64)>,
    /// The bytes as read (shared with the file), read once and kept until they are made
    /// the tensor's own memory (`private`).
    data: Mutex<Option<Bytes>>,
    /// The tensor's memory of its own, which every writable array of this tensor views: made
    /// once, from `data`; its address never changes once set.
    private: OnceLock<PrivateBytes>,
    /// The array interface's description: numpy type string and C-contiguous shape.
    typestr: &'static str,
    array_shape: Vec<isize>,
}

/// numpy's type string of a dtype (array interface, little-endian), and its item size. Dtypes
/// numpy has no type for (bfloat16, float8...) are described as unsigned integers of their
/// width: the raw bits; sub-byte and other odd dtypes as bytes.
fn typestr(dtype: DType) -> (&'static str, usize) {
    match dtype {
        DType::Bool => ("|b1", 1),
        DType::UInt8 => ("|u1", 1),
        DType::Int8 => ("|i1", 1),
        DType::UInt16 => ("<u2", 2),
        DType::Int16 => ("<i2", 2),
        DType::UInt32 => ("<u4", 4),
        DType::Int32 => ("<i4", 4),
        DType::UInt64 => ("<u8", 8),
        DType::Int64 => ("<i8", 8),
        DType::Float16 => ("<f2", 2),
        DType::Float32 => ("<f4", 4),
        DType::Float64 => ("<f8", 8),
        DType::Complex64 => ("<c8", 8),
        DType::Complex128 => ("<c16", 16),
        other => match other.size() {
            Some(2) => ("<u2", 2),
            Some(4) => ("<u4", 4),
            Some(8) => ("<u8", 8),
            _ => ("|u1", 1),
        },
    }
}

fn to_isize(v: u64) -> PyResult<isize> {
    isize::try_from(v).map_err(|_| Error::unsupported(format!("{v} does not fit this platform's sizes"))).py()
}

impl NativeTensor {
    pub fn new(file: Arc<TensorFile>, index: usize) -> PyResult<Self> {
        let e = &file.entries()[index];
        Self::build(file.clone(), index, e.info().shape().to_vec(), e.nbytes(), None)
    }

    fn build(
        file: Arc<TensorFile>,
        index: usize,
        shape: Vec<u64>,
        nbytes: u64,
        rows: Option<(u64, u64)>,
    ) -> PyResult<Self> {
        let e = &file.entries()[index];
        let dtype = e.info().dtype();
        let sparse = e.info().layout().is_sparse();
        let quantized = e.info().layout().quant().map(|q| q.describe());
        let (typestr, itemsize) = typestr(dtype);
        // Shapes the type string describes: whole elements of at least one byte; other dtypes
        // are their bytes, in one dimension.
        let typed = dtype.size().is_some_and(|s| s as usize == itemsize);
        let array_shape: Vec<isize> =
            if typed { shape.iter().map(|&d| to_isize(d)).collect::<PyResult<_>>()? } else { vec![to_isize(nbytes)?] };
        Ok(NativeTensor {
            name: e.info().name().to_string(),
            file,
            index,
            dtype,
            shape,
            nbytes,
            sparse,
            quantized,
            rows,
            data: Mutex::new(None),
            private: OnceLock::new(),
            typestr,
            array_shape,
        })
    }

    /// The whole tensor's data (sparse tensors included).
    fn read_all(&self, py: Python<'_>) -> PyResult<TensorData> {
        let (file, index) = (self.file.clone(), self.index);
        py.detach(move || file.read_index(index)).map_err(|e| e.for_tensor(&self.name)).py()
    }

    /// The bytes as read ([`TensorFile::read_index`]; for some rows, only those:
    /// [`TensorFile::read_rows`]), read on first use and kept: shared with the file (a view
    /// of its map when stored raw), never to be written.
    pub(crate) fn dense_bytes(&self, py: Python<'_>) -> PyResult<Bytes> {
        if let Some(b) = self.kept().as_ref() {
            return Ok(b.clone());
        }
        let bytes = self.read_dense(py)?;
        Ok(self.kept().get_or_insert(bytes).clone())
    }

    /// The bytes read now, not kept.
    fn read_dense(&self, py: Python<'_>) -> PyResult<Bytes> {
        if let Some(q) = &self.quantized {
            let detail = format!(
                "quantized ({q}): dequantize() gives its values as float32 (dequantize(dtype=...) in \
                 another float dtype), parts() its stored blocks"
            );
            return Err(Error::unsupported(detail).for_tensor(&self.name)).py();
        }
        let Some((first, count)) = self.rows else {
            let all = self.read_all(py)?;
            return all.as_dense().cloned().map_err(|e| e.for_tensor(&self.name)).py();
        };
        let (file, index) = (self.file.clone(), self.index);
        py.detach(move || file.read_rows(index, first..first.saturating_add(count))).py()
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Option<Bytes>> {
        self.data.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The tensor's memory of its own, made on first use from the bytes read (taken from
    /// `data`, so that a buffer no one else holds becomes it without a copy).
    fn private(&self, py: Python<'_>) -> PyResult<&PrivateBytes> {
        if let Some(p) = self.private.get() {
            return Ok(p);
        }
        let taken = self.kept().take();
        let bytes = match taken {
            Some(b) => b,
            None => self.read_dense(py)?,
        };
        let private = py.detach(|| bytes.into_private());
        Ok(self.private.get_or_init(|| private))
    }

    /// Whether the bytes of the whole tensor still need reading: dense, not read yet.
    pub(crate) fn unread(&self) -> bool {
        !self.sparse
            && self.quantized.is_none()
            && self.rows.is_none()
            && self.private.get().is_none()
            && self.kept().is_none()
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    pub(crate) fn file(&self) -> &Arc<TensorFile> {
        &self.file
    }

    /// Keep the whole entry's data, read by the caller, as the bytes read.
    pub(crate) fn keep(&self, all: TensorData) -> PyResult<()> {
        let dense = all.as_dense().map_err(|e| e.clone().for_tensor(&self.name)).py()?.clone();
        self.kept().get_or_insert(dense);
        Ok(())
    }
}

#[pymethods]
impl NativeTensor {
    /// The tensor `name` of `file` (how the Python `Tensor` subclass is made).
    #[new]
    fn py_new(file: PyRef<'_, NativeFile>, name: &str) -> PyResult<Self> {
        let index = file.file.index_of(name).ok_or_else(|| Error::not_found(name).in_file(file.path())).py()?;
        Self::new(file.file.clone(), index)
    }

    /// The tensor's name in the file.
    #[getter]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The dtype, in torch's spelling (`float32`, `bfloat16`...).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    /// The shape (of these rows, for a row slice).
    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.shape.clone()
    }

    /// The size of the tensor's data in bytes (of these rows, for a row slice).
    #[getter]
    fn nbytes(&self) -> u64 {
        self.nbytes
    }

    /// Whether the tensor is stored sparse (COO or CSR).
    #[getter]
    fn is_sparse(&self) -> bool {
        self.sparse
    }

    /// The quantization scheme (`ggml.q4_k`, `quant_group.4bit.g128`, `mx.f4_e2m1`), or
    /// `None` for a tensor that is not quantized.
    #[getter]
    fn quantization(&self) -> Option<&str> {
        self.quantized.as_deref()
    }

    /// The layout as the library describes it (`dense`, `sparse_coo`, `ggml.q4_k`...).
    #[getter]
    fn layout(&self) -> String {
        self.file.entries()[self.index].info().layout().describe()
    }

    /// numpy's array interface (version 3) over the tensor's memory of its own, made now if
    /// it was not: its address, writable, with the type string ("<f4", "<f2", "<u2" for
    /// bfloat16's bits...) and the shape, C-contiguous. The memory is a private copy-on-write
    /// map of the file's pages where the file stores the tensor raw (nothing is copied until a
    /// page is written), else the buffer the bytes were read or decoded into; writes never
    /// reach the file. numpy keeps this object as the array's base, and the object keeps the
    /// memory: the address stays valid as long as any array made from it.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let address = self.private(py)?.address();
        interface(py, address, false, self.typestr, &self.array_shape)
    }

    /// The bytes as read, shared with the file (a view of its map when stored raw, no copy),
    /// as a read-only buffer with the tensor's array interface.
    fn shared(&self, py: Python<'_>) -> PyResult<NativeBuffer> {
        let bytes = self.dense_bytes(py)?;
        NativeBuffer::new(py, bytes, self.dtype, &self.shape, true)
    }

    /// Read the bytes now (they are read on first use otherwise).
    fn load(&self, py: Python<'_>) -> PyResult<()> {
        if self.private.get().is_some() {
            return Ok(());
        }
        self.dense_bytes(py).map(|_| ())
    }

    /// A copy of the bytes: contiguous, row-major, little-endian; of the tensor's own memory
    /// once it has one (with what was written to it), else as read.
    fn tobytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        if let Some(p) = self.private.get() {
            return Ok(PyBytes::new(py, p));
        }
        Ok(PyBytes::new(py, &self.dense_bytes(py)?))
    }

    /// Whether the tensor's memory comes from the file's map without a copy (its own private
    /// copy-on-write map, or, before it has one, a view of the shared map), its address, and
    /// the address range of that map (or of the buffer the bytes were read or decoded into).
    fn memory(&self, py: Python<'_>) -> PyResult<(bool, usize, usize, usize)> {
        if let Some(p) = self.private.get() {
            return Ok((p.is_mapped(), p.address(), p.address(), p.address() + p.len()));
        }
        let b = self.dense_bytes(py)?;
        let owner = b.owner_addresses();
        Ok((b.is_mapped(), b.as_ptr() as usize, owner.start, owner.end))
    }

    /// Rows `start..stop` of the first dimension, as a tensor of their own, read alone when
    /// used ([`TensorFile::read_rows`]: of raw little-endian data, a slice of the map or only
    /// that range of a remote file).
    fn rows(&self, start: u64, stop: u64) -> PyResult<NativeTensor> {
        let (first, count) = self.rows.unwrap_or((0, self.shape.first().copied().unwrap_or(0)));
        if self.sparse {
            return Err(Error::unsupported("row slices of a sparse tensor")).py();
        }
        if self.shape.is_empty() || start > stop || stop > count {
            return Err(Error::usage(format!("rows {start}..{stop} of a tensor of shape {:?}", self.shape))).py();
        }
        let mut shape = self.shape.clone();
        shape[0] = stop - start;
        let bits = shape.iter().try_fold(self.dtype.bits(), |acc, &d| acc.checked_mul(d));
        let nbytes = bits.ok_or_else(|| Error::usage(format!("rows {start}..{stop}: size overflows"))).py()?;
        Self::build(self.file.clone(), self.index, shape, nbytes.div_ceil(8), Some((first + start, stop - start)))
    }

    /// The whole tensor decoded to dense data, whatever its layout (a sparse tensor's zeros
    /// filled in, a quantized one dequantized to float32, as the library's layout decoding
    /// does): contiguous, row-major, little-endian, with the array interface of the tensor's
    /// dtype and shape. Decoded once per call, with the GIL released; no copy into Python.
    /// With `dtype`, a floating tensor's values are then cast to it as the library's
    /// `convert --dtype` casts (torch's `Tensor.to()`, bit for bit).
    #[pyo3(signature = (dtype=None))]
    fn decoded(&self, py: Python<'_>, dtype: Option<&str>) -> PyResult<NativeBuffer> {
        let target = dtype.map(cast::target).transpose().py()?;
        let data = self.read_all(py)?;
        let (from, shape) = (self.dtype, self.shape.clone());
        let decode = || -> tensorfile::Result<(Bytes, DType)> {
            match target {
                Some(to) if to != from => Ok((data.to_dense_as(from, &shape, to)?, to)),
                _ => Ok((data.to_dense(from, &shape)?, from)),
            }
        };
        let (bytes, dtype) = py.detach(decode).map_err(|e| e.for_tensor(&self.name)).py()?;
        NativeBuffer::new(py, bytes, dtype, &self.shape, false)
    }

    /// The parts of the tensor's layout, in order: (role, dtype name, shape, view of the
    /// bytes); one `data` part for a dense tensor, the stored blocks or codes and scales of a
    /// quantized one: each writable memory of its own (a private copy-on-write map of the
    /// file when stored raw), or read-only views of the bytes as read when `shared`.
    #[pyo3(signature = (shared = false))]
    fn layout_parts(&self, py: Python<'_>, shared: bool) -> PyResult<Vec<LayoutPart>> {
        let entry = &self.file.entries()[self.index];
        let specs = entry.info().parts().py()?;
        let data = self.read_all(py)?;
        let mut parts = Vec::with_capacity(specs.len());
        for spec in specs {
            let bytes = data.part(spec.name()).ok_or_else(|| {
                Error::unsupported(format!("no {} part in the data read", spec.name())).for_tensor(&self.name)
            });
            let buffer = NativeBuffer::new(py, bytes.py()?.clone(), spec.dtype(), spec.shape(), shared)?;
            parts.push((spec.name().to_string(), spec.dtype().name().to_string(), spec.shape().to_vec(), buffer));
        }
        Ok(parts)
    }

    /// A sparse tensor's parts: format ("coo" or "csr"), nnz, indptr and indices (lists),
    /// and the values' bytes (a `bytearray`: numpy arrays over it are writable).
    fn sparse_parts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let Ok(s) = self.read_all(py)?.to_sparse() else {
            return Err(Error::usage(format!("{} is dense", self.name))).py();
        };
        let d = PyDict::new(py);
        d.set_item("format", if s.format() == SparseFormat::Coo { "coo" } else { "csr" })?;
        d.set_item("nnz", s.nnz())?;
        d.set_item("indptr", s.indptr())?;
        d.set_item("indices", s.indices())?;
        d.set_item("values", PyByteArray::new(py, s.values()))?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!("Tensor({:?}, dtype={}, shape={:?})", self.name, self.dtype.name(), self.shape)
    }
}

/// Read the bytes of those of `tensors` (of `file`) not read yet with `read` (given the file
/// and their entry indices, the GIL released) and keep them in the tensors.
pub(crate) fn read_unread(
    py: Python<'_>,
    file: &Arc<TensorFile>,
    tensors: &[impl std::ops::Deref<Target = NativeTensor>],
    read: impl FnOnce(&TensorFile, Vec<usize>) -> tensorfile::Result<Vec<TensorData>> + Send,
) -> PyResult<()> {
    let unread: Vec<&NativeTensor> = tensors.iter().map(|t| &**t).filter(|t| t.unread()).collect();
    if let Some(other) = unread.iter().find(|t| !Arc::ptr_eq(t.file(), file)) {
        return Err(Error::usage(format!("{} is a tensor of another file", other.name()))).py();
    }
    let indices: Vec<usize> = unread.iter().map(|t| t.index()).collect();
    let file = file.clone();
    let read = py.detach(move || read(&file, indices));
    for (tensor, data) in unread.iter().zip(read.py()?) {
        tensor.keep(data)?;
    }
    // The caller goes through them next (copies, private maps): have the kernel read their
    // span of the file ahead, for a file not in the page cache.
    let kept: Vec<Bytes> = unread.iter().filter_map(|t| t.kept().clone()).collect();
    Bytes::will_read(&kept);
    Ok(())
}
