"""Read, convert and write tensor files without running their code.

zTensor (`.zt`), safetensors, ExecuTorch `.pte`/`.ptd` and PyTorch `.pt2`/`torch.save`
files are recognised by their content (and the other formats `formats()` lists). Tensors come
out as numpy arrays or torch tensors, writable and safe to keep after the file is closed;
writing to them never changes the file. One stored raw and little-endian, of 64 KiB or more,
is a private copy-on-write map of the file's pages (nothing is copied until a page is
written), a smaller one a copy. `readonly=True` gives read-only numpy views of the shared map
instead.

    import tensorfile
    with tensorfile.open("model.safetensors") as f:
        w = f["lm_head.weight"].numpy()          # the file's pages: no copy until written
        rows = f.get_slice("embed.weight")[10:20]
    tensorfile.save_file({"w": w}, "out.zt", compress="zstd")
"""

# Everything imported here under a name of its own is private (a leading underscore): the
# package's namespace is its API, `__all__`.
import importlib.util as _importlib_util
import json as _json
import os as _os
from collections.abc import Iterator as _Iterator
from collections.abc import Mapping as _Mapping

import numpy as _np

from . import _distributed, _dtypes, _staging
from ._errors import (
    Error,
    FileError,
    InvalidFileError,
    RemoteError,
    TensorNotFoundError,
    UnsupportedError,
    UsageError,
)
from ._native import NativeFile as _NativeFile
from ._native import NativeTensor as _NativeTensor
from ._native import __version__
from ._native import convert as _convert
from ._native import diff_json as _diff_json
from ._native import report_page as _report_page
from ._native import edit_metadata as _edit_metadata
from ._native import formats_json as _formats_json
from ._native import set_remote_cache as _set_remote_cache
from ._native import set_threads as _set_threads
from ._native import threads as _threads
from ._native import write_file as _write_file

__all__ = [
    "Error", "File", "FileError", "InvalidFileError", "RemoteError", "Slice", "Tensor", "TensorNotFoundError",
    "UnsupportedError", "UsageError", "convert", "diff", "distributed_plan", "edit_metadata", "formats", "load_file",
    "open",
    "prepare_staging", "release_staging", "report", "report_data", "save_file", "set_remote_cache", "set_threads", "stats", "threads", "__version__",
]

class Tensor(_NativeTensor):
    """One tensor of a file: `name`, `dtype` (torch's spelling), `shape`, `nbytes`.

    Its bytes are read on first use into memory of its own, writable: `numpy()` and
    `torch()` are views of that memory (a private copy-on-write map of the file when it stores
    the tensor raw little-endian: the page cache's pages until one is written; writes never
    reach the file). Two `Tensor` objects of one name are two memories. numpy's array
    interface describes it typed (`np.asarray(t)`; dtypes numpy has no type for, such as
    bfloat16, as unsigned integers of their width), and `__dlpack__` hands it on.
    """

    def numpy(self, raw: bool = False, readonly: bool = False) -> _np.ndarray:
        """The tensor as a numpy array over its memory (writable). bfloat16 and float8 need
        `ml_dtypes`; `raw=True` gives unsigned integers of the same width instead. With
        `readonly=True`, a read-only view of the bytes as read instead (the file's shared map
        when stored raw: no private map made; writing raises numpy's ValueError)."""
        _check_plain(self)
        dtype = _dtypes.numpy_dtype(self.dtype, raw)
        shape = tuple(self.shape)
        if self.nbytes == 0:
            array = _np.empty(shape, dtype)
            array.flags.writeable = not readonly
            return array
        return _view(self, readonly).view(dtype).reshape(shape)

    def torch(self, device: str = "cpu", raw: bool = False):
        """The tensor as a torch tensor: on the CPU a view of its memory (writable; writes
        never reach the file), elsewhere a copy on `device`."""
        import torch

        _check_plain(self)
        cpu = self._torch_cpu(raw)
        if torch.device(device).type == "cpu":
            return cpu
        return _staging.to_device([cpu], device)[0]

    def _torch_cpu(self, raw: bool = False):
        """A CPU torch view of the tensor's memory."""
        import torch

        dtype = _dtypes.torch_dtype(self.dtype, raw)
        if self.nbytes == 0:
            return torch.empty(tuple(self.shape), dtype=dtype)
        # Bytes, which torch takes from numpy whatever the dtype, then torch's dtype over them.
        flat = torch.from_numpy(_view(self).view(_np.uint8))
        return flat.view(dtype).reshape(tuple(self.shape))

    def dense(self, raw: bool = False) -> _np.ndarray:
        """The tensor decoded to a dense numpy array, whatever its layout: a sparse tensor's
        stored values placed at their coordinates among zeros (the library's decoding, the
        same as `tensorfile extract --dense`), a quantized one dequantized to float32. For a
        dense tensor, `numpy()`."""
        if not self.is_sparse and self.quantization is None:
            return self.numpy(raw)
        dtype = _dtypes.numpy_dtype(self.dtype, raw)
        return _np.asarray(self.decoded()).view(dtype).reshape(tuple(self.shape))

    def dequantize(self, dtype: "str | None" = None) -> _np.ndarray:
        """A quantized tensor's values as a dense numpy array: dequantized to float32 bit for
        bit as the format's reference does (ggml's types as gguf-py's `dequantize`), then
        cast to `dtype` ("float16", "bfloat16"...) when given, as torch's `Tensor.to()` casts.
        Any other tensor gives its dense values, cast the same way."""
        if dtype is None:
            return self.dense()
        name = _dtypes.name_of(dtype)
        decoded = self.decoded(name)
        return _np.asarray(decoded).view(_dtypes.numpy_dtype(name)).reshape(tuple(self.shape))

    def parts(self, readonly: bool = False) -> dict:
        """The parts of the tensor's layout as numpy arrays, by role, in the layout's order:
        `data` for a dense tensor; `indices` and `values` (and `indptr` for CSR) for a sparse
        one; a quantized one's stored parts (`blocks` of a ggml type, verbatim; `data`,
        `scales` and `zeros` of group and MX quantization). Index parts are uint64. Each array
        is writable memory of its own (a private copy-on-write map of the file when stored
        raw), or with `readonly=True` a read-only view of the bytes read."""
        out = {}
        for name, dtype, shape, buffer in self.layout_parts(readonly):
            out[name] = _np.asarray(buffer).view(_dtypes.numpy_dtype(dtype, raw=True)).reshape(tuple(shape))
        return out

    def sparse(self) -> dict:
        """A sparse tensor's parts as numpy arrays: `format` ("coo" or "csr"), `nnz`,
        `indices` (COO: ndim x nnz; CSR: column indices), `indptr` (CSR) and `values`."""
        parts = self.sparse_parts()
        values = _np.frombuffer(parts["values"], dtype=_dtypes.numpy_dtype(self.dtype))
        indices = _np.array(parts["indices"], dtype=_np.uint64)
        if parts["format"] == "coo":
            indices = indices.reshape(len(self.shape), -1)
        return {
            "format": parts["format"],
            "nnz": parts["nnz"],
            "indices": indices,
            "indptr": _np.array(parts["indptr"], dtype=_np.uint64),
            "values": values,
        }

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        if copy:
            array = array.copy()
        return array if dtype is None else array.astype(dtype, copy=bool(copy))

    def __dlpack__(self, **kwargs):
        try:
            return self.numpy().__dlpack__(**kwargs)
        except (BufferError, TypeError, UnsupportedError) as refused:
            # numpy refuses read-only arrays (and bfloat16) to older consumers, and before
            # numpy 2.1 (the last numpy for Python 3.9 is 2.0) to every consumer: torch does not.
            if _importlib_util.find_spec("torch") is None:
                raise BufferError(
                    f"{self.name}: numpy {_np.__version__} cannot hand it on through DLPack ({refused}) "
                    "and torch is not installed; np.asarray(t) is a view of it without DLPack"
                ) from refused
            return self.torch().__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU


