"""safetensors fixtures written by `safetensors.torch.save_file`, and their records as
`safe_open(framework="pt")` reads them back."""

from pathlib import Path

import numpy as np
import safetensors
import torch
from safetensors.torch import save, save_file

from .common import AWKWARD_NAMES, SHAPES, ZERO_SIZE, read_safetensors, sample, write_record

PRODUCER = f"safetensors {safetensors.__version__} + torch {torch.__version__}"

# Candidates, in record order; `supported` keeps those this torch and safetensors both have.
DTYPES = (
    "float64 float32 float16 bfloat16 int64 int32 int16 int8 uint64 uint32 uint16 uint8 bool "
    "float8_e4m3fn float8_e5m2 complex64"
).split()

# Dtypes numpy lacks: sampled as float32, then converted by torch.
TORCH_ONLY = {"bfloat16", "float8_e4m3fn", "float8_e5m2"}

# One key only: safetensors writes `__metadata__` in hash-map order, which changes from run to
# run, and the fixtures must come out the same every time.
METADATA = {"note": 'ünïcode ✓ and "quotes"'}


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    dtypes = [d for d in DTYPES if supported(d)]
    skipped = sorted(set(DTYPES) - set(dtypes))
    if skipped:
        print(f"note: this torch/safetensors cannot save {', '.join(skipped)}", flush=True)
    files = {
        "dtypes.safetensors": {d: tensor(d, d, SHAPES[i % len(SHAPES)]) for i, d in enumerate(dtypes)},
        "scalar.safetensors": {d: tensor(d, d, ()) for d in ("float32", "int64", "bool", "bfloat16")},
        "zero_size.safetensors": {name: tensor(name, d, shape) for name, d, shape in ZERO_SIZE},
        "names.safetensors": {n: tensor(n, "float16", (2, 2)) for n in AWKWARD_NAMES},
        "empty.safetensors": {},
    }
    for file, tensors in files.items():
        write(out / file, tensors)
    weights = {"weight": tensor("weight", "float32", (2, 3)), "bias": tensor("bias", "float32", (3,))}
    write(out / "metadata.safetensors", weights, METADATA)


def supported(dtype: str) -> bool:
    if not hasattr(torch, dtype):
        return False
    try:
        save({"probe": torch.zeros(1, dtype=getattr(torch, dtype))})
    except KeyError:  # not in safetensors' dtype tables
        return False
    return True


def tensor(name: str, dtype: str, shape: tuple) -> torch.Tensor:
    """A deterministic tensor seeded by `name`."""
    if dtype in TORCH_ONLY:
        return torch.from_numpy(sample(name, np.dtype("float32"), shape)).to(getattr(torch, dtype))
    return torch.from_numpy(sample(name, np.dtype(dtype), shape))


def write(path: Path, tensors: dict, metadata: dict | None = None) -> None:
    save_file(tensors, str(path), metadata=metadata)
    records, read_metadata = read_safetensors(path, "pt", tensor_bytes)
    write_record(path, PRODUCER, records, read_metadata)


def tensor_bytes(t: torch.Tensor) -> bytes:
    # Flattened first: a 0-d tensor cannot be viewed as another dtype's bytes.
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()
