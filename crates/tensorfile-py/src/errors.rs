//! Library errors as the package's exceptions (defined in `tensorfile/_errors.py`, so that
//! they can also be `KeyError`, `ValueError` or `OSError`), with the library's message and
//! the rule, file and tensor attached.

use pyo3::prelude::*;
use pyo3::types::PyAnyMethods;
use tensorfile::{Error, ErrorKind, Hint};

/// The exception class for an error kind.
fn class_name(e: &Error) -> &'static str {
    match e.kind() {
        ErrorKind::Io(_) => "FileError",
        ErrorKind::Invalid { .. } => "InvalidFileError",
        ErrorKind::Unsupported(_) => "UnsupportedError",
        ErrorKind::NotFound(_) => "TensorNotFoundError",
        ErrorKind::Usage(_) => "UsageError",
        ErrorKind::Remote(_) => "RemoteError",
        _ => "Error",
    }
}

/// What the library suggests, in this package's terms (its keyword arguments).
pub fn hint(hint: Hint) -> String {
    match hint {
        Hint::SkipUnsupported => "pass skip_unsupported=True to leave it out".into(),
        Hint::ProgramData => "open it with data='FILE.ptd'".into(),
        Hint::Drop(option) => format!("leave out {}", job_option(option)),
        other => other.describe().into(),
    }
}

/// A conversion option as this package's keyword argument (llama-quantize's under
/// `quantize_options`).
fn job_option(option: tensorfile::JobOption) -> String {
    use tensorfile::JobOption;
    let key = option.id().replace('-', "_");
    match option {
        JobOption::DType
        | JobOption::MaxShardSize
        | JobOption::SplitMaxTensors
        | JobOption::NoTensorFirstSplit
        | JobOption::Rename
        | JobOption::Quantize => format!("{key}="),
        _ => format!("quantize_options[{key:?}]"),
    }
}

/// A library error as a Python exception.
pub fn to_py(e: Error) -> PyErr {
    Python::attach(|py| {
        let build = || -> PyResult<PyErr> {
            let class = py.import("tensorfile._errors")?.getattr(class_name(&e))?;
            let message = match e.hint() {
                Some(h) => format!("{e} ({})", hint(h)),
                None => e.to_string(),
            };
            let exception = class.call1((message,))?;
            exception.setattr("hint", e.hint().map(|h| h.id()))?;
            exception.setattr("rule", e.rule().map(|r| r.id()))?;
            exception.setattr("path", e.path().map(|p| p.display().to_string()))?;
            exception.setattr("tensor", e.tensor())?;
            exception.setattr("diagnosis", e.diagnosis().map(|d| d.id()))?;
            Ok(PyErr::from_value(exception))
        };
        build().unwrap_or_else(|err| err)
    })
}

/// `Result` conversion for library calls.
pub trait IntoPy<T> {
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for tensorfile::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