def _check_plain(tensor: _NativeTensor) -> None:
    """Refuse to hand over the stored bytes of a sparse or quantized tensor as if they were its
    elements, saying what to call instead (row slices are native tensors: a function, not a
    method)."""
    if tensor.is_sparse:
        raise UnsupportedError(f"{tensor.name} is sparse: dense() decodes it, parts() gives its parts")
    if tensor.quantization is not None:
        raise UnsupportedError(
            f"{tensor.name} is quantized ({tensor.quantization}): dequantize() gives its values as "
            "float32 (dequantize(dtype=...) in another float dtype), parts() its stored blocks"
        )


def _view(tensor: _NativeTensor, readonly: bool = False) -> _np.ndarray:
    """The tensor's memory as a flat numpy array over it (no copy), of the type its array
    interface gives, whose base keeps the memory: writable memory of the tensor's own, or with
    `readonly` a read-only view of the bytes as read."""
    if readonly:
        return _np.asarray(tensor.shared()).reshape(-1)
    # Read first: an error raised inside `__array_interface__` some numpy versions swallow.
    tensor.load()
    return _np.asarray(tensor).reshape(-1)


class Slice:
    """`File.get_slice(name)[...]`: indexing reads only the rows of the first dimension that
    the index selects; the rest of the index is applied to them. Each result is memory of its
    own, writable (read-only views with `readonly=True`, numpy only)."""

    def __init__(self, tensor: Tensor, framework: str, readonly: bool = False):
        self._tensor = tensor
        self._framework = framework
        self._readonly = readonly

    def get_shape(self) -> list:
        """The whole tensor's shape."""
        return list(self._tensor.shape)

    def get_dtype(self) -> str:
        """The tensor's dtype, in torch's spelling (`float32`, `bfloat16`...)."""
        return self._tensor.dtype

    def __getitem__(self, key):
        t = self._tensor
        key = key if isinstance(key, tuple) else (key,)
        if not t.shape or t.is_sparse or not key or key[0] is Ellipsis:
            return self._take(t, key)
        first, rest = key[0], key[1:]
        rows = t.shape[0]
        if isinstance(first, slice):
            start, stop, step = first.indices(rows)
            if step < 0:  # read what the slice spans, then step through it
                lo, hi = (stop + 1, start + 1) if start >= stop else (0, 0)
                part, inner = t.rows(lo, hi), slice(None, None, step)
            else:
                part, inner = t.rows(start, max(start, stop)), slice(None, None, step)
            return self._take(part, (inner, *rest))
        if isinstance(first, (int, _np.integer)):
            index = int(first) + rows if first < 0 else int(first)
            if not 0 <= index < rows:
                raise IndexError(f"index {first} is out of bounds for dimension 0 of size {rows}")
            return self._take(t.rows(index, index + 1), (0, *rest))
        return self._take(t, key)

    def _take(self, part, index: tuple):
        """`index` applied to the rows read (`part`), as the framework's array."""
        if self._framework == "numpy":
            return (part.dense() if part.is_sparse else Tensor.numpy(part, readonly=self._readonly))[index]
        if self._framework not in ("torch", "pt"):
            raise UsageError(f"framework must be 'numpy' or 'torch', not {self._framework!r}")
        import torch

        # Indexed as unsigned integers of the dtype's width (numpy has no bfloat16 or float8
        # that torch takes), then seen as torch's dtype: a view where numpy's result is one.
        raw = part.dense(raw=True) if part.is_sparse else Tensor.numpy(part, raw=True)
        array = _np.asarray(raw[index])
        if any(s < 0 for s in array.strides):
            array = array.copy()  # torch has no negative strides
        out = torch.from_numpy(array)
        dtype = _dtypes.torch_dtype(part.dtype)
        return out.view(dtype) if out.element_size() == dtype.itemsize else out


