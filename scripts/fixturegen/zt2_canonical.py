"""Canonical zTensor 2 files written by the pip package `ztensor` 2.1.2 (its `Writer`, whose
default is canonical form), with records of what they hold: the tensors tensorfile's own
zTensor 2 writer must write byte for byte the same (crates/tensorfile/tests/zt2_canonical.rs).

Runs in the zTensor 2 environment (~/.cache/tensorfile/venv-zt2: ztensor 2.1.2 and numpy),
which cannot be the main one: ztensor 2.x and 0.1.4 are one package name.

    python -m fixturegen.zt2_canonical OUT_DIR

The record of `X.zt` is `X.zt.expected.json`: the file attributes and each object as
`ztensor.open` reads it back (shape, layout, parts with dtype, logical type and bytes in
hex), plus the object attributes given to the writer (the Python API does not read them).
Non-finite floats are written {"$float": "nan"|"inf"|"-inf"} in the record.
"""

import hashlib
import json
import math
import shutil
import sys
from pathlib import Path

import ztensor

PRODUCER = "ztensor 2.1.2 (pip), canonical Writer"


def data(seed: str, n: int) -> bytes:
    """`n` deterministic bytes: SHA-256 of the seed and a counter, concatenated."""
    out = b""
    k = 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}/{k}".encode()).digest()
        k += 1
    return out[:n]


def bools(seed: str, n: int) -> bytes:
    return bytes(b & 1 for b in data(seed, n))


def part(dtype: str, payload: bytes, logical: "str | None" = None) -> dict:
    p = {"dtype": dtype, "data": payload}
    if logical:
        p["logical"] = logical
    return p


# (name, shape, storage dtype, logical type, bytes per element: n -> bytes)
DENSE = [
    ("f64", [3], "f64", None, 8),
    ("f32", [2, 3], "f32", None, 4),
    ("f16", [5], "f16", None, 2),
    ("bf16", [2, 2], "bf16", None, 2),
    ("i64", [2], "i64", None, 8),
    ("i32", [3, 1], "i32", None, 4),
    ("i16", [4], "i16", None, 2),
    ("i8", [7], "i8", None, 1),
    ("u64", [2], "u64", None, 8),
    ("u32", [3], "u32", None, 4),
    ("u16", [2, 2, 2], "u16", None, 2),
    ("u8", [9], "u8", None, 1),
    ("bool", [6], "u8", "bool", 1),
    ("f8_e4m3fn", [4], "u8", "f8_e4m3fn", 1),
    ("f8_e5m2", [4], "u8", "f8_e5m2", 1),
    ("f8_e4m3fnuz", [4], "u8", "f8_e4m3fnuz", 1),
    ("f8_e5m2fnuz", [4], "u8", "f8_e5m2fnuz", 1),
    ("f8_e8m0", [4], "u8", "f8_e8m0", 1),
    ("f4_e2m1", [2, 4], "u8", "f4_e2m1", 0.5),
    ("complex64", [3], "f32", "complex64", 8),
    ("complex128", [2], "f64", "complex128", 16),
    ("scalar", [], "f32", None, 4),
    ("zero_size", [0, 4], "f32", None, 4),
    ("also_empty", [3, 0], "i8", None, 1),
    ("ümlaut.gewicht", [2], "f16", None, 2),
    ("重み/層.0", [2], "f16", None, 2),
    ("crab🦀.emoji", [2], "f16", None, 2),
    ("Upper.first", [2], "f16", None, 2),
]


def dense_objects() -> list:
    objects = []
    for name, shape, dtype, logical, width in DENSE:
        n = math.prod(shape)
        size = int(n * width)
        payload = bools(name, size) if logical == "bool" else data(name, size)
        objects.append((name, shape, "dense", None, {"data": part(dtype, payload, logical)}))
    # Tied weights: equal bytes under two names (and a third dtype), stored once.
    tied = data("tied", 64)
    objects.append(("tied.embed", [4, 4], "dense", None, {"data": part("f32", tied)}))
    objects.append(("tied.head", [4, 4], "dense", None, {"data": part("f32", tied)}))
    objects.append(("tied.raw", [64], "dense", None, {"data": part("u8", tied)}))
    # A tensor with fields of its own.
    fields = {"unit": "m", "scale": 2, "ratio": 0.25, "tags": ["a", "b"], "nested": {"x": None, "y": -7}}
    objects.append(("with_fields", [2], "dense", fields, {"data": part("f32", data("with_fields", 8))}))
    return objects


