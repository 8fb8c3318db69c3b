"""tensorfile's dtype names (torch's spelling) and their numpy and torch counterparts."""

import numpy as np

from ._errors import UnsupportedError, UsageError

# numpy has these natively.
_NUMPY = {
    name: np.dtype(name)
    for name in [
        "bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64",
        "float16", "float32", "float64", "complex64", "complex128",
    ]
}
# numpy gets these from ml_dtypes (same names there).
_ML_DTYPES = [
    "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e8m0fnu", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn",
]
# Bytes per element, for raw views of dtypes numpy cannot name.
_SIZES = {
    "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1, "float4_e2m1fn_x2": 1, "complex32": 4, "qint8": 1, "quint8": 1, "qint32": 4,
    "quint4x2": 1, "quint2x4": 1, "bits16": 2,
}

# Elements narrower than a byte, packed (ONNX INT4, safetensors F4 and F6...), with their
# bits: neither numpy nor torch has a plain array of them, and no width of raw bits fits one
# element. `np.asarray(tensor)` gives the packed bytes.
_PACKED = {"int4": 4, "uint4": 4, "int2": 2, "uint2": 2, "float4_e2m1fn": 4, "float6_e2m3fn": 6, "float6_e3m2fn": 6}


def _refuse_packed(name: str) -> None:
    if name in _PACKED:
        raise UnsupportedError(
            f"{name} elements are {_PACKED[name]} bits each, packed into bytes: no numpy or torch array "
            "holds them (np.asarray(tensor) gives the packed bytes)"
        )


def numpy_dtype(name: str, raw: bool = False) -> np.dtype:
    """numpy's dtype for `name`; with `raw`, unsigned integers of the same width for dtypes
    numpy cannot name (the raw bits)."""
    _refuse_packed(name)
    if name in _NUMPY:
        return _NUMPY[name]
    if name in _ML_DTYPES and not raw:
        try:
            import ml_dtypes
        except ImportError:
            raise UnsupportedError(
                f"numpy has no {name}: install ml_dtypes (pip install ml_dtypes), "
                "or ask for the raw bits with raw=True"
            ) from None
        if hasattr(ml_dtypes, name):
            return np.dtype(getattr(ml_dtypes, name))
    size = _SIZES.get(name)
    if raw and size is not None:
        return np.dtype(f"uint{8 * size}")
    raise UnsupportedError(f"numpy has no {name}" + ("" if raw else "; raw=True gives its raw bits"))


def numpy_name(dtype: np.dtype) -> str:
    """tensorfile's name for a numpy dtype."""
    dtype = np.dtype(dtype)
    if dtype.kind in "biufc" and dtype.name in _NUMPY:
        return dtype.name
    if dtype.name in _ML_DTYPES:
        return dtype.name
    raise UnsupportedError(f"no tensorfile dtype for numpy's {dtype}")


def torch_dtype(name: str, raw: bool = False):
    import torch

    _refuse_packed(name)
    if raw and name in _SIZES:
        return {1: torch.uint8, 2: torch.uint16, 4: torch.uint32}[_SIZES[name]]
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype) or name.startswith("q") or name.startswith("bits"):
        raise UnsupportedError(f"torch cannot hold {name} in a plain tensor; raw=True gives its raw bits")
    return dtype


def torch_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def name_of(dtype) -> str:
    """tensorfile's name for `dtype`: a name as it is, or a torch or numpy dtype's."""
    if isinstance(dtype, str):
        return dtype
    if type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        return torch_name(dtype)
    try:
        return numpy_name(dtype)
    except TypeError:
        raise UsageError(f"{dtype!r} is no dtype: give a name such as 'bfloat16', or a torch or numpy dtype") from None