class File(_Mapping):
    """An opened tensor file: a read-only mapping of name to `Tensor`, in file order.

    `access` says how a local file's bytes are reached: "map" (mapped: nothing is read until a
    tensor is), "whole" (read whole into memory first, with direct I/O around the page cache:
    the fastest way to every tensor of a file that is not cached) or "auto" ("whole" when the
    file is not in the page cache, else "map"; what `load_file` uses).

    `verify` says what is checked as tensors are read: "checksums" (the default: every
    checksum the format stores, zTensor's crc32c/sha256/xxh3, the CRCs of zip members, on each
    tensor read), `True` (those, and the sha256 of every file whose digest is known: a
    `.sha256` file beside it, the Hugging Face cache blob it is, the record of a `--local-dir`
    download, a clone's Git LFS pointer, or `expect_sha256`, computed beside the load; nothing is handed over when it differs) or `False` (nothing). A mismatch
    raises `InvalidFileError` naming the file and the tensor."""

    def __init__(self, path, data=None, *, access="map", verify="checksums", expect_sha256=None):
        self._verify = _verify_mode(verify)
        self._expect_sha256 = expect_sha256
        self._native = _NativeFile.open(
            _os.fspath(path), None if data is None else _os.fspath(data), access, self._verify, expect_sha256
        )
        self._names = self._native.names()

    @property
    def _file(self) -> _NativeFile:
        if self._native is None:
            raise ValueError("the file is closed")
        return self._native

    @property
    def path(self) -> str:
        """The file as it was opened (a path or a URL)."""
        return self._file.path

    @property
    def format(self) -> str:
        """The format's short name, as `formats()` names it (`safetensors`, `gguf`...)."""
        return self._file.format

    @property
    def metadata(self) -> dict:
        """`format`, `version` and the file's own `metadata` (safetensors' `__metadata__`...)."""
        return self._file.metadata()

    def info(self) -> dict:
        """What `tensorfile info --json` prints."""
        return _json.loads(self._file.info_json())

    def entries(self) -> list:
        """Every entry exactly as `tensorfile ls --json` lists it: the readable ones in file
        order (layout, offsets, extra fields...), then the unreadable ones (`kind` is
        "unreadable", with `error`, `rule` and `hint`)."""
        return _json.loads(self._file.entries_json())

    @property
    def unreadable(self) -> list:
        """Entries that cannot be read, with their dtype, shape and the reason."""
        return self._file.unreadable()

    def verify(self, deep: bool = True) -> dict:
        """Check the structure and every stored checksum, and with `deep` decode every tensor
        too. Returns what `tensorfile verify --json` prints (`--deep` when `deep`): `ok`,
        counts of `tensors`, `blobs`, `unreadable` entries and `checksums` checked,
        `decoded_bytes`, and `problems`, each with its `tensor`, `rule` (an id such as
        "checksum-mismatch", or None), `message` and `error` (the whole message)."""
        return _json.loads(self._file.verify_json(deep))

    def stats(self, names=None, hist: "int | None" = None) -> list:
        """The statistics of tensors `names` (every entry when None), each a dict as
        `tensorfile stats --json` prints it: `name`, `dtype`, `shape`, `numel`,
        `dequantized`, `summarised`, then `min`, `max`, `mean`, `std` (population), `absmax`
        over the finite values (None when none is finite), counts `zeros`, `nan`, `posinf`,
        `neginf`, and `hist` (`{"edges", "counts"}` of a `hist`-bin histogram, or None); or,
        for a tensor not summarised (a blob, a complex or opaque dtype), its `reason`.
        Accumulated in float64, on all cores."""
        return _json.loads(self._file.stats_json(None if names is None else list(names), hist))

    def __getitem__(self, name: str) -> Tensor:
        return Tensor(self._file, name)

    def __iter__(self) -> _Iterator[str]:
        self._file  # noqa: B018 (raises when closed)
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._file)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._file

    def keys(self):
        """The names of the readable tensors, in file order."""
        return list(self._names)

    def get_tensor(
        self, name: str, framework: str = "numpy", device: str = "cpu", raw: bool = False, readonly: bool = False
    ):
        """Tensor `name` as a numpy array (`framework="numpy"`) or a torch tensor
        (`"torch"`, on `device`): memory of its own at each call, writable (writes never reach
        the file). `readonly=True` gives a read-only numpy view of the bytes as read instead
        (torch has no read-only tensors: refused there)."""
        _check_framework(framework, device, readonly)
        tensor = self[name]
        if framework == "numpy":
            return tensor.numpy(raw=raw, readonly=readonly)
        return tensor.torch(device=device, raw=raw)

    def get_slice(self, name: str, framework: str = "numpy", readonly: bool = False) -> Slice:
        """Tensor `name` as a `Slice`: indexing it reads only the rows it selects, as numpy
        arrays (`framework="numpy"`) or torch tensors (`"torch"`), writable (read-only numpy
        views with `readonly=True`)."""
        _check_framework(framework, "cpu", readonly)
        return Slice(self[name], framework, readonly)

    def load(
        self,
        names=None,
        framework: str = "numpy",
        device: str = "cpu",
        *,
        staging=None,
        direct="auto",
        readonly: bool = False,
        dequantize=None,
    ) -> dict:
        """Tensors `names` (every readable one by default), by name in that order, as
        `load_file` gives a file's tensors: numpy arrays, or torch tensors on `device`; onto a
        GPU through the staging pipeline (`staging`, `direct`: see `load_file`), so that a
        part of a checkpoint (a rank's layers) loads as fast as the whole. Each is memory of
        its own; `readonly` and `dequantize` as in `load_file`."""
        _check_framework(framework, device, readonly)
        dequantize = _dequantize_dtype(dequantize, readonly)
        tensors = [self[n] for n in (self._names if names is None else names)]
        staged = self._verify != "full" and self._expect_sha256 is None and dequantize is None
        if framework != "numpy" and _is_cuda(device) and staged:
            return _staged(self, tensors, device, staging, direct)
        self._file.load_tensors(tensors)
        values = _dequantized(tensors, dequantize) if dequantize is not None else {}
        if framework == "numpy":
            return {t.name: values[t.name] if t.name in values else t.numpy(readonly=readonly) for t in tensors}
        import torch

        def dequantized(a):
            # Bytes, which torch takes from numpy whatever the dtype (bfloat16 too), then its dtype.
            flat = torch.from_numpy(_np.ascontiguousarray(a).reshape(-1).view(_np.uint8))
            return flat.view(_dtypes.torch_dtype(dequantize)).reshape(a.shape)

        cpu = [dequantized(values[t.name]) if t.name in values else t._torch_cpu() for t in tensors]
        if torch.device(device).type != "cpu":
            cpu = _staging.to_device(cpu, device)
        return {t.name: c for t, c in zip(tensors, cpu)}

    def close(self) -> None:
        """Forget the file. Arrays and tensors already made keep the memory they view."""
        self._native = None

    def __enter__(self) -> "File":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        if self._native is None:
            return "<tensorfile.File (closed)>"
        return f"<tensorfile.File {self.path!r}: {self.format}, {len(self)} tensors>"


