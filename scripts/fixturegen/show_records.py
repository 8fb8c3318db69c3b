"""Records of how numpy prints tensors (`str(array)`, numpy's default print options), for
`tensorfile show`: held tensors of existing fixtures of every dtype, sliced several ways, and
arrays of tricky values written here (tests/fixtures/show/).

Dtypes numpy lacks (bfloat16, float8, float4) are printed as numpy prints the same values converted
to float32, the rule `tensorfile show` documents. Each record: file (relative to
tests/fixtures), tensor name, slice (numpy basic slicing as `--slice` takes it, or null) and
the text numpy prints.
"""

import json
import struct
from pathlib import Path

import ml_dtypes
import numpy as np
from safetensors.numpy import save_file

from .common import pretty_json

# safetensors dtype names to numpy dtypes (ml_dtypes for those numpy lacks).
ST_DTYPES = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": ml_dtypes.bfloat16,
    "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
    "I64": np.int64, "I32": np.int32, "I16": np.int16, "I8": np.int8,
    "U64": np.uint64, "U32": np.uint32, "U16": np.uint16, "U8": np.uint8,
    "BOOL": np.bool_, "C64": np.complex64,
    "F8_E4M3FNUZ": ml_dtypes.float8_e4m3fnuz, "F8_E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
    "F8_E8M0": ml_dtypes.float8_e8m0fnu,
}

# Types numpy lacks print as the numpy type holding the same values.
PRINTED_AS = {
    np.dtype(t): np.float32
    for t in [
        ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.float8_e4m3fnuz,
        ml_dtypes.float8_e5m2fnuz, ml_dtypes.float8_e8m0fnu, ml_dtypes.float4_e2m1fn,
    ]
}

# The narrow floats of torch (saved by safetensors with torch) each with every bit pattern.
NARROW = ["float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2"]