def sparse_objects() -> list:
    u64s = lambda values: b"".join(v.to_bytes(8, "little") for v in values)  # noqa: E731
    return [
        # coords: all row indices, then all column indices.
        ("coo", [3, 3], "zt.sparse_coo/1", None,
         {"coords": part("u64", u64s([0, 1, 2, 2, 0, 1])), "values": part("f32", data("coo", 12))}),
        ("coo3d", [2, 3, 4], "zt.sparse_coo/1", None,
         {"coords": part("u64", u64s([1, 0, 2, 1, 3, 0])), "values": part("i64", data("coo3d", 16))}),
        ("coo_empty", [5], "zt.sparse_coo/1", None, {"coords": part("u64", b""), "values": part("f16", b"")}),
        ("csr", [3, 4], "zt.sparse_csr/1", None,
         {"indptr": part("u64", u64s([0, 2, 2, 3])), "indices": part("u64", u64s([0, 3, 1])),
          "values": part("u8", bools("csr", 3), "bool")}),
        ("csr_f16", [2, 5], "zt.sparse_csr/1", None,
         {"indptr": part("u64", u64s([0, 0, 2])), "indices": part("u64", u64s([1, 4])),
          "values": part("f16", data("csr_f16", 4))}),
    ]


# ggml types as the gguf profiles name them: (elements per block, bytes per block).
GGUF = {"q4_0": (32, 18), "q8_0": (32, 34), "q6_k": (256, 210), "iq4_nl": (32, 18), "mxfp4": (32, 17)}


def group(bits, group_size, axis, word, order, scale_form, zero_point) -> dict:
    per_word = {"u8": 8, "u16": 16, "u32": 32, "u64": 64}[word] // bits
    return {
        "bits": bits,
        "group_size": group_size,
        "axis": axis,
        "packing": {"word": word, "order": order, "per_word": per_word},
        "scale_form": scale_form,
        "zero_point": zero_point,
    }


def quantized_objects() -> list:
    objects = []
    for t, (per, size) in GGUF.items():
        shape = [2, per]
        attrs = {"elems_per_block": per, "block_bytes": size}
        objects.append((f"gguf.{t}", shape, f"gguf.{t}/1", attrs, {"data": part("u8", data(t, 2 * size))}))
    q = "zt.quant_group/1"
    # [4, 16] along axis 1 in groups of 8: 64 codes, 8 u32 words, 2 x 4 = 8 scales.
    awq = group(4, 8, 1, "u32", "lsb_first", "f16_factors", {"form": "tensor", "packing": "same_as_data"})
    objects.append(("group.awq", [4, 16], q, awq, {
        "data": part("u32", data("awq.d", 32)), "scales": part("f16", data("awq.s", 16)),
        "zeros": part("u32", data("awq.z", 4))}))
    gptq = group(4, 8, 1, "u32", "msb_first", "f16_factors", {"form": "tensor", "packing": "same_as_data"})
    objects.append(("group.gptq", [4, 16], q, gptq, {
        "data": part("i32", data("gptq.d", 32)), "scales": part("bf16", data("gptq.s", 16)),
        "zeros": part("i32", data("gptq.z", 4))}))
    mlx = group(4, 8, 1, "u32", "lsb_first", "f16_factors", {"form": "tensor", "packing": "plain"})
    objects.append(("group.mlx", [4, 16], q, mlx, {
        "data": part("u32", data("mlx.d", 32)), "scales": part("f16", data("mlx.s", 16)),
        "zeros": part("f16", data("mlx.z", 16))}))
    bias8 = group(4, 32, 0, "u32", "lsb_first", "f32_factors", {"form": "implied", "value": 8})
    objects.append(("group.bias8", [64, 2], q, bias8, {
        "data": part("u32", data("bias8.d", 64)), "scales": part("f32", data("bias8.s", 16))}))
    # group_size 0: one scale per row of the axis, as the profile's formula gives.
    int8 = group(8, 0, 0, "u8", "lsb_first", "f32_factors", {"form": "none"})
    objects.append(("group.int8", [2, 3], q, int8, {
        "data": part("i8", data("int8.d", 6)), "scales": part("f32", data("int8.s", 24))}))
    e8m0 = group(2, 16, 0, "u8", "lsb_first", "e8m0_exponent", {"form": "none"})
    objects.append(("group.e8m0", [16, 2], q, e8m0, {
        "data": part("u8", data("e8m0.d", 8)), "scales": part("u8", data("e8m0.s", 2), "f8_e8m0")}))
    mx = "zt.mx/1"
    for name, shape, axis, dtype, logical, nbytes in [
        ("mx.fp4", [2, 64], 1, "u8", "f4_e2m1", 64),
        ("mx.fp8", [2, 32], 1, "u8", "f8_e4m3fn", 64),
        ("mx.fp8_e5m2", [32], 0, "u8", "f8_e5m2", 32),
        ("mx.int8", [64, 1], 0, "i8", None, 64),
    ]:
        # `axis` stated only where it is not the default, the last dimension.
        attrs = {"block_size": 32, "scale_form": "e8m0_exponent"}
        if axis != len(shape) - 1:
            attrs["axis"] = axis
        scales = math.prod(shape) // 32
        objects.append((name, shape, mx, attrs, {
            "data": part(dtype, data(name, nbytes), logical), "scales": part("u8", data(name + ".s", scales), "f8_e8m0")}))
    return objects