def _verify_mode(verify) -> str:
    """`verify` as the native open takes it."""
    if verify is True:
        return "full"
    if verify is False or verify is None:
        return "off"
    if verify in ("checksums", "full", "off"):
        return verify
    raise UsageError(f"verify is True, 'checksums' or False, not {verify!r}")


def open(path, data=None, *, access="map", verify="checksums", expect_sha256=None) -> File:  # noqa: A001
    """Open a tensor file of any format tensorfile reads (recognised by its content); `data`
    is the `.ptd` holding an ExecuTorch program's external tensors. A sharded checkpoint
    opens as one file: give its index (`model.safetensors.index.json`) or its folder.

    `path` may be a URL (`https://`, `s3://`, `gs://`, `az://`): the remote file is read by
    range, its index when opened and each tensor when read; credentials and endpoints come
    from the usual environment variables (`AWS_*`, `GOOGLE_*`, `AZURE_*`).

    `access` says how a local file's bytes are reached: "map" (the default), "whole" (read
    whole into memory first, with direct I/O around the page cache) or "auto" ("whole" when
    the file is not cached); `verify` and `expect_sha256` say what is checked as it is read
    (see `File`)."""
    return File(path, data, access=access, verify=verify, expect_sha256=expect_sha256)


def stats(path, names=None, hist: "int | None" = None, data=None) -> list:
    """The statistics of the tensors of file `path`: see `File.stats`."""
    with File(path, data) as f:
        return f.stats(names, hist)


def formats() -> list:
    """Every format tensorfile knows, as `tensorfile formats --json` lists it: `name`,
    `title`, `extensions`, whether it can be written (`write`) and updated (`update`), and
    `caps`: what its files hold (`dtypes`, `layouts`, `checksums`, `compression`,
    `byte_orders`, `file_metadata`, `blobs`, `tensor_fields`)."""
    return _json.loads(_formats_json())


def diff(a, b, atol: "float | None" = None, rtol: "float | None" = None) -> dict:
    """How the tensors of `a` and `b` differ (any formats, sharded or remote), as
    `tensorfile diff --json` says it: `same`, `close` (every change within the tolerance),
    the names only in either file, and each changed tensor's `changes` and `metrics`
    (`max_abs_diff`, `max_rel_diff`, `cosine`, `nmse`, `over_tolerance`, `compared`; `b` is
    the reference). The tolerance is numpy.isclose's (defaults atol 1e-8, rtol 1e-5)."""
    return _json.loads(_diff_json(_os.fspath(a), _os.fspath(b), atol, rtol))


def report(path, output=None, compare=None, stats: bool = True, bins: int = 32, atol: "float | None" = None,
           rtol: "float | None" = None, data=None) -> str:
    """Write the HTML report of file `path` (any format, sharded or remote; `data`: an
    ExecuTorch program's `.ptd`), as `tensorfile report` writes it: one self-contained page
    with its summary, where its bytes go, its tensors (sortable, filterable) with statistics
    and histograms (`stats`, `bins` per histogram) and, with `compare`, the per-tensor
    differences from another file under numpy.isclose's tolerance. `output` defaults to the
    file's name with `.html` added, in the current folder. Returns the page's path."""
    if output is None:
        output = _os.path.basename(_os.fspath(path).rstrip("/")) + ".html"
    _report_page(_os.fspath(path), _os.fspath(output), None if compare is None else _os.fspath(compare), stats, bins,
                 atol, rtol, None if data is None else _os.fspath(data))
    return _os.fspath(output)


