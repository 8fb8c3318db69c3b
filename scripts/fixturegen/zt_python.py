"""zTensor fixtures written by the pip package `ztensor` 0.1.4, which writes raw little-endian
dense tensors without checksums, and records of what its reader reads back."""

from pathlib import Path

import numpy as np
import ztensor

from .common import AWKWARD_NAMES, SHAPES, ZERO_SIZE, dense_record, numpy_dtype, sample, write_record

PRODUCER = "ztensor 0.1.4 (pip)"

DTYPES = "float64 float32 float16 bfloat16 int64 int32 int16 int8 uint64 uint32 uint16 uint8 bool".split()


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for file, arrays in fixtures().items():
        write(out / file, arrays)


def fixtures() -> dict:
    """File name -> [(tensor name, array)] in writing order."""
    return {
        "dtypes.zt": [(d, sample(d, numpy_dtype(d), SHAPES[i % len(SHAPES)])) for i, d in enumerate(DTYPES)],
        # The writer stores a 0-d array with shape [1]; the record says what the reader reports.
        "scalar.zt": [(d, sample(d, numpy_dtype(d), ())) for d in ("float32", "int64", "bool", "bfloat16")],
        "zero_size.zt": [(name, sample(name, numpy_dtype(d), shape)) for name, d, shape in ZERO_SIZE],
        "empty.zt": [],
        "multi.zt": multi(),
        "names.zt": [(n, sample(n, np.dtype("float16"), (2, 2))) for n in AWKWARD_NAMES],
    }


def multi() -> list:
    """A dozen tensors of a small model's look, two of them given as non-contiguous arrays
    (the writer makes them contiguous)."""
    arrays = []
    for layer in range(4):
        prefix = f"model.layers.{layer}"
        arrays.append((f"{prefix}.attn.weight", sample(f"{prefix}.w", np.dtype("float32"), (4, 8))))
        arrays.append((f"{prefix}.attn.bias", sample(f"{prefix}.b", numpy_dtype("bfloat16"), (8,))))
    arrays.append(("lm_head.weight.transposed", sample("lm_head", np.dtype("float16"), (6, 5)).T))
    arrays.append(("strided.every_other", sample("strided", np.dtype("int32"), (10,))[::2]))
    arrays.append(("position_ids", np.arange(16, dtype=np.int64)))
    arrays.append(("mask", sample("mask", np.dtype(bool), (4, 4))))
    return arrays


def write(path: Path, arrays: list) -> None:
    with ztensor.Writer(str(path)) as writer:
        for name, array in arrays:
            writer.add_tensor(name, array)
    write_record(path, PRODUCER, read_back(path))


def read_back(path: Path) -> list:
    reader = ztensor.Reader(str(path))
    records = []
    for meta in reader.list_tensors():
        assert meta.layout == "dense", f"{path}: {meta.name} is {meta.layout}"
        data = reader.read_tensor(meta.name).tobytes()
        records.append(dense_record(meta.name, meta.dtype_str, meta.shape, data))
    return records
