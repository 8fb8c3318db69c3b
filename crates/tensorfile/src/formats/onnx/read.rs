//! Opening an ONNX model: the protobuf decoded (raw data as slices of the map), every tensor
//! of its graphs found, each placed where its bytes are, and a catalog of them.

use std::path::{Path, PathBuf};

use super::dtypes::{self, typed_bytes};
use super::external::{self, Files, Place};
use super::graph::{self, Held};
use super::proto::{self, ModelProto, SparseTensorProto, TensorProto};
use super::summary::Facts;
use crate::checked;
use crate::error::{Error, Result, Rule};
use crate::formats::{Catalog, FileSummary, Format, FormatReader};
use crate::model::{DType, Entry, Kind, Layout, SparseData, SparseFormat, Storage, TensorData, TensorInfo};
use crate::source::{Bytes, Source};

/// Where a tensor's bytes are.
#[derive(Debug, Clone)]
pub(super) enum Stored {
    /// `raw_data` in the model file: this range of it.
    Model { offset: u64, len: u64 },
    /// Typed fields, converted to little-endian bytes when the model was opened.
    Typed(Bytes),
    /// An external data file.
    External(Place),
}

/// How a sparse tensor's indices are given: `[nnz, rank]` coordinates or `[nnz]` positions
/// in the row-major dense tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexForm {
    Coordinates,
    Linear,
}

/// The indices of a sparse tensor.
#[derive(Debug, Clone)]
struct Indices {
    stored: Stored,
    form: IndexForm,
}

/// One readable entry: its values' bytes, and for a sparse tensor its indices.
#[derive(Debug, Clone)]
pub(super) struct Item {
    pub(super) stored: Stored,
    indices: Option<Indices>,
}

/// An opened ONNX model.
pub struct OnnxReader {
    src: Source,
    /// The whole model (a map of a local file).
    whole: Bytes,
    facts: Facts,
    pub(super) files: Files,
    pub(super) items: Vec<Item>,
    catalog: Catalog,
}

/// The map, as a `bytes::Bytes` owner: what lets prost's `bytes` fields be slices of it.
struct Owner(Bytes);

impl AsRef<[u8]> for Owner {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// A prost error as the rule it breaks: nesting past prost's recursion limit is `too-deep`,
/// anything else `bad-protobuf`.
fn decode_error(e: &prost::DecodeError) -> Error {
    let text = e.to_string();
    let rule = if text.contains("recursion limit") { Rule::TooDeep } else { Rule::BadProtobuf };
    Error::invalid(rule, format!("the model does not decode as an ONNX ModelProto: {text}"))
}

/// Decode `whole` as a model; `base` is the address its `raw_data` offsets count from.
pub(super) fn decode(whole: &Bytes) -> Result<(ModelProto, usize)> {
    let shared = bytes::Bytes::from_owner(Owner(whole.clone()));
    let base = shared.as_ptr() as usize;
    let model = proto::decode(shared).map_err(|e| decode_error(&e))?;
    if model.ir_version <= 0 {
        return Err(Error::invalid(Rule::MissingField, "a model without an IR version"));
    }
    if model.graph.is_none() {
        return Err(Error::invalid(Rule::MissingField, "a model without a graph"));
    }
    Ok((model, base))
}

impl OnnxReader {
    /// Open a model: the whole file is read (a protobuf has no index; a local file is mapped)
    /// and decoded; external data files are opened and every range checked against them.
    pub fn open(src: impl Into<Source>) -> Result<Self> {
        let src = src.into();
        let whole = src.whole()?;
        let (mut model, base) = decode(&whole)?;
        let mut graph = model.graph.take().unwrap_or_default();
        let walk = graph::walk(&mut graph)?;
        let facts = Facts::of(&model, &graph, &walk);
        // The model's folder (`.` for a file named without one: `model.onnx`).
        let parent = src.location().and_then(Path::parent).map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
        let folder = if src.is_remote() { None } else { parent.map(Path::to_path_buf) };
        let mut b = Builder {
            whole: &whole,
            base,
            folder,
            files: Files::default(),
            items: Vec::new(),
            catalog: Catalog::default(),
        };
        for f in walk.found {
            b.add(f.name, f.held)?;
        }
        let Builder { files, items, catalog, .. } = b;
        Ok(OnnxReader { src, whole, facts, files, items, catalog })
    }