def load_safetensors(path: Path) -> dict:
    """Every tensor of a safetensors file, read from its header (no framework needed)."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + size])
    data = raw[8 + size:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        if info["dtype"] == "F4":
            # Two fp4 values a byte, the low nibble first.
            packed = np.frombuffer(data[start:end], dtype=np.uint8)
            nibbles = np.stack([packed & 15, packed >> 4], axis=-1).reshape(-1).astype(np.uint8)
            out[name] = nibbles.view(ml_dtypes.float4_e2m1fn).reshape(info["shape"])
            continue
        dtype = np.dtype(ST_DTYPES[info["dtype"]]).newbyteorder("<")
        out[name] = np.frombuffer(data[start:end], dtype=dtype).reshape(info["shape"])
    return out


def load(path: Path) -> dict:
    if path.suffix == ".npy":
        return {path.stem: np.load(path)}
    return load_safetensors(path)


def parse_slice(text):
    """`0:4,:8` as a tuple of ints and slices."""
    if text is None:
        return ()
    items = []
    for item in text.split(","):
        parts = item.split(":")
        if len(parts) == 1:
            items.append(int(parts[0]))
        else:
            items.append(slice(*(int(p) if p.strip() else None for p in parts)))
    return tuple(items)


def printed(array: np.ndarray, slice_text) -> str:
    target = PRINTED_AS.get(array.dtype)
    if target is not None:
        array = array.astype(target)
    return str(array[parse_slice(slice_text)])


def lcg(seed: int, count: int) -> np.ndarray:
    """Deterministic 32-bit numbers (numpy's generator is not needed to repeat them)."""
    out = np.empty(count, dtype=np.uint32)
    state = seed
    for i in range(count):
        state = (state * 1103515245 + 12345) % (1 << 31)
        out[i] = (state >> 8) ^ (state << 13 & 0xFFFFFFFF)
    return out


def tricky_arrays() -> dict:
    """Values that exercise numpy's float formatting: mixed magnitudes, rounding, specials."""
    f64 = {
        "mixed_small": np.array([1e-5, 1.0, 0.5]),
        "mixed_large": np.array([1e8, 1.0, -2.5]),
        "point_three": np.array([0.1 + 0.2, 1 / 3, 2 / 3, -0.0]),
        "ratio": np.array([0.001, 1.5, 2.0]),
        "specials": np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.25]),
        "only_specials": np.array([np.nan, -np.inf]),
        "ties": np.array([2.0 ** -9, 2.0 ** -10, 1.0, 0.125]),
        "huge": np.array([1e300, -1e-300, 5e-324, 1.7976931348623157e308]),
        "negatives": np.array([-1.5, -22.25, -333.125, 0.5]),
        "wide": np.linspace(-3, 3, 7 * 4 * 13).reshape(7, 4, 13) ** 3,
    }
    arrays = {f"f64.{k}": v.astype(np.float64) for k, v in f64.items()}
    arrays["f32.mixed_small"] = np.array([1e-5, 1.0, 0.1], dtype=np.float32)
    arrays["f32.thousandth"] = np.array([1e-4, 0.5, 3.0], dtype=np.float32)
    arrays["f32.million"] = np.array([1e6, 1.5, 3.0], dtype=np.float32)
    arrays["f32.below_million"] = np.array([999999.0, 1.5, 3.25], dtype=np.float32)
    arrays["f16.thousand"] = np.array([1000.0, 1.5, 0.1], dtype=np.float16)
    arrays["f16.tenth"] = np.array([0.1, 0.2, 0.3, 1e-5], dtype=np.float16)
    arrays["bf16.values"] = np.array([0.1, 1e-5, 3.140625, -2.0, 1e6], dtype=np.float32).astype(ml_dtypes.bfloat16)
    # Random bits: every exponent, printed in scientific notation.
    bits = lcg(7, 900)
    f32 = bits.view(np.float32).copy()
    f32[~np.isfinite(f32)] = 1.0
    arrays["f32.random_bits"] = f32
    f64_bits = (lcg(11, 900).astype(np.uint64) << np.uint64(32)) | lcg(13, 900).astype(np.uint64)
    f64 = f64_bits.view(np.float64).copy()
    f64[~np.isfinite(f64)] = 1.0
    arrays["f64.random_bits"] = f64
    # Positional notation with up to 8 digits: values between 1e-4 and 1e3 (ratio <= 1e3).
    u = lcg(17, 900).astype(np.float64) / 2.0 ** 32
    arrays["f64.positional"] = (0.1 + u * 99.0) * np.where(lcg(19, 900) % 2 == 0, 1.0, -1.0)
    arrays["f32.positional"] = (0.5 + u * 400.0).astype(np.float32)
    arrays["f16.every"] = np.arange(1 << 16, dtype=np.uint16).view(np.float16).copy()
    # Powers of two: exact decimals ending in 5, where two shortest digits are as close.
    arrays["f32.powers"] = (2.0 ** np.arange(-40, 40)).astype(np.float32)
    arrays["f64.powers"] = 2.0 ** np.arange(-80, 80, 2)
    arrays["f16.powers"] = (2.0 ** np.arange(-24, 16)).astype(np.float16)
    arrays["f32.large"] = (np.arange(40 * 50, dtype=np.float32) / 7).reshape(40, 50)
    arrays["i64.big"] = np.array([2 ** 63 - 1, -2 ** 63, 2 ** 53 + 1, 0, -5], dtype=np.int64)
    arrays["u64.big"] = np.array([2 ** 64 - 1, 2 ** 53 + 1, 7], dtype=np.uint64)
    arrays["i32.wide"] = (np.arange(3 * 4 * 30, dtype=np.int32) * 1001 - 50000).reshape(3, 4, 30)
    arrays["bool.large"] = (np.arange(1200) % 3 == 0).reshape(2, 600)
    arrays["c64.values"] = np.array([1 + 2j, -0.5 - 1e-5j, 3.25 + 0j], dtype=np.complex64)
    arrays["c64.scalar"] = np.array(1.5 - 2j, dtype=np.complex64)
    arrays["f64.scalar_small"] = np.array(1.5e-7)
    arrays["f32.empty"] = np.zeros((3, 0, 2), dtype=np.float32)
    arrays["f64.deep"] = np.arange(2 * 2 * 2 * 3, dtype=np.float64).reshape(2, 2, 2, 3) / 4
    return arrays


# (file under tests/fixtures, tensor, slice) printed as they are.
HELD = [
    ("numpy/le_complex128.npy", None), ("numpy/le_complex64.npy", None), ("numpy/le_bool.npy", None),
    ("numpy/le_float16.npy", None), ("numpy/le_float32.npy", None), ("numpy/le_float64.npy", None),
    ("numpy/le_int8.npy", None), ("numpy/le_uint64.npy", None), ("numpy/le_int64.npy", None),
    ("numpy/scalar.npy", None), ("numpy/empty.npy", None), ("numpy/fortran_f8.npy", None),
    ("numpy/fortran_c8.npy", None), ("numpy/be_float64.npy", None), ("numpy/be_int32.npy", None),
    ("safetensors/dtypes.safetensors", None), ("safetensors/scalar.safetensors", None),
    ("safetensors/zero_size.safetensors", None), ("safetensors/numpy.safetensors", None),
]

# Slices tried on every held tensor of rank >= 1 (those that do not apply are skipped).
SLICES = ["0", "-1", "1:", "::-1", "::2", "0,1:3", ":,-1", "-2:,::-2"]

# Slices of the tricky arrays (name, slice).
TRICKY_SLICES = [
    ("f16.every", "::67"), ("f16.every", "0:700"), ("f16.every", "15000:15900"),
    ("f16.every", "31000:31744"), ("f16.every", "::64"), ("f16.every", None),
    ("f32.powers", "30:50"), ("f32.powers", "35:45"), ("f64.powers", "30:50"), ("f16.powers", "20:"),
    ("f32.large", "0:4,:8"), ("f32.large", "-3:"), ("f32.large", "5"), ("f32.large", "::-7,::9"),
    ("f64.wide", "1:3"), ("f64.wide", ":,2"), ("f64.wide", "0,0,0"), ("i32.wide", "1"),
    ("bool.large", "1,::7"), ("f64.deep", ":,1"),
]


