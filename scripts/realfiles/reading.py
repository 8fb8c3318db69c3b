"""What a real reader gives for one entry of a file: a numeric array to compare, raw bytes (for
elements numpy lacks), or the reason it is not a tensor. The reasons are the only refusals
`check.py` accepts from tensorfile (besides a filter it does not decode): what a file truly
holds that a tensor cannot represent."""

from dataclasses import dataclass

import numpy as np

# The allow-list: why the real reader's value is not a tensor.
NOT_TENSOR_REASONS = (
    "string",
    "compound",
    "object array",
    "variable-length",
    "reference",
    "opaque",
    "null dataspace",
    # x87 80-bit extended precision (NumPy's longdouble, float128 / complex256; HDF5's
    # H5T_NATIVE_LDOUBLE): no tensor dtype holds its 64-bit mantissa, and converting it to
    # float64 would be a different tensor, so tensorfile refuses it by name.
    "long double",
    "the real reader cannot read it",
)


@dataclass
class NotTensor:
    """An entry the real reader gives as something other than a numeric array."""

    reason: str  # one of NOT_TENSOR_REASONS
    detail: str = ""

    def __post_init__(self) -> None:
        assert self.reason in NOT_TENSOR_REASONS, self.reason


@dataclass
class Raw:
    """Elements numpy has no dtype for (GGML blocks): compared as bytes, with their type name."""

    dtype: str
    data: bytes


@dataclass
class Reading:
    """A file as its real reader sees it: its format and each entry by the name tensorfile
    gives it. `claimed` is False for formats tensorfile does not say it reads (MATLAB v5,
    netCDF-3, bare ONNX TensorProto files): refusing those is counted apart, not as a gap."""

    format: str
    entries: dict  # name -> np.ndarray | Raw | NotTensor
    claimed: bool = True


def numeric(array) -> "np.ndarray | NotTensor":
    """`array` if its elements are numbers, else the reason it is not a tensor."""
    array = np.asarray(array)
    kind = array.dtype.kind
    if array.dtype.names:
        return NotTensor("compound", str(array.dtype))
    if kind in "SU":
        return NotTensor("string", str(array.dtype))
    if kind == "O":
        return NotTensor("object array")
    if kind == "V":
        return NotTensor("opaque", str(array.dtype))
    if (kind == "f" and array.dtype.itemsize > 8) or (kind == "c" and array.dtype.itemsize > 16):
        return NotTensor("long double", str(array.dtype))
    return array