    /// The model file.
    pub(super) fn source(&self) -> &Source {
        &self.src
    }

    /// The stored bytes of `s`.
    pub(super) fn bytes_of(&self, s: &Stored) -> Result<Bytes> {
        match s {
            Stored::Model { offset, len } => self.whole.slice(*offset, *len),
            Stored::Typed(b) => Ok(b.clone()),
            Stored::External(p) => self.files.opened[p.file].2.range(p.offset, p.len),
        }
    }

    /// The path and source of external file `i`.
    pub(super) fn external(&self, i: usize) -> (&str, &PathBuf, &Source) {
        let (l, p, s) = &self.files.opened[i];
        (l, p, s)
    }
}

/// What opening builds: the items and catalog, the external files opened.
struct Builder<'a> {
    whole: &'a Bytes,
    base: usize,
    folder: Option<PathBuf>,
    files: Files,
    items: Vec<Item>,
    catalog: Catalog,
}

/// The shape of `dims` (no negative size).
fn shape_of(dims: &[i64]) -> Result<Vec<u64>> {
    dims.iter()
        .map(|&d| {
            u64::try_from(d).map_err(|_| Error::invalid(Rule::BadField, format!("dimension {d} in dims {dims:?}")))
        })
        .collect()
}

impl Builder<'_> {
    /// Add the tensor `held` under `name`: readable, or unreadable with its reason. External
    /// data at a path out of the folder refuses the model ([`is_fatal`]).
    fn add(&mut self, name: String, held: Held) -> Result<()> {
        match held {
            Held::Dense(t) => {
                let shown = dtypes::shown(t.data_type);
                let shape = shape_of(&t.dims).unwrap_or_default();
                match self.dense(&t) {
                    Ok((dtype, shape, nbytes, stored)) => {
                        self.push(name, dtype, shape, Layout::Dense, nbytes, stored, None);
                    }
                    Err(e) if is_fatal(&e) => return Err(e.for_tensor(&name)),
                    Err(e) => self.catalog.push_unreadable(name, shown, shape, e),
                }
            }
            Held::Sparse(s) => {
                let values = s.values.as_ref().map_or(0, |v| v.data_type);
                let shape = shape_of(&s.dims).unwrap_or_default();
                match self.sparse(&s) {
                    Ok((dtype, shape, nnz, stored, indices)) => {
                        let layout = Layout::Sparse { format: SparseFormat::Coo, nnz };
                        match TensorInfo::check(Kind::Tensor, dtype, &shape, &layout) {
                            Ok(n) => self.push(name, dtype, shape, layout, n, stored, Some(indices)),
                            Err(e) => self.catalog.push_unreadable(name, dtype.name().into(), shape, e),
                        }
                    }
                    Err(e) if is_fatal(&e) => return Err(e.for_tensor(&name)),
                    Err(e) => self.catalog.push_unreadable(name, dtypes::shown(values), shape, e),
                }
            }
            Held::Unsupported { dtype, error } => self.catalog.push_unreadable(name, dtype, Vec::new(), error),
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        name: String,
        dtype: DType,
        shape: Vec<u64>,
        layout: Layout,
        nbytes: u64,
        stored: Stored,
        indices: Option<Indices>,
    ) {
        let storage = match &stored {
            Stored::Model { offset, len } => Storage::new(*offset, *len),
            Stored::External(p) => Storage::new(p.offset, p.len),
            // No byte range of the file holds these bytes as they read.
            Stored::Typed(_) => Storage::new(0, 0),
        };
        let info = TensorInfo::checked(name, Kind::Tensor, dtype, shape, layout);
        self.catalog.push(Entry::checked(info, nbytes, storage));
        self.items.push(Item { stored, indices });
    }

    /// A dense tensor's dtype, shape, size and bytes.
    fn dense(&mut self, t: &TensorProto) -> Result<(DType, Vec<u64>, u64, Stored)> {
        let (dtype, shape, nbytes) = self.declared(t)?;
        let stored = self.stored(t, dtype, &shape, nbytes)?;
        Ok((dtype, shape, nbytes, stored))
    }

    /// A tensor's dtype, shape and size, checked; a segmented tensor is refused.
    fn declared(&self, t: &TensorProto) -> Result<(DType, Vec<u64>, u64)> {
        if t.segment.is_some() {
            return Err(Error::invalid(Rule::UnknownLayout, "a tensor in segments (TensorProto.segment) is not read"));
        }
        let dtype = dtypes::dtype_of(t.data_type)?;
        let shape = shape_of(&t.dims)?;
        let numel = checked::numel(&shape)?;
        if dtype.bits() < 8 && numel % (8 / dtype.bits()) != 0 {
            // ONNX pads the last byte; a tensor of ours ends on a whole byte.
            return Err(Error::invalid(
                Rule::SizeMismatch,
                format!(
                    "{numel} elements of {dtype} do not fill a whole number of bytes (ONNX pads the last one), \
                     which tensorfile does not hold"
                ),
            ));
        }
        let nbytes = TensorInfo::check(Kind::Tensor, dtype, &shape, &Layout::Dense)?;
        Ok((dtype, shape, nbytes))
    }

    /// Where the `nbytes` bytes of `t` are: external data, `raw_data` or the typed fields.
    fn stored(&mut self, t: &TensorProto, dtype: DType, shape: &[u64], nbytes: u64) -> Result<Stored> {
        let size_error = |len: u64, what: &str| {
            Error::invalid(
                Rule::SizeMismatch,
                format!("{len} bytes of {what} for {dtype} {shape:?}, which takes {nbytes}"),
            )
        };
        if t.data_location == 1 {
            let d = external::declared(t)?;
            external::check_location(&d.location)?;
            let Some(folder) = &self.folder else {
                return Err(Error::unsupported(format!(
                    "its bytes are in external data {:?}, and a model read from a URL or from memory has no folder to find it in",
                    d.location
                )));
            };
            let place = self.files.place(folder, &d)?;
            if place.len != nbytes {
                return Err(size_error(place.len, "external data"));
            }
            return Ok(Stored::External(place));
        }
        if let Some(raw) = &t.raw_data {
            if raw.len() as u64 != nbytes {
                return Err(size_error(raw.len() as u64, "raw_data"));
            }
            let offset = if raw.is_empty() { 0 } else { (raw.as_ptr() as usize).wrapping_sub(self.base) as u64 };
            // Decoded from the map, the slice lies inside it; checked all the same.
            self.whole.slice(offset, nbytes)?;
            return Ok(Stored::Model { offset, len: nbytes });
        }
        let numel = checked::numel(shape)?;
        Ok(Stored::Typed(Bytes::from_vec(typed_bytes(t, dtype, numel)?)))
    }

    /// A sparse tensor: the dtype and dense shape, nnz, its values and indices (`int64`,
    /// `[nnz, rank]` or `[nnz]`).
    #[allow(clippy::type_complexity)]
    fn sparse(&mut self, s: &SparseTensorProto) -> Result<(DType, Vec<u64>, u64, Stored, Indices)> {
        let missing = |what: &str| Error::invalid(Rule::MissingField, format!("a sparse tensor without {what}"));
        let values = s.values.as_ref().ok_or_else(|| missing("values"))?;
        let indices = s.indices.as_ref().ok_or_else(|| missing("indices"))?;
        let shape = shape_of(&s.dims)?;
        let (dtype, vshape, vbytes) = self.declared(values)?;
        let [nnz] = vshape[..] else {
            return Err(Error::invalid(Rule::BadSparse, format!("sparse values of shape {vshape:?}, not [nnz]")));
        };
        let (itype, ishape, ibytes) = self.declared(indices)?;
        if itype != DType::Int64 {
            return Err(Error::invalid(Rule::BadSparse, format!("sparse indices of {itype}, not int64")));
        }
        let rank = shape.len() as u64;
        let form = match ishape[..] {
            [n, r] if n == nnz && r == rank => IndexForm::Coordinates,
            [n] if n == nnz => IndexForm::Linear,
            _ => {
                return Err(Error::invalid(
                    Rule::BadSparse,
                    format!("sparse indices of shape {ishape:?} for nnz {nnz} and rank {rank}"),
                ));
            }
        };
        let stored = self.stored(values, dtype, &vshape, vbytes)?;
        let istored = self.stored(indices, itype, &ishape, ibytes)?;
        Ok((dtype, shape, nnz, stored, Indices { stored: istored, form }))
    }
}