FILE_ATTRIBUTES = {
    "text": "ünïcode ✓",
    "int": 42,
    "negative": -3,
    "u64_max": 2**64 - 1,
    "i64_min": -(2**63),
    "most_negative": -(2**64),
    "half": 0.5,
    "f16_max": 65504.0,
    "single": 100000.0,
    "double": 0.1,
    "huge": 1e300,
    "negative_zero": -0.0,
    "nan": float("nan"),
    "inf": float("inf"),
    "minus_inf": float("-inf"),
    "true": True,
    "false": False,
    "null": None,
    "list": [1, "two", 3.5, None, [True]],
    "map": {"b": 1, "a": {"deeper": [0]}, "": "empty key inside"},
}


FILES = {
    "dense.zt": (dense_objects, None),
    "sparse.zt": (sparse_objects, None),
    "quantized.zt": (quantized_objects, None),
    "attributes.zt": (lambda: [("only", [2], "dense", None, {"data": part("f32", data("only", 8))})], FILE_ATTRIBUTES),
    "empty.zt": (lambda: [], None),
}


def write(path: Path, objects: list, attributes: "dict | None") -> None:
    writer = ztensor.Writer(str(path))
    if attributes:
        writer.set_attributes(attributes)
    # Canonical form takes objects in name order (bytewise, as UTF-8).
    for name, shape, layout, attrs, parts in sorted(objects, key=lambda o: o[0].encode()):
        if layout == "dense" and attrs is None:
            (p,) = parts.values()
            writer.add(name, p["data"], shape, p["dtype"], logical=p.get("logical"))
        else:
            writer.add_object(name, shape, parts, layout=layout, attributes=attrs)
    writer.finish()


def jsonable(v):
    """A value for the record: non-finite floats tagged, containers recursively."""
    if isinstance(v, float) and not math.isfinite(v):
        return {"$float": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    return v


def record(path: Path, objects: list) -> dict:
    given = {name: attrs for name, _, _, attrs, _ in objects}
    src = ztensor.open(str(path))
    read = []
    for name in sorted(src.keys(), key=str.encode):
        t = src[name]
        parts = {p: {"dtype": t[p].dtype, "type": t[p].logical, "hex": t[p].tobytes().hex()} for p in sorted(t.parts)}
        read.append({"name": name, "shape": list(t.shape), "layout": t.layout, "attributes": jsonable(given[name]),
                     "parts": parts})
    checked, undigested = ztensor.verify(str(path), deep=True)
    assert undigested == 0 and checked == sum(len(o["parts"]) for o in read), (checked, undigested)
    return {"producer": PRODUCER, "file": path.name, "attributes": jsonable(src.attributes), "objects": read}


def generate(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for file, (objects, attributes) in FILES.items():
        path = out / file
        made = objects()
        write(path, made, attributes)
        rec = record(path, made)
        text = json.dumps(rec, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
        (out / f"{file}.expected.json").write_text(text, encoding="utf-8")
        print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    generate(Path(sys.argv[1]))
