//! The buffer protocol for tensors: the crate's only `unsafe` code.
//!
//! A tensor exports its bytes read-only, typed (struct format, shape, C-contiguous strides)
//! when the consumer asks for it. The bytes are a slice of the file's map or of the buffer the
//! tensor was decoded into; the exporting object owns an `Arc` to them and is kept alive by
//! the view (`view.obj`), so the memory outlives every consumer. The format string, shape and
//! strides the view points at are fields of that same, immutable object.

use std::ffi::{CStr, c_int, c_void};

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;

/// What a view describes, borrowed from the exporting object.
pub struct Layout<'a> {
    pub data: &'a [u8],
    pub itemsize: usize,
    pub format: &'a CStr,
    /// Sizes and byte strides, as `Py_ssize_t`.
    pub shape: &'a [isize],
    pub strides: &'a [isize],
}

/// Fill `view` for a request with `flags`, exporting `layout`, owned by `owner`.
///
/// # Safety
/// `view` is the pointer CPython passes to `__getbuffer__`; every slice in `layout` must live
/// inside `owner` and stay unchanged for as long as `owner` lives.
pub unsafe fn fill(
    view: *mut ffi::Py_buffer,
    flags: c_int,
    layout: &Layout<'_>,
    owner: Bound<'_, PyAny>,
) -> PyResult<()> {
    if view.is_null() {
        return Err(PyBufferError::new_err("no view to fill"));
    }
    if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE {
        return Err(PyBufferError::new_err("tensors are read-only"));
    }
    let len = isize::try_from(layout.data.len()).map_err(|_| PyBufferError::new_err("tensor too large"))?;
    let nd = flags & ffi::PyBUF_ND == ffi::PyBUF_ND;
    // Without a shape the consumer sees plain bytes: items of one byte, format "B".
    let (itemsize, format) = if nd { (layout.itemsize, layout.format) } else { (1, c"B") };
    let itemsize = isize::try_from(itemsize).map_err(|_| PyBufferError::new_err("item too large"))?;
    let ndim = c_int::try_from(layout.shape.len()).map_err(|_| PyBufferError::new_err("too many dimensions"))?;
    // SAFETY: `view` is non-null and points at a `Py_buffer` CPython owns for this call; we
    // write each field once. `obj` takes a new reference to `owner` (released by CPython in
    // `PyBuffer_Release`), which keeps `layout`'s memory alive as the contract requires. The
    // buffer is exported read-only, so casting away `const` for `buf` lets nobody write.
    unsafe {
        (*view).obj = owner.into_ptr();
        (*view).buf = layout.data.as_ptr() as *mut c_void;
        (*view).len = len;
        (*view).readonly = 1;
        (*view).itemsize = itemsize;
        (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
            format.as_ptr() as *mut _
        } else {
            std::ptr::null_mut()
        };
        if nd {
            (*view).ndim = ndim;
            (*view).shape = layout.shape.as_ptr() as *mut isize;
        } else {
            // A plain byte sequence: consumers read `len` bytes.
            (*view).ndim = 1;
            (*view).shape = std::ptr::null_mut();
        }
        (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
            layout.strides.as_ptr() as *mut isize
        } else {
            std::ptr::null_mut()
        };
        (*view).suboffsets = std::ptr::null_mut();
        (*view).internal = std::ptr::null_mut();
    }
    Ok(())
}
