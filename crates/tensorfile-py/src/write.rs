//! Writing files from tensors' bytes handed over by Python, and converting between files.

use std::ffi::CString;
use std::path::PathBuf;

use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tensorfile::convert::{ConvertOptions, ConvertReport, Selection, convert_file};
use tensorfile::formats::ztensor::{ZtVersion, output_format};
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
#[pyo3(signature = (path, tensors, format=None, compress=None, checksum=None, metadata=None, zt_version=None))]
pub fn write_file(
    py: Python<'_>,
    path: PathBuf,
    tensors: Vec<(String, String, Vec<u64>, Bound<'_, PyAny>)>,
    format: Option<&str>,
    compress: Option<&str>,
    checksum: Option<&str>,
    metadata: Option<Vec<(String, String)>>,
    zt_version: Option<&str>,
) -> PyResult<()> {
    let version = zt_version.map(str::parse::<ZtVersion>).transpose().py()?;
    let format = match (format, version) {
        (Some(f), _) => {
            let f = Format::from_name(f).ok_or_else(|| Error::usage(format!("unknown format {f:?}"))).py()?;
            match version {
                Some(v) if matches!(f, Format::Zt | Format::Zt2) => v.format(),
                Some(_) => return Err(Error::usage(format!("a zTensor version for a {} file", f.unit().title()))).py(),
                None => f,
            }
        }
        (None, version) => output_format(&path, version).py()?,
    };
    let options = request(py, format, compress, checksum, false, metadata)?;
    let mut infos = Vec::with_capacity(tensors.len());
    for (name, dtype, shape, _) in &tensors {
        let d = DType::from_name(dtype).ok_or_else(|| Error::usage(format!("{name}: unknown dtype {dtype:?}"))).py()?;
        infos.push(TensorInfo::dense(name.clone(), d, shape.clone()));
    }
    // In the order the format stores them (zTensor 2: by name, which makes the file canonical).
    let order = format.write_order(&infos);
    let infos: Vec<TensorInfo> = order.iter().map(|&k| infos[k].clone()).collect();
    let mut tensors: Vec<Option<_>> = tensors.into_iter().map(Some).collect();
    let sources: Vec<(String, Py<PyAny>)> =
        order.iter().filter_map(|&k| tensors[k].take()).map(|(name, _, _, b)| (name, b.unbind())).collect();
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
/// tensors (the destination, or the shards), the index when there are several shards,
/// (source name, written name) of the tensors renamed, and how many the filters left out.
type Converted = (usize, Vec<String>, Vec<String>, Vec<String>, Option<String>, Vec<(String, String)>, usize);

/// Convert `src` (one path, or several merged in order) into `dst` (format from its
/// extension), or with `max_shard_size` into shards named after `dst` plus their index; with
/// `dtype`, floating tensors cast to it (quantized ones dequantized first); only the tensors
/// `include` and `exclude` keep, renamed by `rename` ([`Selection`]); returns what it did
/// ([`Converted`]).
// Python keyword arguments, one parameter each.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (src, dst, data=None, skip_unsupported=false, compress=None, checksum=None, big_endian=false, verify=true, max_shard_size=None, dtype=None, zt_version=None, include=Vec::new(), exclude=Vec::new(), rename=Vec::new()))]
pub fn convert(
    py: Python<'_>,
    src: Vec<PathBuf>,
    dst: PathBuf,
    data: Option<PathBuf>,
    skip_unsupported: bool,
    compress: Option<&str>,
    checksum: Option<&str>,
    big_endian: bool,
    verify: bool,
    max_shard_size: Option<&str>,
    dtype: Option<&str>,
    zt_version: Option<&str>,
    include: Vec<String>,
    exclude: Vec<String>,
    rename: Vec<(String, String)>,
) -> PyResult<Converted> {
    let select = Selection::new(&include, &exclude, &rename).py()?;
    let dtype = dtype.map(cast::target).transpose().py()?;
    let version = zt_version.map(str::parse::<ZtVersion>).transpose().py()?;
    let format = output_format(&dst, version).py()?;
    let write = request(py, format, compress, checksum, big_endian, None)?;
    let max_shard_size = max_shard_size.map(parse_size).transpose().py()?;
    let text = |p: PathBuf| p.display().to_string();
    py.detach(|| {
        let file = match (src.as_slice(), data) {
            ([one], data) => TensorFile::open_with_data(one, data.as_deref())?,
            (_, Some(_)) => return Err(Error::usage("data= goes with a single src (an ExecuTorch program)")),
            (several, None) => TensorFile::open_merged(several)?,
        };
        let options = ConvertOptions { write, skip_unsupported, verify, dtype, format: Some(format), select };
        let names = |r: ConvertReport| {
            (r.tensors, r.skipped.into_iter().map(|s| s.name).collect(), r.cast, r.renamed, r.filtered_out)
        };
        Ok(match max_shard_size {
            None => {
                let (tensors, skipped, cast, renamed, out) = names(convert_file(&file, &dst, &options, &mut |_| {})?);
                (tensors, skipped, cast, vec![text(dst.clone())], None, renamed, out)
            }
            Some(size) => {
                let report = convert_to_shards(&file, &dst, size, &options, &mut |_| {})?;
                let files = report.files.into_iter().map(text).collect();
                let (tensors, skipped, cast, renamed, out) = names(report.conversion);
                (tensors, skipped, cast, files, report.index.map(text), renamed, out)
            }
        })
    })
    .py()
}