def report_data(path, compare=None, stats: bool = True, bins: int = 32, atol: "float | None" = None,
                rtol: "float | None" = None, data=None) -> dict:
    """The document a report page draws (see `report`), as a dict: `summary`, `sections`,
    `tensors` (`columns`, `rows`, `stats`), `unreadable` and `compare`."""
    text = _report_page(_os.fspath(path), "", None if compare is None else _os.fspath(compare), stats, bins, atol,
                        rtol, None if data is None else _os.fspath(data), True)
    return _json.loads(text)


def load_file(
    path,
    framework: str = "numpy",
    device: str = "cpu",
    data=None,
    process_group=None,
    staging=None,
    direct="auto",
    readonly: bool = False,
    verify="checksums",
    expect_sha256=None,
    dequantize=None,
) -> dict:
    """Every tensor of a file, by name: numpy arrays, or torch tensors on `device`. A remote
    file's tensors are fetched ahead, several at a time.

    A quantized tensor (a GGUF file's Q4_K...) is refused unless `dequantize` names the float
    dtype to give it in ("float32", "float16", "bfloat16", or a numpy/torch dtype of those):
    each is dequantized as gguf-py's `dequantize` does (float32, bit for bit), then cast as
    torch's `Tensor.to()` casts, on every core (the other tensors as they are).

    `verify`: "checksums" (the default) checks every checksum the file stores on the bytes
    read; `True` also the file's sha256 where it is known (`expect_sha256`, a `.sha256` file
    beside it, the Hugging Face cache blob it is, the record of a `--local-dir` download, a
    clone's Git LFS pointer), computed beside the load: a mismatch raises
    `InvalidFileError` naming the file, and nothing is returned; `False` checks nothing. Onto a
    GPU the stored checksums are checked as the tensors are read for the staging buffers; with
    `True` the tensors go through the host (read, checked, then copied).

    Each is memory of its own, writable, safe to keep after the call: on the CPU a private
    copy-on-write map of the file where it stores the tensor raw (the page cache's pages, no
    copy until a page is written; writes never reach the file), else the buffer it was read
    or decoded into. `readonly=True` gives read-only numpy views of the bytes as read instead
    (the file's shared map: no private maps made); torch has no read-only tensors, so it is
    refused with `framework="torch"`.

    Onto a GPU the bytes go through a few pinned staging buffers of `staging` bytes in all
    (`_staging.DEFAULT_STAGING`, 256 MiB, by default), filled from the file on all cores
    while the previous ones are copied: `direct` says when the file is read around the page
    cache (`O_DIRECT`): `"auto"` (when it is not cached), `"always"` or `"never"`. The
    buffers are kept for later loads (`release_staging()` frees them); every tensor returned
    is memory of its own.

    With `process_group` (a `torch.distributed` group, `framework="torch"`), every process of
    the group calls it alike: each reads about 1/N of the bytes from storage (the run of
    tensors `distributed_plan` gives it) and the group broadcasts the rest (NCCL on `device`,
    gloo through the CPU), so every rank gets every tensor, in memory of its own."""
    _check_framework(framework, device, readonly)
    dequantize = _dequantize_dtype(dequantize, readonly)
    if process_group is not None:
        if framework not in ("torch", "pt"):
            raise UsageError(f"process_group exchanges torch tensors: give framework='torch', not {framework!r}")
        return _distributed.load(path, device, data, process_group)
    # Writable tensors are private maps of the file, read ahead by the kernel (as fast cold as
    # reading the file whole first, without holding it twice: docs/performance.md); read-only
    # views may view a file read whole when it is not cached. Onto a GPU the staging pipeline
    # reads the mapped file itself.
    access = "auto" if readonly else "map"  # readonly: numpy, on the CPU
    with File(path, data, access=access, verify=verify, expect_sha256=expect_sha256) as f:
        return f.load(None, framework, device, staging=staging, direct=direct, readonly=readonly, dequantize=dequantize)


def _dequantize_dtype(dequantize, readonly: bool):
    """`dequantize` by its name (None stays None), refused where it cannot be."""
    if dequantize is None:
        return None
    name = _dtypes.name_of(dequantize)
    if name not in ("float32", "float16", "bfloat16"):
        raise UsageError(f"dequantize gives float32, float16 or bfloat16, not {name!r}")
    if readonly:
        raise UsageError("dequantized tensors are memory of their own: readonly=True does not go with dequantize")
    return name


def _dequantized(tensors, dtype: str) -> dict:
    """The quantized ones of `tensors`, dequantized to `dtype`, by name: on every core (each
    tensor's decoding runs without the interpreter's lock)."""
    from concurrent.futures import ThreadPoolExecutor

    quantized = [t for t in tensors if t.quantization is not None]
    if not quantized:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, min(len(quantized), _os.cpu_count() or 1))) as pool:
        arrays = list(pool.map(lambda t: t.dequantize(dtype), quantized))
    return {t.name: a for t, a in zip(quantized, arrays)}


def _is_cuda(device) -> bool:
    import torch

    return torch.device(device).type == "cuda" and torch.cuda.is_available()


def _load_staged(path, device, data, staging, direct, transfer=None) -> dict:
    """Every tensor of `path` onto `device` through the staging buffers; `transfer` is the
    copy into the outputs (CUDA's by default; tests give one that copies on the host)."""
    with File(path, data, access="map") as f:
        return _staged(f, [f[n] for n in f], device, staging, direct, transfer)


