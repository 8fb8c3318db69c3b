//! Writing files from tensors' bytes handed over by Python, and converting between files.

use std::ffi::CString;
use std::path::PathBuf;

use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use tensorfile::ConvertJob;
use tensorfile::convert::parse_size;
use tensorfile::formats::{Format, Ignored, WriteOption, WriteOptions, WriteRequest};
use tensorfile::io::{AtomicFile, Bytes, Output};
use tensorfile::llama::{OutType, QuantizeOptions};
use tensorfile::model::{ByteOrder, TensorData, TensorInfo, cast};
use tensorfile::{DType, Error};

use crate::errors::IntoPy;

/// The options as given (`None`: not given, the library's default applies), after warning
/// (`UserWarning`) about those the output format ignores, each named as its keyword.
pub(crate) fn request(
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
        warn_ignored(py, &ignored)?;
    }
    Ok(request.options())
}

/// A `UserWarning` naming an option the output format ignores, as its keyword.
fn warn_ignored(py: Python<'_>, ignored: &Ignored) -> PyResult<()> {
    let message = format!("{}= has no effect: {}", keyword(ignored.option), ignored.reason);
    let message = CString::new(message).unwrap_or_default();
    PyErr::warn(py, &py.get_type::<PyUserWarning>(), &message, 2)
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

/// A tensor as Python hands it over: name, dtype name, shape, and its bytes (`bytes`, or a
/// callable returning them).
pub(crate) type GivenTensor<'py> = (String, String, Vec<u64>, Bound<'py, PyAny>);

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
    tensors: Vec<GivenTensor<'_>>,
    format: Option<&str>,
    compress: Option<&str>,
    checksum: Option<&str>,
    metadata: Option<Vec<(String, String)>>,
    zt_version: Option<&str>,
) -> PyResult<()> {
    let format = match format {
        Some(f) => named_format(f)?.with_variant(zt_version).py()?,
        None => Format::for_output(&path, zt_version).py()?,
    };
    let options = request(py, format, compress, checksum, false, metadata)?;
    let plan = Planned::new(format, tensors)?;
    let in_file = |e: Error| e.in_file(&path);
    py.detach(|| -> PyResult<()> {
        let mut out = AtomicFile::create(&path).map_err(in_file).py()?;
        {
            let mut sink = out.writer();
            plan.write(format, Box::new(&mut sink), &options, &in_file)?;
            std::io::Write::flush(&mut sink).map_err(|e| in_file(Error::from(e))).py()?;
        }
        out.commit().py()
    })
}

/// The format of a name (`safetensors`, `zt`...).
pub(crate) fn named_format(name: &str) -> PyResult<Format> {
    Format::from_name(name).ok_or_else(|| Error::usage(format!("unknown format {name:?}"))).py()
}

/// Tensors handed over by Python, in the order `format` stores them (zTensor 2: by name, which
/// makes the file canonical), their bytes still to be taken.
pub(crate) struct Planned {
    infos: Vec<TensorInfo>,
    sources: Vec<(String, Py<PyAny>)>,
}

impl Planned {
    pub(crate) fn new(format: Format, tensors: Vec<GivenTensor<'_>>) -> PyResult<Self> {
        let mut infos = Vec::with_capacity(tensors.len());
        for (name, dtype, shape, _) in &tensors {
            let d =
                DType::from_name(dtype).ok_or_else(|| Error::usage(format!("{name}: unknown dtype {dtype:?}"))).py()?;
            infos.push(TensorInfo::dense(name.clone(), d, shape.clone()));
        }
        let order = format.write_order(&infos);
        let infos: Vec<TensorInfo> = order.iter().map(|&k| infos[k].clone()).collect();
        let mut tensors: Vec<Option<_>> = tensors.into_iter().map(Some).collect();
        let sources =
            order.iter().filter_map(|&k| tensors[k].take()).map(|(name, _, _, b)| (name, b.unbind())).collect();
        Ok(Planned { infos, sources })
    }

