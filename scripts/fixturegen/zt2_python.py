"""zTensor 2 fixtures written by the pip package `ztensor` 2.1.2 (its Writer, add_object,
append, and `ztensor.convert` of a GGUF and a safetensors file), with records of what its own
reader reads back.

Runs in the zTensor 2 environment (`tfvenv.ZT2_VENV`, which also has numpy, ml_dtypes and
safetensors): `python -m fixturegen.zt2_python OUT GGUF_PYTHON`, where GGUF_PYTHON is the
Python of an environment with gguf-py, which makes the GGUF file to convert
(`fixturegen.zt2_gguf`).
"""

import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

import ml_dtypes
import numpy as np
import ztensor
from safetensors.numpy import save_file

from .common import pretty_json, sample

PRODUCER = "ztensor 2.1.2 (pip)"
# Blobs at 4 KiB (the spec's floor) keep the files small; canonical files place them at 64 KiB.
ALIGN = 4096


def raw(array: np.ndarray) -> np.ndarray:
    """The array's bytes as the unsigned bytes `Writer.add` takes."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def generate(out: Path, gguf_python: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    written["canonical.zt"] = canonical(out / "canonical.zt")
    written["dtypes.zt"] = dtypes(out / "dtypes.zt")
    written["attributes.zt"] = attributes(out / "attributes.zt")
    written["sparse.zt"] = sparse(out / "sparse.zt")
    written["quant.zt"] = quant(out / "quant.zt")
    written["zstd.zt"] = encoded(out / "zstd.zt")
    written["appended.zt"] = appended(out / "appended.zt")
    written["structural.zt"] = structural(out / "structural.zt")
    with tempfile.TemporaryDirectory() as tmp:
        gguf = Path(tmp) / "model.gguf"
        subprocess.run([gguf_python, "-m", "fixturegen.zt2_gguf", str(gguf)], check=True)
        ztensor.convert(str(gguf), str(out / "gguf.zt"), align=ALIGN)
        written["gguf.zt"] = {}
        st = Path(tmp) / "model.safetensors"
        safetensors_input(st)
        ztensor.convert(str(st), str(out / "safetensors.zt"), align=ALIGN)
        written["safetensors.zt"] = {}
    for name, attrs in written.items():
        record(out / name, attrs)


def writer(path: Path, **options) -> ztensor.Writer:
    path.unlink(missing_ok=True)
    return ztensor.Writer(str(path), canonical=False, align=ALIGN, **options)


def canonical(path: Path) -> dict:
    """The writer's default: canonical form (64 KiB placement, xxh3 digests); a tied weight
    shares its blob."""
    path.unlink(missing_ok=True)
    w = ztensor.Writer(str(path))
    weight = sample("weight", np.dtype("float32"), (2, 3))
    w.add("embed.weight", raw(weight), [2, 3], "f32")
    w.add("lm_head.weight", raw(weight), [2, 3], "f32")
    w.add("norm", raw(sample("norm", np.dtype(ml_dtypes.bfloat16), (4,))), [4], "bf16")
    w.finish()
    return {}


STORAGE = ["f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8"]
NUMPY = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": ml_dtypes.bfloat16, "i64": "int64",
    "i32": "int32", "i16": "int16", "i8": "int8", "u64": "uint64", "u32": "uint32", "u16": "uint16", "u8": "uint8",
}


def dtypes(path: Path) -> dict:
    """Every storage type, every logical type, a scalar and zero-size tensors."""
    w = writer(path)
    shapes = [(7,), (3, 5), (2, 3, 4), (1, 2, 1, 3)]
    for i, d in enumerate(STORAGE):
        shape = shapes[i % len(shapes)]
        w.add(d, raw(sample(d, np.dtype(NUMPY[d]), shape)), list(shape), d)
    w.add("bool", raw(sample("bool", np.dtype(bool), (3, 3)).astype(np.uint8)), [3, 3], "u8", logical="bool")
    for logical, numpy in [
        ("f8_e4m3fn", ml_dtypes.float8_e4m3fn),
        ("f8_e5m2", ml_dtypes.float8_e5m2),
        ("f8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz),
        ("f8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz),
    ]:
        w.add(logical, raw(sample(logical, np.dtype(numpy), (2, 4))), [2, 4], "u8", logical=logical)
    exponents = (np.arange(6) * 11 + 100).astype(np.uint8)
    w.add("f8_e8m0", exponents, [6], "u8", logical="f8_e8m0")
    codes = (np.arange(8) * 3 % 16).astype(np.uint8)
    w.add("f4_e2m1", (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8), [2, 4], "u8", logical="f4_e2m1")
    w.add("complex64", raw(sample("c64", np.dtype("complex64"), (3,))), [3], "f32", logical="complex64")
    w.add("complex128", raw(sample("c128", np.dtype("complex128"), (2,))), [2], "f64", logical="complex128")
    w.add("scalar", raw(np.array(2.5, dtype=np.float32)), [], "f32")
    w.add("empty", raw(np.zeros((0, 4), dtype=np.float32)), [0, 4], "f32")
    w.add("empty_bool", np.zeros(0, dtype=np.uint8), [2, 0], "u8", logical="bool")
    w.finish()
    return {}


def attributes(path: Path) -> dict:
    """File attributes of every kind the Python writer takes (no byte strings), and object
    attributes."""
    w = writer(path)
    w.set_attributes({
        "null": None,
        "true": True,
        "false": False,
        "small": 7,
        "large": 2**64 - 1,
        "negative": -(2**63),
        "half": 1.5,
        "single": 100000.0,
        "double": 0.1,
        "infinity": float("inf"),
        "negative_zero": -0.0,
        "nan": float("nan"),
        "text": "zTensor ✓",
        "list": [1, "two", 3.0, None, [True]],
        "map": {"nested": {"deeper": [1, 2]}, "b": -1},
    })
    attrs = {"role": "embedding", "tied_to": ["lm_head"], "scale": 0.5}
    w.add_object("w", [2, 2], {"data": {"dtype": "f16", "data": raw(sample("w", np.dtype("float16"), (2, 2)))}},
                 attributes=attrs)
    w.finish()
    return {"w": attrs}


def sparse(path: Path) -> dict:
    """COO with u32 and u64 coordinates (rank 2 and 3), CSR with u32 and u64 indices, bool
    values, and a sparse tensor of no values."""
    w = writer(path)

    def coo(name, shape, coords, values, dtype, logical=None):
        coords = np.asarray(coords)
        parts = {"coords": {"dtype": str(coords.dtype).replace("uint", "u"), "data": raw(coords)},
                 "values": {"dtype": dtype, "data": raw(values)}}
        if logical:
            parts["values"]["logical"] = logical
        w.add_object(name, list(shape), parts, layout="zt.sparse_coo/1")

    coo("coo_u32", (3, 4), np.array([[0, 2, 1], [3, 0, 1]], dtype=np.uint32),
        sample("coo_u32", np.dtype("float32"), (3,)), "f32")
    coo("coo_u64_rank3", (2, 3, 4), np.array([[1, 0], [2, 1], [3, 0]], dtype=np.uint64),
        sample("coo3", np.dtype("int16"), (2,)), "i16")
    coo("coo_bool", (5,), np.array([[4, 1, 3]], dtype=np.uint32), np.array([1, 1, 0], dtype=np.uint8), "u8", "bool")
    coo("coo_empty", (4, 4), np.zeros((2, 0), dtype=np.uint64), np.zeros(0, dtype=np.float32), "f32")

    def csr(name, shape, indptr, indices, values, dtype):
        parts = {"indptr": {"dtype": dtype, "data": raw(indptr)}, "indices": {"dtype": dtype, "data": raw(indices)},
                 "values": {"dtype": "f32", "data": raw(values)}}
        w.add_object(name, list(shape), parts, layout="zt.sparse_csr/1")

    csr("csr_u64", (3, 4), np.array([0, 2, 2, 4], dtype=np.uint64), np.array([0, 3, 1, 2], dtype=np.uint64),
        sample("csr_u64", np.dtype("float32"), (4,)), "u64")
    csr("csr_u32", (2, 5), np.array([0, 1, 3], dtype=np.uint32), np.array([4, 0, 2], dtype=np.uint32),
        sample("csr_u32", np.dtype("float32"), (3,)), "u32")
    w.finish()
    return {}


def packed(codes: np.ndarray, bits: int, word: type, msb_first: bool) -> np.ndarray:
    """`codes` (one per element) packed `bits` each into words of `word`."""
    per = np.dtype(word).itemsize * 8 // bits
    codes = codes.reshape(-1, per).astype(np.uint64)
    shifts = np.arange(per, dtype=np.uint64) * np.uint64(bits)
    if msb_first:
        shifts = shifts[::-1]
    return (codes << shifts).sum(axis=1).astype(word)


def group_attrs(bits, group_size, axis, word, order, scale_form, zero_point):
    per_word = np.dtype(word).itemsize * 8 // bits
    return {"bits": bits, "group_size": group_size, "axis": axis,
            "packing": {"word": np.dtype(word).name.replace("uint", "u"), "order": order, "per_word": per_word},
            "scale_form": scale_form, "zero_point": zero_point}


def quant(path: Path) -> dict:
    """The worked points of `zt.quant_group/1` (AWQ, GPTQ, MLX, bias-8 int4, symmetric int8)
    and `zt.mx/1` with fp4, fp8 and int8 elements."""
    w = writer(path)
    written = {}

    def add(name, shape, parts, layout, attrs):
        w.add_object(name, list(shape), parts, layout=layout, attributes=attrs)
        written[name] = attrs

    rows, cols = 256, 8
    codes = (np.arange(rows * cols) * 7 % 16).astype(np.uint8)
    scales16 = sample("scales16", np.dtype("float16"), (2, cols))
    zeros = (np.arange(2 * cols) % 16).astype(np.uint8)
    for name, order in [("awq", "lsb_first"), ("gptq", "msb_first")]:
        attrs = group_attrs(4, 128, 0, np.uint32, order, "f16_factors", {"form": "tensor", "packing": "same_as_data"})
        msb = order == "msb_first"
        parts = {"data": {"dtype": "u32", "data": raw(packed(codes, 4, np.uint32, msb))},
                 "scales": {"dtype": "f16", "data": raw(scales16)},
                 "zeros": {"dtype": "u32", "data": raw(packed(zeros, 4, np.uint32, msb))}}
        add(name, (rows, cols), parts, "zt.quant_group/1", attrs)
    mlx_codes = (np.arange(4 * 128) * 5 % 16).astype(np.uint8)
    attrs = group_attrs(4, 64, 1, np.uint32, "lsb_first", "f16_factors", {"form": "tensor", "packing": "plain"})
    parts = {"data": {"dtype": "u32", "data": raw(packed(mlx_codes, 4, np.uint32, False))},
             "scales": {"dtype": "f16", "data": raw(sample("mlx_s", np.dtype("float16"), (4, 2)))},
             "zeros": {"dtype": "f16", "data": raw(sample("mlx_z", np.dtype("float16"), (4, 2)))}}
    add("mlx", (4, 128), parts, "zt.quant_group/1", attrs)
    attrs = group_attrs(4, 32, 0, np.uint32, "lsb_first", "f32_factors", {"form": "implied", "value": 8})
    parts = {"data": {"dtype": "u32", "data": raw(packed(codes[:64 * 2], 4, np.uint32, False))},
             "scales": {"dtype": "f32", "data": raw(sample("b8_s", np.dtype("float32"), (2, 2)))}}
    add("bias8", (64, 2), parts, "zt.quant_group/1", attrs)
    attrs = group_attrs(8, 0, 0, np.uint8, "lsb_first", "f32_factors", {"form": "none"})
    parts = {"data": {"dtype": "i8", "data": raw(sample("int8", np.dtype("int8"), (3, 4)))},
             "scales": {"dtype": "f32", "data": raw(sample("int8_s", np.dtype("float32"), (3, 4)))}}
    add("int8", (3, 4), parts, "zt.quant_group/1", attrs)

    scales = (np.arange(4) + 120).astype(np.uint8)
    mx_attrs = {"block_size": 32, "scale_form": "e8m0_exponent"}
    fp4 = (np.arange(64) * 37 % 256).astype(np.uint8)
    for name, data, dtype, logical in [
        ("mx_fp4", fp4, "u8", "f4_e2m1"),
        ("mx_e4m3", raw(sample("mx_e4m3", np.dtype(ml_dtypes.float8_e4m3fn), (2, 64))), "u8", "f8_e4m3fn"),
        ("mx_e5m2", raw(sample("mx_e5m2", np.dtype(ml_dtypes.float8_e5m2), (2, 64))), "u8", "f8_e5m2"),
        ("mx_int8", raw(sample("mx_int8", np.dtype("int8"), (2, 64))), "i8", None),
    ]:
        data_part = {"dtype": dtype, "data": data}
        if logical:
            data_part["logical"] = logical
        parts = {"data": data_part, "scales": {"dtype": "u8", "logical": "f8_e8m0", "data": scales}}
        add(name, (2, 64), parts, "zt.mx/1", mx_attrs)
    mx_axis = {"block_size": 32, "axis": 0, "scale_form": "e8m0_exponent"}
    parts = {"data": {"dtype": "u8", "logical": "f4_e2m1", "data": fp4},
             "scales": {"dtype": "u8", "logical": "f8_e8m0", "data": scales}}
    add("mx_axis0", (64, 2), parts, "zt.mx/1", mx_axis)
    w.finish()
    return written


def encoded(path: Path) -> dict:
    """Parts encoded `zt.zstd-seekable/1`: one of several frames (the writer's frames hold
    1 MiB), a small one, and bool values."""
    w = writer(path)
    big = np.tile(np.arange(1024, dtype=np.float32), 700)  # 2.7 MiB decoded: three frames
    w.add("big", raw(big), [700, 1024], "f32", encoding="zt.zstd-seekable/1")
    w.add("small", raw(sample("small", np.dtype("int32"), (5,))), [5], "i32", encoding="zt.zstd-seekable/1")
    mask = raw(sample("mask", np.dtype(bool), (4, 4)).astype(np.uint8))
    w.add("mask", mask, [4, 4], "u8", logical="bool", encoding="zt.zstd-seekable/1")
    w.add("plain", raw(sample("plain", np.dtype("float16"), (3,))), [3], "f16")
    w.finish()
    return {}


def appended(path: Path) -> dict:
    """A file written, then added to (`Writer(append=True)`): two generations."""
    w = writer(path)
    w.add("first", raw(sample("first", np.dtype("float32"), (4,))), [4], "f32")
    w.finish()
    w = ztensor.Writer(str(path), canonical=False, append=True)
    w.add("second", raw(sample("second", np.dtype("int64"), (2,))), [2], "i64")
    w.finish()
    return {}


def structural(path: Path) -> dict:
    """What a reader may only expose structurally: a layout of another namespace, a logical
    type it does not know, and fp4 of an odd count (a padding nibble); and a plain tensor."""
    w = writer(path)
    w.add_object("custom", [8], {"data": {"dtype": "u8", "data": np.arange(8, dtype=np.uint8)}}, layout="x.custom/1")
    w.add("future", np.arange(8, dtype=np.uint8), [8], "u8", logical="x.future/1")
    w.add("fp4_odd", np.array([0x21, 0x03], dtype=np.uint8), [3], "u8", logical="f4_e2m1")
    w.add("plain", raw(sample("plain", np.dtype("float32"), (2,))), [2], "f32")
    w.finish()
    return {}


def safetensors_input(path: Path) -> None:
    """A safetensors file for `ztensor.convert` (bool, fp8, bf16 and plain dtypes, metadata)."""
    tensors = {
        "f32": sample("st_f32", np.dtype("float32"), (2, 3)),
        "bf16": sample("st_bf16", np.dtype(ml_dtypes.bfloat16), (4,)),
        "i64": sample("st_i64", np.dtype("int64"), (3,)),
        "u8": sample("st_u8", np.dtype("uint8"), (5,)),
        "mask": sample("st_mask", np.dtype(bool), (2, 2)),
        "fp8": sample("st_fp8", np.dtype(ml_dtypes.float8_e4m3fn), (3,)),
    }
    save_file(tensors, str(path), metadata={"format": "np", "note": "converted by ztensor"})


def tagged(value):
    """An attribute value as the record keeps it, every CBOR kind told apart (floats as their
    Python repr, so that NaN and the infinities survive JSON)."""
    if value is None:
        return {"null": None}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, str):
        return {"text": value}
    if isinstance(value, list):
        return {"list": [tagged(v) for v in value]}
    if isinstance(value, dict):
        return {"map": {k: tagged(v) for k, v in value.items()}}
    raise TypeError(f"attribute of type {type(value).__name__}")


def record(path: Path, written_attrs: dict) -> None:
    """Writes `path`.expected.json: what ztensor's reader reads back from `path`."""
    objects = []
    with ztensor.open(str(path)) as src:
        for name in src.keys():
            t = src[name]
            parts = []
            for part in t.parts:
                p = t[part]
                data = p.tobytes()
                assert len(data) == p.nbytes, f"{path}: {name}/{part}"
                parts.append({"name": part, "dtype": p.dtype, "logical": p.logical, "nbytes": p.nbytes,
                              "sha256": hashlib.sha256(data).hexdigest()})
            entry = {"name": name, "layout": t.layout, "shape": [int(d) for d in t.shape], "parts": parts}
            if name in written_attrs:
                # The reader has no accessor for an object's attributes: these are the ones given.
                entry["attributes_written"] = tagged(written_attrs[name])
            objects.append(entry)
        attrs = src.attributes
        provenance = src.provenance
    try:
        checked, undigested = ztensor.verify(str(path), deep=True)
        verification = {"checked": checked, "undigested": undigested}
    except ValueError as err:
        verification = {"error": str(err)}
    rec = {"producer": PRODUCER, "file": path.name, "provenance": provenance,
           "attributes": None if attrs is None else tagged(attrs), "verify": verification, "objects": objects}
    path.with_name(path.name + ".expected.json").write_text(pretty_json(rec) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    generate(Path(sys.argv[1]), sys.argv[2])
