"""Writing safetensors files and bytes through the library's writer: `TensorSpec`, `serialize`,
`serialize_file`, `deserialize`, and what `numpy` and `torch` save with. Tensors are handed
over in name order; the library groups them by dtype as safetensors does, so the bytes are the
ones safetensors writes."""

import builtins
import ctypes
import operator
import os
from collections.abc import Mapping

from .._native import open_bytes, write_bytes, write_file
from ._common import DTYPE_OF_CODE, SafetensorError, code_of, dtype_of_spec, safetensor_errors


class TensorSpec:
    """One tensor for `serialize`: its dtype (a numpy or torch name, `"float32"`...; `dtype`
    gives safetensors' code, `"F32"`), its shape (a `float4_e2m1fn_x2` tensor's as torch gives
    it: `shape` counts its elements, twice torch's last dimension), and the address and length
    of its contiguous bytes, which must stay alive until they are written."""

    __slots__ = ("_dtype", "_shape", "_data_ptr", "_data_len")

    def __init__(self, *, dtype: str, shape, data_ptr: int, data_len: int):
        self._dtype = dtype_of_spec(dtype)
        self._shape = [operator.index(d) for d in shape]
        if any(d < 0 for d in self._shape):
            raise SafetensorError(f"a shape has no negative dimension: {self._shape}")
        if self._dtype == "F4" and self._shape:
            self._shape[-1] *= 2
        self._data_ptr, self._data_len = operator.index(data_ptr), operator.index(data_len)

    @property
    def dtype(self) -> str:
        """safetensors' code of the dtype (`F32`, `BF16`...)."""
        return self._dtype

    @property
    def shape(self) -> list:
        """The shape in elements, as the file records it."""
        return list(self._shape)

    @property
    def data_ptr(self) -> int:
        """The address of the tensor's contiguous bytes."""
        return self._data_ptr

    @property
    def data_len(self) -> int:
        """How many bytes there are at `data_ptr`."""
        return self._data_len

    def bytes(self) -> builtins.bytes:
        """A copy of the bytes at `data_ptr`."""
        return ctypes.string_at(self._data_ptr, self._data_len) if self._data_len else b""

    def __repr__(self) -> str:
        return f"TensorSpec(dtype={self._dtype!r}, shape={self._shape}, data_ptr={self._data_ptr}, data_len={self._data_len})"


def serialize(tensor_dict, metadata=None) -> builtins.bytes:
    """A safetensors file of the tensors `{name: TensorSpec}` and text `metadata`, as bytes."""
    return write(_from_specs(tensor_dict), metadata)


def serialize_file(tensor_dict, filename, metadata=None) -> None:
    """A safetensors file of the tensors `{name: TensorSpec}` and text `metadata`, written to
    `filename` atomically."""
    write(_from_specs(tensor_dict), metadata, filename)


def deserialize(bytes) -> list:  # noqa: A002 (safetensors' name)
    """The tensors of safetensors `bytes`: `[(name, {"shape", "dtype" (its code), "data" (a
    bytearray)})]`, in the order of their data."""
    with safetensor_errors():
        native = open_bytes(builtins.bytes(bytes), "safetensors")
        from .. import Tensor

        out = []
        for name in native.names():
            t = Tensor(native, name)
            out.append((name, {"shape": list(t.shape), "dtype": code_of(t.dtype), "data": bytearray(t.tobytes())}))
        return out


def _from_specs(tensor_dict) -> list:
    if not isinstance(tensor_dict, Mapping):
        raise TypeError(f"tensor_dict maps names to TensorSpec, not {type(tensor_dict).__name__}")
    items = []
    for name, spec in tensor_dict.items():
        if not isinstance(spec, TensorSpec):
            raise TypeError(f"{name!r}: a TensorSpec, not {type(spec).__name__}")
        items.append((name, spec.dtype, spec.shape, spec.bytes))
    return items


def write(items: list, metadata, filename=None):
    """Write `items` — (name, safetensors code, shape in elements, a callable returning the
    tensor's little-endian bytes, called when the tensor is written) — and `metadata` as a
    safetensors file: to `filename` atomically, or returned as bytes."""
    for name, *_ in items:
        if not isinstance(name, str):
            raise TypeError(f"tensor names are text, not {type(name).__name__}: {name!r}")
    tensors = [(name, DTYPE_OF_CODE[code], shape, data) for name, code, shape, data in sorted(items, key=_name)]
    text = _metadata(metadata)
    with safetensor_errors():
        if filename is None:
            return write_bytes(tensors, "safetensors", text)
        write_file(os.fspath(filename), tensors, format="safetensors", metadata=text)
    return None


def _name(item) -> str:
    return item[0]


def _metadata(metadata) -> "list | None":
    """Metadata as safetensors takes it: text to text (anything else is a TypeError, not
    turned into text)."""
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping):
        raise TypeError(f"metadata maps text to text, not {type(metadata).__name__}")
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"metadata maps text to text: {key!r}: {value!r} is not")
    return list(metadata.items())

