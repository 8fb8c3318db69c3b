"""What every fixture generator shares: deterministic data and the expected records."""

import hashlib
import json
import math
from pathlib import Path

import ml_dtypes
import numpy as np
from safetensors import safe_open

# The names records use for safetensors' dtypes (lowercase, as torch spells them).
SAFETENSORS_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U64": "uint64",
    "U32": "uint32",
    "U16": "uint16",
    "U8": "uint8",
    "BOOL": "bool",
    "F8_E4M3": "float8_e4m3fn",
    "F8_E5M2": "float8_e5m2",
    "C64": "complex64",
}

# Names a careful reader must keep intact: dots, slashes, non-ASCII, spaces, quotes.
AWKWARD_NAMES = [
    "model.layers.0.self_attn.q_proj.weight",
    "encoder/block_1/conv2d/kernel:0",
    "decoder//double/slash",
    "/leading/slash",
    "trailing.",
    "ümlaut.gewicht",
    "重み/層.0",
    "вес.смещение",
    "crab🦀.emoji",
    "name with spaces",
    "quote\"and'apostrophe",
    "back\\slash",
]

# Small shapes of rank 1 to 4, cycled through so that fixtures vary them.
SHAPES = [(7,), (3, 5), (2, 3, 4), (1, 2, 1, 3)]

# Zero-element tensors between non-empty ones: (name, dtype, shape).
ZERO_SIZE = [
    ("before", "float32", (3,)),
    ("empty_1d", "float32", (0,)),
    ("middle", "int16", (5,)),
    ("empty_3d", "float64", (2, 0, 3)),
    ("after", "int32", (2, 2)),
]


def numpy_dtype(name: str) -> np.dtype:
    """numpy's dtype for a record dtype name; bfloat16 comes from ml_dtypes."""
    return np.dtype(ml_dtypes.bfloat16 if name == "bfloat16" else name)


def lcg_u32(name: str, count: int) -> np.ndarray:
    """`count` draws of the generator `scripts/zt-reference` uses: a 64-bit LCG (Knuth's MMIX
    constants) seeded with the FNV-1a hash of `name`, of which the high 32 bits are kept."""
    mask = (1 << 64) - 1
    state = 0xCBF29CE484222325
    for byte in name.encode():
        state = ((state ^ byte) * 0x100000001B3) & mask
    out = np.empty(count, dtype=np.uint64)
    for i in range(count):
        state = (state * 6364136223846793005 + 1442695040888963407) & mask
        out[i] = state >> 32
    return out


def sample(name: str, dtype: np.dtype, shape: tuple) -> np.ndarray:
    """A deterministic array seeded by `name`: floats uniform in [-100, 100) (so finite in
    every float dtype), integers with every bit random, bools 0 or 1."""
    count = math.prod(shape)
    if dtype.kind == "b":
        return (lcg_u32(name, count) >> 31).astype(bool).reshape(shape)
    if dtype.kind in "iu":
        draws = lcg_u32(name, 2 * count)
        wide = (draws[0::2] << np.uint64(32)) | draws[1::2]
        # Truncating to the width keeps the low bytes, as the Rust generator does.
        return wide.astype(f"u{dtype.itemsize}").view(dtype).reshape(shape)
    if dtype.kind == "c":
        parts = uniform(lcg_u32(name, 2 * count))
        return (parts[:count] + 1j * parts[count:]).astype(dtype).reshape(shape)
    # numpy's floats and ml_dtypes' (kind "V").
    return uniform(lcg_u32(name, count)).astype(dtype).reshape(shape)


def uniform(draws: np.ndarray) -> np.ndarray:
    return draws / float(0xFFFFFFFF) * 200.0 - 100.0


def row_major_le(a: np.ndarray) -> bytes:
    """The array's elements in C order, little-endian: what tensorfile returns."""
    return np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"), copy=False)).tobytes(order="C")


def dense_record(name: str, dtype: str, shape, data: bytes) -> dict:
    return {
        "name": name,
        "dtype": dtype,
        "shape": [int(d) for d in shape],
        "layout": "dense",
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def read_safetensors(path: Path, framework: str, to_bytes) -> tuple[list, dict | None]:
    """The records of a safetensors file's tensors, in data order, and its `__metadata__`, as
    `safe_open` reads them; `to_bytes` gives a tensor's bytes in `framework`."""
    with safe_open(str(path), framework=framework) as f:
        records = []
        for name in f.offset_keys():
            info = f.get_slice(name)
            dtype = SAFETENSORS_DTYPES[info.get_dtype()]
            records.append(dense_record(name, dtype, info.get_shape(), to_bytes(f.get_tensor(name))))
        return records, f.metadata()


def write_record(path: Path, producer: str, tensors: list, metadata: dict | None = None) -> None:
    """Writes `path`.expected.json."""
    record = {"producer": producer, "file": path.name, "tensors": tensors}
    if metadata is not None:
        record["metadata"] = metadata
    path.with_name(path.name + ".expected.json").write_text(pretty_json(record) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(Path.cwd())}", flush=True)


def pretty_json(value, indent: int = 0) -> str:
    """JSON indented by two spaces, except that arrays holding no objects (shapes, indices)
    stay on one line: the layout `scripts/zt-reference` writes too."""
    pad = " " * indent
    if isinstance(value, dict) and value:
        items = [f"{pad}  {json.dumps(k, ensure_ascii=False)}: {pretty_json(v, indent + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        items = [f"{pad}  {pretty_json(v, indent + 2)}" for v in value]
        return "[\n" + ",\n".join(items) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False)


def value(v):
    """An HDF5 attribute as JSON: numbers, lists, text (bytes decoded as UTF-8)."""
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, np.ndarray):
        return [value(x) for x in v.tolist()] if v.dtype.kind not in "SO" else [value(x) for x in v.ravel().tolist()]
    if isinstance(v, list):
        return [value(x) for x in v]
    if isinstance(v, np.generic):
        return value(v.item())
    return v
