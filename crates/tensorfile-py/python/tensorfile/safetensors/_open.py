"""`safe_open` and `_safe_open_handle`: a file opened by the library, its tensors as safetensors
hands them out (names sorted, dtypes spelled `F32`, metadata `None` when there is none)."""

import os

import numpy as np

from .. import FileError, Slice, Tensor
from .._native import NativeFile, open_bytes
from . import _index
from ._common import (
    PACKED,
    SafetensorError,
    as_framework,
    check_backend,
    code_of,
    device_of,
    framework_of,
    metadata_of,
    np_bytes,
    packed_torch,
    safetensor_errors,
    to_device,
)


def open_path(filename) -> NativeFile:
    """The file at `filename` (a path or a URL), opened by the library (any format it reads);
    a missing file is safetensors' `FileNotFoundError`."""
    path = os.fspath(filename)
    try:
        with safetensor_errors():
            return NativeFile.open(path)
    except FileError:
        if "://" not in path and not os.path.exists(path):
            raise FileNotFoundError(f"No such file or directory: {path}") from None
        raise


class safe_open:  # noqa: N801 (safetensors' name)
    """A file opened for its tensors, as safetensors' `safe_open`: `framework` "pt" (torch) or
    "np" (numpy), `device` where torch tensors go, `backend` "mmap" or "pread" (both read the
    file's map). Any format the library reads opens, safetensors' included; so do URLs."""

    def __init__(self, filename, framework, device="cpu", *, backend="mmap"):
        self._framework = framework_of(framework)
        self._device = device_of(device, self._framework)
        check_backend(backend)
        self._native = open_path(filename)

    @property
    def _file(self) -> NativeFile:
        if self._native is None:
            raise SafetensorError("File is closed")
        return self._native

    def metadata(self) -> "dict | None":
        """The file's metadata, text to text (safetensors' `__metadata__`), or None."""
        return metadata_of(self._file)

    def keys(self) -> list:
        """The tensors' names, sorted."""
        return sorted(self._file.names())

    def offset_keys(self) -> list:
        """The tensors' names in the order of their data in the file."""
        return self._file.names()

    def get_tensor(self, name: str):
        """Tensor `name`, whole, in the framework and on the device the file was opened for."""
        return as_framework(self._tensor(name), self._framework, self._device)

    def get_tensors(self) -> dict:
        """Every tensor, by name, in the order of their data in the file."""
        tensors = [self._tensor(name) for name in self.offset_keys()]
        with safetensor_errors():
            self._file.load_tensors(tensors)
        return {t.name: as_framework(t, self._framework, self._device) for t in tensors}

    def get_slice(self, name: str) -> "SafeSlice":
        """Tensor `name` to index: only the rows of its first dimension the index selects are
        read."""
        self._tensor(name)
        return SafeSlice(self._file, name, self._framework, self._device)

    def _tensor(self, name: str) -> Tensor:
        if name not in self._file:
            raise SafetensorError(f"File does not contain tensor {name}")
        with safetensor_errors():
            return Tensor(self._file, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._native = None


class _safe_open_handle(safe_open):  # noqa: N801 (safetensors' name)
    """`safe_open` of an open file object: the file it names when it is one on disk, else its
    bytes, read from the start (an fsspec or other remote handle)."""

    def __init__(self, f, framework, device="cpu", *, backend="mmap"):
        self._framework = framework_of(framework)
        self._device = device_of(device, self._framework)
        check_backend(backend)
        name = getattr(f, "name", None)
        if isinstance(name, (str, os.PathLike)) and os.path.isfile(name):
            self._native = open_path(name)
            return
        handle = getattr(f, "buffer", f)  # a text file's bytes
        handle.seek(0)
        with safetensor_errors():
            self._native = open_bytes(bytes(handle.read()))


class SafeSlice:
    """A tensor to index, as safetensors' `get_slice` gives it: `get_shape()`, `get_dtype()`
    (`F32`...), and `[...]`, each result contiguous memory of its own."""

    def __init__(self, native: NativeFile, name: str, framework: str, device):
        self._native, self._name = native, name
        self._framework, self._device = framework, device
        tensor = Tensor(native, name)
        self._shape, self._dtype = list(tensor.shape), tensor.dtype

    def get_shape(self) -> list:
        """The whole tensor's shape."""
        return list(self._shape)

    def get_dtype(self) -> str:
        """The dtype as safetensors spells it (`F32`, `BF16`...)."""
        return code_of(self._dtype)

    def __getitem__(self, key):
        with safetensor_errors():
            indexers = _index.parse(key, self._shape)
            # A tensor of its own for each result: results never share memory.
            tensor = Tensor(self._native, self._name)
            if self._dtype in PACKED.values():
                return self._packed(tensor, indexers)
            out = Slice(tensor, self._framework)[_index.as_python(indexers, self._shape)]
        # Contiguous, as safetensors gives them (a copy only where the index strides).
        if self._framework == "numpy":
            return np.asarray(out, order="C")
        return to_device(out.contiguous(), self._device)

    def _packed(self, tensor: Tensor, indexers: list):
        """A slice of a float4 tensor for torch: whole bytes of it (two elements each)."""
        shape = self._shape
        if self._framework == "numpy" or self._dtype != PACKED["F4"] or not shape or shape[-1] % 2:
            return as_framework(tensor, self._framework, self._device)  # refused, with the reason
        index = _index.as_python(indexers, shape)
        if len(indexers) == len(shape):
            _index.check_pairs(indexers, shape)
            last = index[-1]
            index = (*index[:-1], slice(last.start // 2, last.stop // 2))
        part = np.ascontiguousarray(np_bytes(tensor).reshape([*shape[:-1], shape[-1] // 2])[index])
        logical = [*part.shape[:-1], part.shape[-1] * 2] if part.ndim else []
        return to_device(packed_torch(part, logical, self._name), self._device)
