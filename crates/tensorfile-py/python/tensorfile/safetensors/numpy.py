"""safetensors.numpy on tensorfile: `save`, `save_file`, `load`, `load_file` of numpy arrays.

An array is saved as its values in row-major order whatever its memory layout (a transposed or
strided view included), little-endian whatever its byte order."""

import os
from typing import Dict, Optional, Union

import numpy as np

from .._native import open_bytes
from ._common import SafetensorError, as_framework, dtype_of_spec, safetensor_errors
from ._open import safe_open
from ._write import write

__all__ = ["load", "load_file", "save", "save_file"]


def save(tensor_dict: Dict[str, np.ndarray], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The arrays `tensor_dict` and text `metadata` as the bytes of a safetensors file."""
    return write(_items(tensor_dict), metadata)


def save_file(
    tensor_dict: Dict[str, np.ndarray], filename: Union[str, os.PathLike], metadata: Optional[Dict[str, str]] = None
) -> None:
    """The arrays `tensor_dict` and text `metadata` written to `filename` as a safetensors
    file, atomically."""
    write(_items(tensor_dict), metadata, filename)


def load(data: bytes) -> Dict[str, np.ndarray]:
    """The arrays of the safetensors file `data` (bytes), by name."""
    with safetensor_errors():
        native = open_bytes(bytes(data), "safetensors")
        from .. import Tensor

        return {name: as_framework(Tensor(native, name), "numpy", "cpu") for name in native.names()}


def load_file(filename: Union[str, os.PathLike], *, backend: str = "mmap") -> Dict[str, np.ndarray]:
    """The arrays of the file `filename`, by name."""
    with safe_open(filename, framework="np", backend=backend) as f:
        return f.get_tensors()


def _items(tensor_dict) -> list:
    """(name, safetensors code, shape, a callable giving the array's bytes) of each array."""
    if not isinstance(tensor_dict, dict):
        raise SafetensorError(f"a dict of numpy arrays is saved, not {type(tensor_dict).__name__}")
    items = []
    for name, value in tensor_dict.items():
        array = np.asarray(value)
        code = dtype_of_spec(array.dtype.name)
        if array.dtype.byteorder == ">" or (array.dtype.byteorder == "=" and not np.little_endian):
            array = array.astype(array.dtype.newbyteorder("<"))
        # tobytes is the values in row-major order whatever the array's layout.
        items.append((name, code, list(array.shape), array.tobytes))
    return items