def _staged(f: "File", tensors: list, device, staging, direct, transfer=None) -> dict:
    """`tensors` of the open file `f` onto `device` through the staging buffers (`_staging`)."""
    import torch

    device = torch.device(device)
    if transfer is None:
        transfer = _staging.CudaTransfer(device)
    for t in tensors:
        _check_plain(t)
    outputs = [torch.empty(tuple(t.shape), dtype=_dtypes.torch_dtype(t.dtype), device=device) for t in tensors]
    _staging.load(f._file, tensors, outputs, transfer, staging or _staging.DEFAULT_STAGING, direct)
    return {t.name: o for t, o in zip(tensors, outputs)}


def set_threads(n: int) -> None:
    """Use `n` threads (at least 1) for the library's parallel work (reading, converting,
    quantizing, statistics) for the rest of the process; by default every core, or
    RAYON_NUM_THREADS. Call it before any other work: once the threads have started, the count
    is fixed and this raises `UsageError`."""
    _set_threads(n)


def set_remote_cache(dir, limit: "int | str | None" = None) -> None:  # noqa: A002 (the CLI's word)
    """Keep the ranges read from remote files (URLs) in the folder `dir` for the rest of the
    process, so that a second load of the same object (same ETag and size) reads them there:
    at most `limit` bytes (a number, or a size such as "20GB"; default 64 GiB), the ranges read
    longest ago removed first; safe with several processes sharing the folder. `None` turns it
    off; without a call, the folder `TENSORFILE_CACHE_DIR` names, if any (`--cache DIR` on the
    command line)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, str))):
        raise UsageError(f"limit is a number of bytes or a size such as '20GB', not {limit!r}")
    _set_remote_cache(None if dir is None else _os.fspath(dir), None if limit is None else str(limit))


def threads() -> int:
    """How many threads the library's parallel work uses."""
    return _threads()


def prepare_staging(device="cuda", staging=None) -> None:
    """Make and register (pin) the staging buffers that loads onto a GPU use now, before the
    first load: registering costs about a quarter of a second per GiB, which the first load
    then does not pay. `staging`: the budget those loads give (`load_file`'s `staging`), by
    default `_staging.DEFAULT_STAGING`; kept until `release_staging()` or a load with
    another budget."""
    import torch

    if not _is_cuda(device):
        raise UsageError(f"staging buffers are for a CUDA device, not {str(device)!r} (or no CUDA device is available)")
    _staging.prepare(_staging.CudaTransfer(torch.device(device)), staging or _staging.DEFAULT_STAGING)


def release_staging() -> None:
    """Free the staging buffers that loads onto a GPU keep for the next load."""
    _staging.release()


def distributed_plan(path, world_size: int, data=None) -> list:
    """Which tensors each of `world_size` ranks reads when they `load_file(path,
    process_group=...)` together: for each rank, `{"names": [...], "bytes": n}`, contiguous runs
    in file order, none above 1/N of the bytes plus the largest tensor."""
    return _distributed.plan(path, world_size, data)


def _check_framework(framework: str, device: str, readonly: bool = False) -> None:
    if framework not in ("numpy", "torch", "pt"):
        raise UsageError(f"framework must be 'numpy' or 'torch', not {framework!r}")
    if framework == "numpy" and device != "cpu":
        raise UsageError("numpy arrays live on the CPU: use framework='torch' for other devices")
    if readonly and framework != "numpy":
        raise UsageError(
            "readonly=True gives read-only numpy views: torch has no read-only tensors (a write to one "
            "over read-only memory would crash the process); leave readonly False for torch"
        )


def _torch_uint8():
    import torch

    return torch.uint8