def narrow_file(path: Path) -> None:
    """Every bit pattern of torch's narrow floats, saved by safetensors from torch; left as it
    is when torch is not installed (the light pass)."""
    try:
        import torch
        from safetensors.torch import save_file as save_torch
    except ImportError:
        return
    patterns = torch.arange(256, dtype=torch.uint8)
    tensors = {name: patterns.clone().view(getattr(torch, name)) for name in NARROW}
    tensors["float8_e8m0fnu.square"] = patterns.clone().view(torch.float8_e8m0fnu).reshape(16, 16)
    save_torch(tensors, str(path), metadata={"format": "pt"})


def packed_ints(out: Path) -> None:
    """Packed 4- and 2-bit integers in an ONNX file made by onnx's helper, and their records as
    numpy prints the values in int8 / uint8 (the types holding them); both left as they are
    when onnx is not installed (the light pass)."""
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return
    kinds = {"int4": (TensorProto.INT4, -8, 16), "uint4": (TensorProto.UINT4, 0, 16),
             "int2": (TensorProto.INT2, -2, 4), "uint2": (TensorProto.UINT2, 0, 4)}
    tensors = []
    for kind, (proto, low, span) in kinds.items():
        # Whole bytes in all (tensorfile does not hold ONNX's padded last byte); the second
        # shape's rows do not start on a byte.
        for shape in [(4, 8), (2, 5) if span == 16 else (4, 3), (40, 50), (8,)]:
            count = int(np.prod(shape))
            values = [low + int(v) % span for v in lcg(len(tensors) + 31, count)]
            tensors.append(helper.make_tensor(f"{kind}.{'x'.join(map(str, shape))}", proto, list(shape), values))
    graph = helper.make_graph([], "packed", [], [], initializer=tensors)
    onnx.save(helper.make_model(graph), str(out / "packed.onnx"))
    records = []
    for t in tensors:
        array = numpy_helper.to_array(t)
        array = array.astype(np.int8 if array.dtype.name.startswith("int") else np.uint8)
        for s in [None, "1", "::-2", "1:3,2:", "-1,-1"]:
            try:
                array[parse_slice(s)]
            except IndexError:
                continue
            records.append({"file": "show/packed.onnx", "name": t.name, "slice": s, "text": printed(array, s)})
    producer = f"numpy {np.__version__}, onnx {onnx.__version__}"
    (out / "packed.records.json").write_text(
        pretty_json({"producer": producer, "records": records}) + "\n", encoding="utf-8"
    )


def select_indices(array: np.ndarray, count: int) -> list:
    n = array.shape[0]
    return [int(i) for i in lcg(23, count) % n]


def generate(fixtures: Path) -> None:
    out = fixtures / "show"
    out.mkdir(parents=True, exist_ok=True)
    arrays = tricky_arrays()
    complex128 = np.array([[1 + 2j, np.nan + 1j], [-np.inf - 0.5j, 1e-9 + 1e9j]])
    np.save(out / "complex128.npy", complex128)
    save_file(arrays, str(out / "values.safetensors"), metadata={"format": "np"})

    records = []

    def record(file: str, name: str, array: np.ndarray, slice_text) -> None:
        records.append({"file": file, "name": name, "slice": slice_text, "text": printed(array, slice_text)})

    for file, _ in HELD + [("show/complex128.npy", None)]:
        for name, array in load(fixtures / file).items():
            record(file, name, array, None)
            for s in SLICES:
                try:
                    array[parse_slice(s)]
                except IndexError:
                    continue
                record(file, name, array, s)
    narrow_file(out / "narrow.safetensors")
    packed_ints(out)
    for name, array in sorted(load(out / "narrow.safetensors").items()):
        for s in [None, "120:136", "::-3", "7", "-1"]:
            record("show/narrow.safetensors", name, array, s)
    values = load(out / "values.safetensors")
    for name in sorted(values):
        if name != "f16.every":
            record("show/values.safetensors", name, values[name], None)
    for name, s in TRICKY_SLICES:
        record("show/values.safetensors", name, values[name], s)
    # Single elements print as numpy's scalars (shortest digits, no precision limit).
    for name in ["f16.every", "f32.random_bits", "f64.random_bits", "f64.positional", "bf16.values",
                 "f32.powers", "f64.powers", "f16.powers"]:
        for i in select_indices(values[name], 60 if name in ("f16.every", "f32.powers", "f64.powers") else 25):
            record("show/values.safetensors", name, values[name], str(i))
    for i in [0, 1, 2, 3, 0x7C00, 0xFC00, 0x8000, 0x3C00, 0x7BFF, 0x0400, 0x03FF]:
        record("show/values.safetensors", "f16.every", values["f16.every"], str(i))
    (out / "records.json").write_text(
        pretty_json({"producer": f"numpy {np.__version__}", "records": records}) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    generate(Path(__file__).resolve().parents[2] / "tests" / "fixtures")
