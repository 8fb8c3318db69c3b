//! Writing files from tensors' bytes handed over by Python, and converting between files.

use std::ffi::CString;
use std::path::PathBuf;

use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tensorfile::convert::{ConvertOptions, ConvertReport, convert_file};
use tensorfile::formats::{Format, WriteOption, WriteOptions, WriteRequest};
use tensorfile::model::{ByteOrder, TensorData, TensorInfo, cast};
use tensorfile::output::AtomicFile;
use tensorfile::shards::{convert_to_shards, parse_size};
use tensorfile::source::Bytes;
use tensorfile::{DType, Error, TensorFile};

use crate::errors::IntoPy;

/// The options as given (`None`: not given, the library's default applies), after warning
/// (`UserWarning`) about those the output format ignores, each named as its keyword.
fn request(
    py: Python<'_>,
    format: Format,
    compress: Option<&str>,
    checksum: Option<&str>,
    big_endian: bool,
    metadata: Option<Vec<(String, String)>>,
) -> PyResult<WriteOptions> {
    let mut request = WriteRequest::parse(compress, checksum).py()?;
    request.byte_order = big_endian.then_some(ByteOrder::Big);
    request.metadata = metadata;
    for ignored in request.ignored_by(format) {
        let message = format!("{}= has no effect: {}", keyword(ignored.option), ignored.reason);
        let message = CString::new(message).unwrap_or_default();
        PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, 2)?;
    }
    Ok(request.options())
}

/// A write option as this package's keyword argument.
fn keyword(option: WriteOption) -> &'static str {
    match option {
        WriteOption::Compression => "compress",
        WriteOption::Checksum => "checksum",
        WriteOption::ByteOrder => "big_endian",
        WriteOption::Metadata => "metadata",
        _ => "an argument",
    }
}

/// Write `tensors` — `(name, dtype, shape, data)`, each data the tensor's contiguous
/// little-endian bytes as `bytes`, or a callable returning them when called with no argument
/// — to `path` as `format` (from the extension when None), atomically. One tensor's bytes are
/// taken (the callable called) and copied at a time, under the GIL, when that tensor is
/// written; the writing runs without it. A callable keeps memory bounded by one tensor.
// Python keyword arguments, one parameter each.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (path, tensors, format=None, compress=None, checksum=None, metadata=None))]
pub fn write_file(
    py: Python<'_>,
    path: PathBuf,
    tensors: Vec<(String, String, Vec<u64>, Bound<'_, PyAny>)>,
    format: Option<&str>,
    compress: Option<&str>,
    checksum: Option<&str>,
    metadata: Option<Vec<(String, String)>>,
) -> PyResult<()> {
    let format = match format {
        Some(f) => Format::from_name(f).ok_or_else(|| Error::usage(format!("unknown format {f:?}"))).py()?,
        None => Format::from_path(&path).py()?,
    };
    let options = request(py, format, compress, checksum, false, metadata)?;
    let mut infos = Vec::with_capacity(tensors.len());
    for (name, dtype, shape, _) in &tensors {
        let d = DType::from_name(dtype).ok_or_else(|| Error::usage(format!("{name}: unknown dtype {dtype:?}"))).py()?;
        infos.push(TensorInfo::dense(name.clone(), d, shape.clone()));
    }
    let sources: Vec<(String, Py<PyAny>)> = tensors.into_iter().map(|(name, _, _, b)| (name, b.unbind())).collect();
    let in_file = |e: Error| e.in_file(&path);
    py.detach(|| -> PyResult<()> {
        let mut out = AtomicFile::create(&path).map_err(in_file).py()?;
        {
            let mut sink = out.writer();
            let mut writer = format.writer(Box::new(&mut sink), &infos, &options).map_err(in_file).py()?;
            for ((name, source), info) in sources.iter().zip(&infos) {
                let bytes = Python::attach(|py| tensor_bytes(source.bind(py)))?;
                let expected = info.nbytes().py()?;
                if bytes.len() as u64 != expected {
                    let e = Error::usage(format!("{} bytes given, {expected} expected", bytes.len()));
                    return Err(e).map_err(|e: Error| e.for_tensor(name)).py();
                }
                writer
                    .write(&TensorData::dense(Bytes::from_vec(bytes)))
                    .map_err(|e| in_file(e.for_tensor(name)))
                    .py()?;
            }
            writer.finish().map_err(in_file).py()?;
            std::io::Write::flush(&mut sink).map_err(|e| in_file(Error::from(e))).py()?;
        }
        out.commit().py()
    })
}

/// A tensor's bytes, copied out of `source`: `bytes`, or a callable that returns `bytes`.
fn tensor_bytes(source: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(bytes) = source.cast::<PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    let given = source.call0()?;
    match given.cast::<PyBytes>() {
        Ok(bytes) => Ok(bytes.as_bytes().to_vec()),
        Err(_) => {
            let what = given.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            Err(Error::usage(format!("tensor data must be bytes, not {what}"))).py()
        }
    }
}

/// What a conversion did: tensors written, names skipped, names cast, the files holding the
/// tensors (the destination, or the shards) and the index when there are several shards.
type Converted = (usize, Vec<String>, Vec<String>, Vec<String>, Option<String>);

/// Convert `src` into `dst` (format from its extension), or with `max_shard_size` into shards
/// named after `dst` plus their index; with `dtype`, floating tensors cast to it (quantized
/// ones dequantized first); returns what it did ([`Converted`]).
// Python keyword arguments, one parameter each.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (src, dst, data=None, skip_unsupported=false, compress=None, checksum=None, big_endian=false, verify=true, max_shard_size=None, dtype=None))]
pub fn convert(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    data: Option<PathBuf>,
    skip_unsupported: bool,
    compress: Option<&str>,
    checksum: Option<&str>,
    big_endian: bool,
    verify: bool,
    max_shard_size: Option<&str>,
    dtype: Option<&str>,
) -> PyResult<Converted> {
    let dtype = dtype.map(cast::target).transpose().py()?;
    let write = request(py, Format::from_path(&dst).py()?, compress, checksum, big_endian, None)?;
    let max_shard_size = max_shard_size.map(parse_size).transpose().py()?;
    let text = |p: PathBuf| p.display().to_string();
    py.detach(|| {
        let file = TensorFile::open_with_data(&src, data.as_deref())?;
        let options = ConvertOptions { write, skip_unsupported, verify, dtype };
        let names = |report: ConvertReport| (report.skipped.into_iter().map(|s| s.name).collect(), report.cast);
        Ok(match max_shard_size {
            None => {
                let report = convert_file(&file, &dst, &options, &mut |_| {})?;
                let tensors = report.tensors;
                let (skipped, cast) = names(report);
                (tensors, skipped, cast, vec![text(dst.clone())], None)
            }
            Some(size) => {
                let report = convert_to_shards(&file, &dst, size, &options, &mut |_| {})?;
                let tensors = report.conversion.tensors;
                let files = report.files.into_iter().map(text).collect();
                let (skipped, cast) = names(report.conversion);
                (tensors, skipped, cast, files, report.index.map(text))
            }
        })
    })
    .py()
}