/// Whether a tensor's problem refuses the whole model rather than that tensor: external data
/// leaving the folder (a path that is not safe to follow), or a file that cannot be read. An
/// external data file that is not there, or is shorter than a tensor's range in it (a
/// download cut short), makes only the tensors it should hold unreadable
/// ([`Rule::MissingFile`], [`Rule::OutOfBounds`]): the model describes each of them, and its
/// other tensors are read.
fn is_fatal(e: &Error) -> bool {
    match e.rule() {
        Some(Rule::MissingFile | Rule::OutOfBounds) => false,
        Some(Rule::UnsafePath) => true,
        _ => matches!(e.kind(), crate::ErrorKind::Io(_)),
    }
}

impl OnnxReader {
    /// The COO indices (`u64`, `rank x nnz`) of a sparse tensor whose indices are `idx`.
    fn coo(&self, idx: &Indices, shape: &[u64], nnz: u64) -> Result<Vec<u64>> {
        let raw = self.bytes_of(&idx.stored)?;
        let values: Vec<i64> =
            raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
        let negative = || Error::invalid(Rule::BadSparse, "a negative sparse index");
        let rank = shape.len();
        let nnz = checked::to_usize(nnz, "nnz")?;
        let mut out =
            vec![0u64; checked::to_usize(checked::mul(rank as u64, nnz as u64, "sparse indices")?, "sparse indices")?];
        match idx.form {
            IndexForm::Coordinates => {
                for (k, &v) in values.iter().enumerate() {
                    let (entry, dim) = (k / rank.max(1), k % rank.max(1));
                    out[dim * nnz + entry] = u64::try_from(v).map_err(|_| negative())?;
                }
            }
            IndexForm::Linear => {
                for (entry, &v) in values.iter().enumerate() {
                    let mut at = u64::try_from(v).map_err(|_| negative())?;
                    for dim in (0..rank).rev() {
                        let size = shape[dim];
                        if size == 0 {
                            return Err(Error::invalid(Rule::BadSparse, "a sparse index into an empty dimension"));
                        }
                        out[dim * nnz + entry] = at % size;
                        at /= size;
                    }
                    if at != 0 {
                        return Err(Error::invalid(
                            Rule::BadSparse,
                            format!("sparse position {v} past the {shape:?} tensor"),
                        ));
                    }
                }
            }
        }
        Ok(out)
    }
}

impl FormatReader for OnnxReader {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn format(&self) -> Format {
        Format::Onnx
    }

    fn summary(&self) -> FileSummary {
        self.facts.summary(&self.files)
    }

    fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    fn read(&self, index: usize, _verify: bool) -> Result<TensorData> {
        let e = self.catalog.get(index)?;
        let item = &self.items[index];
        let values = self.bytes_of(&item.stored).map_err(|err| err.for_tensor(e.info().name()))?;
        let Some(idx) = &item.indices else { return Ok(TensorData::dense(values)) };
        let Layout::Sparse { nnz, .. } = *e.info().layout() else {
            return Err(Error::usage("sparse indices for a dense entry"));
        };
        let name = e.info().name();
        let indices = self.coo(idx, e.info().shape(), nnz).map_err(|err| err.for_tensor(name))?;
        let data =
            SparseData::new(SparseFormat::Coo, nnz, Vec::new(), indices, values).map_err(|err| err.for_tensor(name))?;
        data.validate(e.info().shape()).map_err(|err| err.for_tensor(name))?;
        Ok(TensorData::sparse(data))
    }
}
