"""What the drop-in's modules share: its exception, safetensors' dtype codes, the checks of
`framework`, `device` and `backend`, and a tensor of an opened file as numpy or torch gives it."""

import contextlib
import json

import numpy as np

from .. import Error, FileError, Tensor

# safetensors' dtype codes by the names `TensorSpec` takes (numpy's and torch's spelling). A
# float4 tensor of torch (`float4_e2m1fn_x2`) holds two elements per byte: the file's shape
# counts elements, so its last dimension is twice torch's.
CODES = {
    "bool": "BOOL", "int8": "I8", "uint8": "U8", "int16": "I16", "uint16": "U16", "int32": "I32", "uint32": "U32",
    "int64": "I64", "uint64": "U64", "float16": "F16", "float32": "F32", "float64": "F64", "bfloat16": "BF16",
    "float8_e4m3fn": "F8_E4M3", "float8_e4m3fnuz": "F8_E4M3FNUZ", "float8_e5m2": "F8_E5M2",
    "float8_e5m2fnuz": "F8_E5M2FNUZ", "float8_e8m0fnu": "F8_E8M0", "float4_e2m1fn_x2": "F4", "complex64": "C64",
}
PACKED_TORCH = "float4_e2m1fn_x2"
# tensorfile's names of the dtypes whose elements are not whole bytes, by code.
PACKED = {"F4": "float4_e2m1fn", "F6_E2M3": "float6_e2m3fn", "F6_E3M2": "float6_e3m2fn"}
# tensorfile's dtype name of each code.
DTYPE_OF_CODE = {**{code: name for name, code in CODES.items()}, **PACKED}
# The code of each of tensorfile's dtype names (those safetensors has).
CODE_OF_DTYPE = {name: code for code, name in DTYPE_OF_CODE.items()}

FRAMEWORKS = {"pt": "torch", "torch": "torch", "pytorch": "torch", "np": "numpy", "numpy": "numpy"}
BACKENDS = ("mmap", "pread")


class SafetensorError(Error):
    """What safetensors raises as `SafetensorError`: a file or a request it refuses. Also a
    `tensorfile.Error`, with its `rule`, `path` and `tensor` when the library gave them."""


SafetensorError.__module__ = "tensorfile.safetensors"


@contextlib.contextmanager
def safetensor_errors():
    """The library's refusals raised as `SafetensorError` (with the library's message and
    attributes); errors of the operating system stay `OSError`s."""
    try:
        yield
    except (SafetensorError, FileError):
        raise
    except Error as e:
        raise as_safetensor_error(e) from e


def as_safetensor_error(e: Error) -> SafetensorError:
    error = SafetensorError(str(e))
    for attribute in ("rule", "path", "tensor", "hint", "diagnosis"):
        setattr(error, attribute, getattr(e, attribute, None))
    return error


def code_of(dtype: str) -> str:
    """safetensors' code of one of tensorfile's dtype names (the name itself for a dtype
    safetensors lacks, in a file of another format)."""
    return CODE_OF_DTYPE.get(dtype, dtype)


def dtype_of_spec(name: str) -> str:
    """The safetensors code of a name `TensorSpec` takes, or `SafetensorError`."""
    if name not in CODES:
        raise SafetensorError(f"Unknown dtype {name!r}. Supported dtypes: {', '.join(CODES)}")
    return CODES[name]


def framework_of(framework) -> str:
    """"numpy" or "torch", for the names safetensors takes for them."""
    if framework not in FRAMEWORKS:
        raise SafetensorError(f"framework {framework} is invalid: tensorfile.safetensors gives 'pt' and 'np' tensors")
    return FRAMEWORKS[framework]


def check_backend(backend) -> None:
    """safetensors' `backend=`: "mmap" or "pread". Both read the same bytes: tensors are read
    from the file's map either way."""
    if backend not in BACKENDS:
        raise SafetensorError(f'backend {backend!r} is invalid (expected one of: "mmap", "pread")')


def device_of(device, framework: str):
    """The device tensors go to: numpy arrays live on the CPU; an integer is an accelerator's
    index, as torch takes it."""
    if device is None:
        device = "cpu"
    if framework == "numpy" and device != "cpu":
        raise SafetensorError(f"Device {device} is not supported for framework numpy")
    return device


def metadata_of(native) -> "dict | None":
    """A file's metadata as safetensors gives it: text to text, `None` when there is none."""
    metadata = native.metadata()["metadata"]
    if not metadata:
        return None
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in metadata.items()}


def as_framework(tensor: Tensor, framework: str, device):
    """The whole tensor as `framework` gives it (memory of its own, writable), on `device`."""
    with safetensor_errors():
        if framework == "numpy":
            if tensor.dtype in PACKED.values():
                raise SafetensorError(f"{tensor.name}: numpy has no {tensor.dtype}: open the file with framework='pt'")
            return tensor.numpy()
        if tensor.dtype == PACKED["F4"]:
            return to_device(packed_torch(np_bytes(tensor), tensor.shape, tensor.name), device)
        return tensor.torch(device=device)


def np_bytes(tensor) -> np.ndarray:
    """The bytes of a tensor (a native one: rows too) as a flat uint8 array of its own."""
    tensor.load()
    return np.asarray(tensor).reshape(-1).view(np.uint8)


def packed_torch(data: np.ndarray, shape: list, name: str):
    """torch's float4 tensor (`float4_e2m1fn_x2`, two elements a byte) of float4 bytes `data`
    whose elements have `shape`."""
    import torch

    if not shape or shape[-1] % 2:
        raise SafetensorError(f"{name}: torch holds float4 elements in pairs; a last dimension of {shape[-1:]} cannot")
    packed = [*shape[:-1], shape[-1] // 2]
    return torch.from_numpy(np.ascontiguousarray(data)).view(getattr(torch, PACKED_TORCH)).reshape(packed)


def to_device(tensor, device):
    """A CPU torch tensor on `device`, as tensorfile copies there."""
    import torch

    if torch.device(device).type == "cpu":
        return tensor
    from .._staging import to_device as copy_to

    return copy_to([tensor], device)[0]

