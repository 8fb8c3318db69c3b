//! One tensor of an opened file: what it is, and its bytes, read on first use (with the GIL
//! released) and exported through the buffer protocol.

use std::ffi::{CString, c_int};
use std::sync::{Arc, OnceLock};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use tensorfile::model::{SparseFormat, TensorData};
use tensorfile::source::Bytes;
use tensorfile::{DType, Error, TensorFile};

use crate::buffer;
use crate::errors::IntoPy;
use crate::file::NativeFile;

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
    /// A sub-range of the tensor's rows (`rows`): first row and row count.
    rows: Option<(u64, u64)>,
    data: OnceLock<Bytes>,
    /// The buffer protocol's description: struct format, item size, shape, byte strides.
    format: CString,
    itemsize: usize,
    buffer_shape: Vec<isize>,
    buffer_strides: Vec<isize>,
}

/// The struct-module code of a dtype, and its item size. Dtypes the buffer protocol has no
/// code for (bfloat16, float8...) are exported as unsigned integers of their width: the raw
/// bits; sub-byte and other odd dtypes as bytes.
fn buffer_format(dtype: DType) -> (&'static str, usize) {
    match dtype {
        DType::Bool => ("?", 1),
        DType::UInt8 => ("B", 1),
        DType::Int8 => ("b", 1),
        DType::UInt16 => ("H", 2),
        DType::Int16 => ("h", 2),
        DType::UInt32 => ("I", 4),
        DType::Int32 => ("i", 4),
        DType::UInt64 => ("Q", 8),
        DType::Int64 => ("q", 8),
        DType::Float16 => ("e", 2),
        DType::Float32 => ("f", 4),
        DType::Float64 => ("d", 8),
        DType::Complex64 => ("Zf", 8),
        DType::Complex128 => ("Zd", 16),
        other => match other.size() {
            Some(2) => ("H", 2),
            Some(4) => ("I", 4),
            Some(8) => ("Q", 8),
            _ => ("B", 1),
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
        let (code, itemsize) = buffer_format(dtype);
        // Shapes the buffer protocol can describe: whole elements of at least one byte.
        let typed = dtype.size().is_some_and(|s| s as usize == itemsize);
        let buffer_shape: Vec<isize> =
            if typed { shape.iter().map(|&d| to_isize(d)).collect::<PyResult<_>>()? } else { vec![to_isize(nbytes)?] };
        let mut buffer_strides = vec![0isize; buffer_shape.len()];
        let mut stride = itemsize as isize;
        for (s, d) in buffer_strides.iter_mut().zip(&buffer_shape).rev() {
            *s = stride;
            stride = stride.saturating_mul((*d).max(1));
        }
        Ok(NativeTensor {
            name: e.info().name().to_string(),
            file,
            index,
            dtype,
            shape,
            nbytes,
            sparse,
            rows,
            data: OnceLock::new(),
            format: CString::new(code).expect("codes have no NUL"),
            itemsize,
            buffer_shape,
            buffer_strides,
        })
    }

    /// The whole tensor's data (sparse tensors included).
    fn read_all(&self, py: Python<'_>) -> PyResult<TensorData> {
        let (file, index) = (self.file.clone(), self.index);
        py.detach(move || file.read_index(index)).map_err(|e| e.for_tensor(&self.name)).py()
    }

    /// The dense bytes this tensor exports, read on first use: for some rows, only those
    /// ([`TensorFile::read_rows`]).
    fn bytes(&self, py: Python<'_>) -> PyResult<&Bytes> {
        if let Some(b) = self.data.get() {
            return Ok(b);
        }
        let Some((first, count)) = self.rows else {
            let all = self.read_all(py)?;
            return self.keep(all);
        };
        let (file, index) = (self.file.clone(), self.index);
        let rows = py.detach(move || file.read_rows(index, first..first.saturating_add(count))).py()?;
        Ok(self.data.get_or_init(|| rows))
    }

    /// Whether the bytes of the whole tensor still need reading: dense, not read yet.
    pub(crate) fn unread(&self) -> bool {
        !self.sparse && self.rows.is_none() && self.data.get().is_none()
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    pub(crate) fn file(&self) -> &Arc<TensorFile> {
        &self.file
    }

    /// Keep the whole entry's data, read by the caller, as the bytes this tensor exports.
    pub(crate) fn keep(&self, all: TensorData) -> PyResult<&Bytes> {
        let dense = all.as_dense().map_err(|e| e.clone().for_tensor(&self.name)).py()?.clone();
        Ok(self.data.get_or_init(|| dense))
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

    #[getter]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    #[getter]
    fn shape(&self) -> Vec<u64> {
        self.shape.clone()
    }

    #[getter]
    fn nbytes(&self) -> u64 {
        self.nbytes
    }

    #[getter]
    fn is_sparse(&self) -> bool {
        self.sparse
    }

    /// The buffer's struct format ("f", "e", "H" for bfloat16's bits...).
    #[getter]
    fn buffer_format(&self) -> String {
        self.format.to_string_lossy().into_owned()
    }

    /// Read the bytes now (they are read on first use otherwise).
    fn load(&self, py: Python<'_>) -> PyResult<()> {
        self.bytes(py).map(|_| ())
    }

    /// A copy of the bytes: contiguous, row-major, little-endian.
    fn tobytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        Ok(PyBytes::new(py, self.bytes(py)?))
    }

    /// Whether the bytes are a view of the file's memory map (no copy was made), and the
    /// address range of that map (or of the buffer they were decoded into).
    fn memory(&self, py: Python<'_>) -> PyResult<(bool, usize, usize, usize)> {
        let b = self.bytes(py)?;
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

    /// A sparse tensor's parts: format ("coo" or "csr"), nnz, indptr and indices (lists),
    /// and the values' bytes.
    fn sparse_parts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let Ok(s) = self.read_all(py)?.to_sparse() else {
            return Err(Error::usage(format!("{} is dense", self.name))).py();
        };
        let d = PyDict::new(py);
        d.set_item("format", if s.format() == SparseFormat::Coo { "coo" } else { "csr" })?;
        d.set_item("nnz", s.nnz())?;
        d.set_item("indptr", s.indptr())?;
        d.set_item("indices", s.indices())?;
        d.set_item("values", PyBytes::new(py, s.values()))?;
        Ok(d)
    }

    // pyo3 requires the buffer slot to be declared `unsafe fn` (CPython passes it a raw
    // `Py_buffer` pointer); all it does is hand that pointer to `buffer::fill`, the crate's
    // unsafe module. The allowance covers this one method, not the rest of the class.
    #[allow(unsafe_code)]
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let me = slf.get();
        let data = me.bytes(slf.py())?;
        let layout = buffer::Layout {
            data,
            itemsize: me.itemsize,
            format: &me.format,
            shape: &me.buffer_shape,
            strides: &me.buffer_strides,
        };
        // SAFETY: `data`, `format`, `shape` and `strides` live inside `slf`'s object, which
        // never changes them after creation (frozen, and `data` is set once), and the view
        // holds a reference to that object.
        unsafe { buffer::fill(view, flags, &layout, slf.clone().into_any()) }
    }

    fn __repr__(&self) -> String {
        format!("Tensor({:?}, dtype={}, shape={:?})", self.name, self.dtype.name(), self.shape)
    }
}