def _as_bytes(name: str, value) -> tuple:
    """(dtype name, shape, a callable returning the little-endian contiguous bytes) of an array
    or tensor. The writer calls it when it writes that tensor: one copy at a time."""
    module = type(value).__module__
    if module.startswith("torch"):
        t = value.detach().cpu().contiguous()

        def torch_bytes() -> bytes:
            flat = t.reshape(-1)
            return flat.view(_torch_uint8()).numpy().tobytes() if flat.numel() else b""

        return _dtypes.torch_name(t.dtype), list(t.shape), torch_bytes
    array = _np.asarray(value)
    if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and _np.little_endian is False):
        array = array.astype(array.dtype.newbyteorder("<"))
    array = _np.asarray(array, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    dtype = _dtypes.numpy_name(array.dtype)
    return dtype, list(array.shape), array.tobytes


def save_file(
    tensors: _Mapping,
    path,
    format: "str | None" = None,  # noqa: A002 (safetensors' spelling)
    compress: "str | None" = None,
    checksum: "str | None" = None,
    metadata: "_Mapping[str, str] | None" = None,
    zt_version: "str | int | None" = None,
) -> None:
    """Write `tensors` (name -> numpy array or torch tensor) to `path`, atomically. The
    format comes from the extension unless given (`formats()` lists those that can be
    written, with their extensions).
    `.zt` is written as zTensor v0.1, the format of the seed reference, unless `zt_version`
    is 2 (zTensor 2, in canonical form; `format="zt2"` says the same).
    `compress` ("none", "zstd" or "zstd:LEVEL") and `checksum` ("crc32c", "sha256" or
    "none") apply to `.zt`, `metadata` (text to text) to safetensors; an option left as None
    takes the library's default (no compression, crc32c checksums where the format stores
    them). An option given that the format ignores is named in a `UserWarning`."""
    items = [(name, *_as_bytes(name, value)) for name, value in tensors.items()]
    _write_file(
        _os.fspath(path),
        items,
        format=format,
        compress=compress,
        checksum=checksum,
        metadata=None if metadata is None else [(str(k), str(v)) for k, v in metadata.items()],
        zt_version=None if zt_version is None else str(zt_version),
    )


def convert(
    src,
    dst,
    data=None,
    skip_unsupported: bool = False,
    compress: "str | None" = None,
    checksum: "str | None" = None,
    big_endian: bool = False,
    verify: bool = True,
    max_shard_size: "int | str | None" = None,
    dtype: "str | None" = None,
    zt_version: "str | int | None" = None,
    include: "str | list[str] | None" = None,
    exclude: "str | list[str] | None" = None,
    rename: "_Mapping[str, str] | list[tuple[str, str]] | None" = None,
    split_max_tensors: "int | None" = None,
    no_tensor_first_split: bool = False,
    quantize: "str | None" = None,
    imatrix=None,
    quantize_options: "_Mapping[str, object] | None" = None,
    vocab_only: bool = False,
    model_name: "str | None" = None,
    metadata_file=None,
    outtype: "str | None" = None,
    fp8_as_q8: bool = False,
) -> dict:
    """Convert `src` into `dst` (format from its extension), streaming, atomically: the same
    file `tensorfile convert` writes with the same options. `src` is a path (a file, a sharded
    checkpoint's index or folder, a URL) or a list of them, merged in order whatever their
    formats (a name in two of them is an error naming both; file metadata is merged, the
    first one's value winning). `include` and `exclude` (a glob or a list of globs on the
    tensor name: `*` any run of characters, dots included, `?` one, `[a-z]`, `[!a-z]`) keep
    the tensors matching an include (or all when there is none) and no exclude; `rename`
    (`{regex: replacement}`, in order, or a list of pairs) replaces the first match of each
    regex in the name, as `re.sub(regex, replacement, name, count=1)` does but with `$1` or
    `${name}` for groups, each applied to the result of the one before. `.zt` is written as zTensor v0.1,
    the format of the seed reference, unless `zt_version` is 2 (zTensor 2, canonical form). `compress` ("none", "zstd",
    "zstd:LEVEL"), `checksum` ("crc32c", "sha256", "none") and `big_endian` left as they are
    take the library's defaults (no compression, crc32c checksums where the format stores
    them, little-endian); one given that the format ignores is named in a `UserWarning`. With
    `max_shard_size` (bytes, or text such as "5GB" or "500MiB"), as shards of at most that
    many tensor bytes named after `dst` (`model-00001-of-00003.safetensors`...) plus their
    index (`model.safetensors.index.json`), all committed together. A `.gguf` `dst` is written
    as the parts of a split model instead (`model-00001-of-00003.gguf`..., no index), as
    `llama-gguf-split --split` writes them: cut by `max_shard_size` or by `split_max_tensors`
    (tensors per part), the first part holding the metadata alone with `no_tensor_first_split`.
    Any part of a split GGUF model reads as the whole model; converted to one `.gguf` it is
    merged as `llama-gguf-split --merge` merges it. With `dtype` ("float32",
    "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"; or a torch or numpy dtype of those),
    floating tensors are cast to it exactly as torch's `Tensor.to()` casts them, quantized
    tensors dequantized first; integer, bool and complex tensors are written as they are.
    With `quantize` (a llama-quantize preset such as "Q4_K_M", or a ggml type such as
    "Q8_0"), tensors are quantized as ggml quantizes them: a GGUF model into a `.gguf`
    byte for byte as `llama-quantize` writes it (each tensor's type chosen as it chooses;
    "Q4_K" is its alias of the Q4_K_M mixture; `dtype`, splits and `rename` are refused);
    any other input, or a zTensor 2 output, to one type for every floating tensor of two or
    more dimensions (a preset named after a type means that type alone, as `pure` does;
    `include`/`exclude` then pick what is quantized). `imatrix` is an
    importance matrix file (llama-imatrix's `.gguf` or `.dat`); `quantize_options` holds
    llama-quantize's other options by name: `tensor_types` ([(regex, type)] or
    ["REGEX=TYPE"]), `tensor_type_file` (a path), `output_tensor_type`,
    `token_embedding_type`, `leave_output_tensor`, `pure`, `override_kv`
    (["KEY=TYPE:VALUE"]), `allow_requantize`, `keep_split`, `prune_layers` ([n]),
    `include_weights`, `exclude_weights` ([names]), `dry_run`. An option that does not apply
    to the way the file is quantized (the output tensor's type without a GGUF model into a
    `.gguf`...) raises `UsageError` naming it. With `dry_run`, nothing is written and the
    sizes are returned: `{"dry_run": True, "path": "llama-quantize" or "one-type",
    "tensors": [{"name", "from", "to", "bytes_in", "bytes_out"}], "bytes_in": n,
    "bytes_out": n}`.
    A Hugging Face model folder (holding `config.json`) into a `.gguf` is written as llama.cpp's
    `convert_hf_to_gguf.py` writes it (`outtype` "f32", "f16", "bf16", "q8_0", "tq1_0",
    "tq2_0" or "auto" as its `--outtype`, `dtype` "f32"/"f16"/"bf16" the same; `quantize` as
    the converter followed by llama-quantize); `vocab_only`, `model_name` and `metadata_file`
    (a JSON object of `general.*` keys) are its `--vocab-only`, `--model-name` and
    `--metadata`; `fp8_as_q8` its `--fp8-as-q8` (FP8 weights stored as Q8_0);
    `max_shard_size` (its sizes: "5G", "500M" too), `split_max_tensors` and
    `no_tensor_first_split` cut the output as its `--split-max-size`, `--split-max-tensors`
    and `--no-tensor-first-split` do (`model-00001-of-00003.gguf`...).
    Returns `{"tensors": n, "skipped": [names], "cast": [names], "files": [paths written],
    "index": path or None, "renamed": {source name: name written}, "filtered_out": n,
    "quantized": {source name: ggml type}, "seconds": s}`; for a checkpoint also its
    "architecture", "outtype" and "types" ({tensor name: ggml type as converted})."""
    if isinstance(max_shard_size, bool) or not isinstance(max_shard_size, (int, str, type(None))):
        raise UsageError(f"max_shard_size is a number of bytes or a size such as '5GB', not {max_shard_size!r}")
    if split_max_tensors is not None and (
        isinstance(split_max_tensors, bool) or not isinstance(split_max_tensors, int) or split_max_tensors < 0
    ):
        raise UsageError(f"split_max_tensors is a number of tensors, not {split_max_tensors!r}")
    sources = [_os.fspath(p) for p in src] if isinstance(src, (list, tuple)) else [_os.fspath(src)]
    if not sources:
        raise UsageError("src is a path or a list of at least one path")
    options = {
        "data": None if data is None else _os.fspath(data),
        "skip_unsupported": skip_unsupported,
        "compress": compress,
        "checksum": checksum,
        "big_endian": big_endian,
        "verify": verify,
        "max_shard_size": None if max_shard_size is None else str(max_shard_size),
        "split_max_tensors": split_max_tensors,
        "no_tensor_first_split": bool(no_tensor_first_split),
        "dtype": None if dtype is None else _dtypes.name_of(dtype),
        "zt_version": None if zt_version is None else str(zt_version),
        "include": _globs(include, "include"),
        "exclude": _globs(exclude, "exclude"),
        "rename": _renames(rename),
        "quantize": quantize,
        "imatrix": None if imatrix is None else _os.fspath(imatrix),
        "quantize_options": None if quantize_options is None else dict(quantize_options),
        "outtype": outtype,
        "fp8_as_q8": bool(fp8_as_q8),
        "vocab_only": bool(vocab_only),
        "model_name": model_name,
        "metadata_file": None if metadata_file is None else _os.fspath(metadata_file),
    }
    done = _json.loads(_convert(sources, _os.fspath(dst), options))
    if done.get("dry_run"):
        return done
    return {
        "tensors": done["tensors"],
        "skipped": [s["name"] for s in done["skipped"]],
        "cast": done["cast"],
        "files": done.get("files", [done["output"]]),
        "index": done.get("index"),
        "renamed": {r["from"]: r["to"] for r in done["renamed"]},
        "filtered_out": done["filtered_out"],
        "quantized": {q["name"]: q["type"] for q in done["quantized"]},
        "seconds": done["seconds"],
        **({"architecture": done["architecture"], "outtype": done["outtype"],
            "types": {t["name"]: t["type"] for t in done["types"]}} if "architecture" in done else {}),
    }


def edit_metadata(path, out, set=None, delete=None) -> dict:  # noqa: A002 (the CLI's word)
    """Write `out`: the file at `path` (GGUF, safetensors, zTensor 2) with metadata keys set and deleted,
    every tensor's bytes copied as they are, atomically (`out` may be `path`: it is replaced
    once the new file is complete); what `tensorfile meta` writes. `set` maps keys to values,
    or is a list of `"KEY=VALUE"` texts; a key may name a type, `"KEY:TYPE"` (`str`, `bool`,
    `u8`..`u64`, `i8`..`i64`, `f32`, `f64`, `[TYPE]` for an array). A value is text read as
    the command line reads it (`"@PATH"` a file's text), or a bool, int, float or list, given
    as that text. Its type is the one named, else the existing key's, else its own (an int an
    `i32`, a float an `f32`, a list an array of its elements' type). safetensors keeps text
    only. `delete` is a key or a list of keys. Returns `{"output": path, "changes": [{"key",
    "action" ("set" or "delete"), "old", "new"}]}`, each value `{"type", "value"}` or None."""
    if set is None:
        given = []
    elif isinstance(set, _Mapping):
        given = [f"{k}={_meta_text(v)}" for k, v in set.items()]
    elif isinstance(set, (list, tuple)):
        given = [_meta_text(s) for s in set]
    else:
        raise UsageError(f"set is a mapping of keys to values or a list of 'KEY=VALUE', not {set!r}")
    deleted = [delete] if isinstance(delete, str) else list(delete or [])
    options = {"set": given, "delete": deleted}
    return _json.loads(_edit_metadata(_os.fspath(path), _os.fspath(out), options))


def _meta_text(value) -> str:
    """A value as the command line's text: bools `true`/`false`, lists as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return _json.dumps([_meta_element(v) for v in value])
    if isinstance(value, (int, float, str)):
        return str(value)
    raise UsageError(f"a metadata value is text, a bool, a number or a list, not {value!r}")


def _meta_element(value):
    return value if isinstance(value, (bool, int, float, str)) else _meta_text(value)


def _globs(given, keyword: str) -> "list[str]":
    """`include=`/`exclude=` as a list: one glob, or several."""
    if given is None:
        return []
    if isinstance(given, str):
        return [given]
    if isinstance(given, (list, tuple)) and all(isinstance(g, str) for g in given):
        return list(given)
    raise UsageError(f"{keyword} is a glob or a list of globs, not {given!r}")


def _renames(given) -> "list[tuple[str, str]]":
    """`rename=` as (regex, replacement) pairs, in order."""
    if given is None:
        return []
    pairs = list(given.items()) if isinstance(given, _Mapping) else given
    if isinstance(pairs, (list, tuple)) and all(
        isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs
    ):
        return [(p[0], p[1]) for p in pairs]
    raise UsageError(f"rename is a dict {{regex: replacement}} or a list of (regex, replacement) pairs, not {given!r}")