    /// Write the tensors as a whole file of `format` into `out`, taking each one's bytes (with
    /// the GIL, which the caller has released) only when it is written; the library's errors
    /// go through `locate` (which names the file), Python's raised by a tensor's callable are
    /// raised as they are.
    pub(crate) fn write(
        &self,
        format: Format,
        out: Box<dyn Output + '_>,
        options: &WriteOptions,
        locate: &dyn Fn(Error) -> Error,
    ) -> PyResult<()> {
        let mut writer = format.writer(out, &self.infos, options).map_err(locate).py()?;
        for ((name, source), info) in self.sources.iter().zip(&self.infos) {
            let bytes = Python::attach(|py| tensor_bytes(source.bind(py)))?;
            let expected = info.nbytes().py()?;
            if bytes.len() as u64 != expected {
                let e = Error::usage(format!("{} bytes given, {expected} expected", bytes.len()));
                return Err(locate(e.for_tensor(name))).py();
            }
            writer.write(&TensorData::dense(Bytes::from_vec(bytes))).map_err(|e| locate(e.for_tensor(name))).py()?;
        }
        writer.finish().map_err(locate).py()
    }
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

/// Convert `src` (one path, or several merged in order) into `dst` (format from its
/// extension), as the library's [`ConvertJob`] does with `options` (a dict of the package's
/// keyword arguments, each already in the form the job takes: `data`, `skip_unsupported`,
/// `compress`, `checksum`, `big_endian`, `verify`, `max_shard_size` (text), `split_max_tensors`
/// (a count), `no_tensor_first_split`, `dtype` (a name), `zt_version` (text), `include`,
/// `exclude` (lists of globs), `rename` (a list of pairs), `quantize`, `imatrix`,
/// `quantize_options` (a dict)). Options the output format ignores are named in a
/// `UserWarning` first. Returns the conversion's report as JSON text
/// ([`tensorfile::Conversion::to_json`]), or with a dry run its sizes
/// ([`tensorfile::llama::QuantizeSizes::to_json`]), nothing written.
#[pyfunction]
pub fn convert(py: Python<'_>, src: Vec<PathBuf>, dst: PathBuf, options: &Bound<'_, PyDict>) -> PyResult<String> {
    let job = job(src, dst, options)?;
    if quantize_options(options)?.is_some_and(|q| q.dry_run) {
        let sizes = py.detach(|| job.dry_run()).py()?;
        return Ok(sizes.to_json().to_string());
    }
    for ignored in job.ignored().py()? {
        warn_ignored(py, &ignored)?;
    }
    let done = py.detach(|| job.run(&mut |_| {})).py()?;
    Ok(done.to_json().to_string())
}

/// The keys `convert`'s options may have.
const CONVERT_OPTIONS: &[&str] = &[
    "data",
    "skip_unsupported",
    "compress",
    "checksum",
    "big_endian",
    "verify",
    "max_shard_size",
    "split_max_tensors",
    "no_tensor_first_split",
    "dtype",
    "zt_version",
    "include",
    "exclude",
    "rename",
    "quantize",
    "imatrix",
    "quantize_options",
    "outtype",
    "fp8_as_q8",
    "vocab_only",
    "model_name",
    "metadata_file",
];

/// The keys of `quantize_options` (llama-quantize's options).
const QUANTIZE_OPTIONS: &[&str] = &[
    "tensor_types",
    "tensor_type_file",
    "output_tensor_type",
    "token_embedding_type",
    "leave_output_tensor",
    "pure",
    "override_kv",
    "allow_requantize",
    "keep_split",
    "prune_layers",
    "include_weights",
    "exclude_weights",
    "dry_run",
];

/// The job `options` describe (an unknown key is an error, never ignored).
fn job(src: Vec<PathBuf>, dst: PathBuf, options: &Bound<'_, PyDict>) -> PyResult<ConvertJob> {
    for key in options.keys() {
        let key: String = key.extract()?;
        if !CONVERT_OPTIONS.contains(&key.as_str()) {
            return Err(Error::usage(format!("convert has no option {key:?}"))).py();
        }
    }
    fn get<'py, T: FromPyObjectOwned<'py>>(options: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>> {
        match options.get_item(key)? {
            Some(v) if !v.is_none() => Ok(Some(v.extract().map_err(Into::into)?)),
            _ => Ok(None),
        }
    }
    let include: Vec<String> = get(options, "include")?.unwrap_or_default();
    let exclude: Vec<String> = get(options, "exclude")?.unwrap_or_default();
    let rename: Vec<(String, String)> = get(options, "rename")?.unwrap_or_default();
    let mut job = ConvertJob::new(src, dst);
    // A Hugging Face checkpoint's BPE vocabulary needs Hugging Face's tokenizers library.
    job.tokenizers = Some(&tensorfile_tokenizers::HF_TOKENIZERS);
    job.set_selection(&include, &exclude, &rename, quantize_options(options)?.as_ref()).py()?;
    job.dtype = get::<String>(options, "dtype")?.as_deref().map(cast::target).transpose().py()?;
    job.variant = get(options, "zt_version")?;
    job.format().py()?;
    let compress: Option<String> = get(options, "compress")?;
    let checksum: Option<String> = get(options, "checksum")?;
    job.request = WriteRequest::parse(compress.as_deref(), checksum.as_deref()).py()?;
    job.request.byte_order = get::<bool>(options, "big_endian")?.unwrap_or(false).then_some(ByteOrder::Big);
    job.max_shard_size = get::<String>(options, "max_shard_size")?.as_deref().map(parse_size).transpose().py()?;
    job.split_max_tensors = get(options, "split_max_tensors")?;
    job.no_tensor_first_split = get(options, "no_tensor_first_split")?.unwrap_or(false);
    job.data = get(options, "data")?;
    job.skip_unsupported = get(options, "skip_unsupported")?.unwrap_or(false);
    job.verify = get(options, "verify")?.unwrap_or(true);
    job.outtype = get::<String>(options, "outtype")?.as_deref().map(OutType::from_name).transpose().py()?;
    job.vocab_only = get(options, "vocab_only")?.unwrap_or(false);
    job.fp8_as_q8 = get(options, "fp8_as_q8")?.unwrap_or(false);
    job.model_name = get(options, "model_name")?;
    job.metadata_file = get(options, "metadata_file")?;
    Ok(job)
}

/// The quantization `options` describe (`quantize`, `imatrix`, `quantize_options`), as the
/// library's plain options; `None` without `quantize`.
fn quantize_options(options: &Bound<'_, PyDict>) -> PyResult<Option<QuantizeOptions>> {
    let Some(target) = options.get_item("quantize")?.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    let mut o = QuantizeOptions::new(target.extract::<String>()?);
    if let Some(path) = options.get_item("imatrix")?.filter(|v| !v.is_none()) {
        o.imatrix = Some(path.extract()?);
    }
    let Some(given) = options.get_item("quantize_options")?.filter(|v| !v.is_none()) else {
        return Ok(Some(o));
    };
    let given = given.cast_into::<PyDict>().map_err(|_| Error::usage("quantize_options is a dict")).py()?;
    for (key, value) in given.iter() {
        let key: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        match key.as_str() {
            "tensor_types" => {
                // Pairs (regex, type), or texts "REGEX=TYPE".
                let mut texts = Vec::new();
                for item in value.try_iter()? {
                    let item = item?;
                    match item.extract::<(String, String)>() {
                        Ok((re, t)) => texts.push(format!("{re}={t}")),
                        Err(_) => texts.push(item.extract::<String>()?),
                    }
                }
                o.tensor_types = texts;
            }
            "tensor_type_file" => o.tensor_type_file = Some(value.extract()?),
            "output_tensor_type" => o.output_tensor_type = Some(value.extract()?),
            "token_embedding_type" => o.token_embedding_type = Some(value.extract()?),
            "leave_output_tensor" => o.leave_output_tensor = value.extract()?,
            "pure" => o.pure = value.extract()?,
            "override_kv" => o.override_kv = value.extract()?,
            "allow_requantize" => o.allow_requantize = value.extract()?,
            "keep_split" => o.keep_split = value.extract()?,
            "prune_layers" => o.prune_layers = value.extract()?,
            "include_weights" => o.include_weights = value.extract()?,
            "exclude_weights" => o.exclude_weights = value.extract()?,
            "dry_run" => o.dry_run = value.extract()?,
            _ => {
                return Err(Error::usage(format!(
                    "quantize_options has no option {key:?} (options: {})",
                    QUANTIZE_OPTIONS.join(", ")
                )))
                .py();
            }
        }
    }
    Ok(Some(o))
}
