"""The safetensors fixture written by `safetensors.numpy.save_file` (needs no torch), and its
record as `safe_open(framework="numpy")` reads it back."""

from pathlib import Path

import numpy as np
import safetensors
from safetensors.numpy import save_file

from .common import read_safetensors, sample, write_record

FILE = "numpy.safetensors"

# Every dtype safetensors.numpy can save (it has no bfloat16 or float8).
DTYPES = "float64 float32 float16 int64 int32 int16 int8 uint64 uint32 uint16 uint8 bool complex64".split()

# One key only, for reproducible bytes (see safetensors_torch.METADATA).
METADATA = {"format": "np"}


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    arrays = {d: sample(d, np.dtype(d), (2, 3)) for d in DTYPES}
    arrays["scalar"] = sample("scalar", np.dtype("float32"), ())
    arrays["zero_size"] = sample("zero_size", np.dtype("int32"), (0, 4))
    path = out / FILE
    save_file(arrays, str(path), metadata=METADATA)
    tensors, metadata = read_safetensors(path, "numpy", lambda array: array.tobytes())
    write_record(path, f"safetensors {safetensors.__version__} (numpy {np.__version__})", tensors, metadata)
