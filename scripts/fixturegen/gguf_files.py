"""The GGUF fixtures written by gguf-py's `GGUFWriter`, and their records as `GGUFReader` reads
them back (see tests/fixtures/README.md, "GGUF").

  metadata.gguf     a key of every value type, arrays of every element type, an empty array,
                    arrays of arrays, long arrays, unicode keys and text; a tensor of every
                    plain ggml type (F32 F16 BF16 F64 I8 I16 I32 I64), a 0-d and a zero-size one
  blocks.gguf       a tensor of every block type: quantized by `gguf.quants.quantize` where
                    gguf-py can (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 TQ1_0 TQ2_0 MXFP4), random blocks with
                    small normal fp16 scales for the others
  big_endian.gguf   `GGUFWriter(endianess=BIG)`: keys, arrays, every plain type, a Q8_0 tensor
  alignment.gguf    `add_custom_alignment(64)` and tensors of odd sizes

Run alone (inside an environment with gguf, numpy, ml_dtypes and safetensors):
  PYTHONPATH=scripts python -m fixturegen.gguf_files tests/fixtures/gguf
"""

import hashlib
import sys
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFEndian, GGUFReader, GGUFValueType as V, GGUFWriter

from .common import AWKWARD_NAMES, lcg_u32, pretty_json, sample

# Arrays longer than this are recorded by count and sha256, not element by element.
LONG = 32

# Block types gguf-py quantizes itself.
QUANTIZED = [Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.TQ1_0, Q.TQ2_0, Q.MXFP4]

# Byte offsets of the fp16 scale fields of block types gguf-py cannot quantize, set to a small
# normal value in random blocks so that dequantized values stay finite (ggml's block structs).
FP16_SCALES = {
    Q.Q8_1: [0, 2],
    Q.Q2_K: [80, 82],
    Q.Q3_K: [108],
    Q.Q4_K: [0, 2],
    Q.Q5_K: [0, 2],
    Q.Q6_K: [208],
    Q.IQ2_XXS: [0],
    Q.IQ2_XS: [0],
    Q.IQ3_XXS: [0],
    Q.IQ1_S: [0],
    Q.IQ4_NL: [0],
    Q.IQ3_S: [0],
    Q.IQ2_S: [0],
    Q.IQ4_XS: [0],
    Q.Q1_0: [0],
}
SMALL_HALF = np.float16(0.0125).tobytes()


class Writer(GGUFWriter):
    """gguf-py's writer, allowed to write empty arrays (it refuses them; ggml's own `gguf_set_arr_data`
    writes them, and `GGUFReader` reads them)."""

    def _pack_val(self, val, vtype, add_vtype, sub_type=None):
        if vtype == V.ARRAY and len(val) == 0 and sub_type is not None:
            head = self._pack("I", vtype) if add_vtype else b""
            return head + self._pack("I", sub_type) + self._pack("Q", 0)
        return super()._pack_val(val, vtype, add_vtype, sub_type)


def generate(out: Path) -> None:
    """Writes the four files and their records into `out`, after removing the GGUF files and
    records already there (folders under it, such as quants/, are left alone)."""
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.gguf"), *out.glob("*.gguf.expected.json")]:
        old.unlink()
    metadata_file(out / "metadata.gguf")
    blocks_file(out / "blocks.gguf")
    big_endian_file(out / "big_endian.gguf")
    alignment_file(out / "alignment.gguf")


def save(w: GGUFWriter) -> None:
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def metadata_file(path: Path) -> None:
    w = Writer(path, "tensorfile-test")
    add_scalars(w)
    for vtype, values in ARRAYS:
        w.add_key_value(f"array.{vtype.name.lower()}", values, V.ARRAY, sub_type=vtype)
    w.add_key_value("array.empty_u32", [], V.ARRAY, sub_type=V.UINT32)
    w.add_key_value("array.empty_string", [], V.ARRAY, sub_type=V.STRING)
    # Arrays of arrays: gguf-py types each inner array by its first element.
    w.add_key_value("array.nested", [[1, -2, 3], [4], ["x", "ÿ"], [[True], [False, True]]], V.ARRAY)
    tokens = [f"tok{i}·{chr(0x4E00 + i)}" for i in range(300)]
    w.add_key_value("tokenizer.ggml.tokens", tokens, V.ARRAY, sub_type=V.STRING)
    scores = (lcg_u32("scores", 300).astype(np.float64) / 2**32 - 0.5).astype(np.float32)
    w.add_key_value("tokenizer.ggml.scores", [float(s) for s in scores], V.ARRAY, sub_type=V.FLOAT32)
    w.add_key_value("tokenizer.ggml.token_type", [int(t % 6) for t in lcg_u32("types", 300)], V.ARRAY, sub_type=V.INT32)
    shapes = [(7,), (3, 5), (2, 3, 4), (1, 2, 1, 3)]
    for i, (name, dtype) in enumerate(PLAIN):
        w.add_tensor(name, sample(name, np.dtype(dtype), shapes[i % len(shapes)]))
    w.add_tensor("bf16", bf16(sample("bf16", np.dtype("float32"), (4, 8))), raw_dtype=Q.BF16)
    w.add_tensor("scalar", sample("scalar", np.dtype("float32"), ()))
    w.add_tensor("zero_size", np.zeros((0, 3), dtype=np.float32))
    for name in [n for n in AWKWARD_NAMES if len(n.encode()) < 64][:6]:
        w.add_tensor(name, sample(name, np.dtype("float16"), (2, 2)))
    save(w)
    record(path)


def add_scalars(w: GGUFWriter) -> None:
    w.add_uint8("scalar.u8", 250)
    w.add_int8("scalar.i8", -100)
    w.add_uint16("scalar.u16", 65000)
    w.add_int16("scalar.i16", -32000)
    w.add_uint32("scalar.u32", 4_000_000_000)
    w.add_int32("scalar.i32", -2_000_000_000)
    w.add_float32("scalar.f32", 0.1)
    w.add_uint64("scalar.u64", 2**64 - 1)
    w.add_int64("scalar.i64", -(2**63))
    w.add_float64("scalar.f64", -1e-300)
    w.add_bool("scalar.true", True)
    w.add_bool("scalar.false", False)
    w.add_string("general.name", "Üñíçødé — 名前 🦀 \"quoted\" \\ back")
    w.add_key_value("scalar.empty_string", "", V.STRING)
    w.add_string("schlüssel.ключ", "unicode key")


ARRAYS = [
    (V.UINT8, [0, 1, 255]),
    (V.INT8, [-128, 0, 127]),
    (V.UINT16, [0, 65535]),
    (V.INT16, [-32768, 32767]),
    (V.UINT32, [0, 2**32 - 1]),
    (V.INT32, [-(2**31), 2**31 - 1]),
    (V.FLOAT32, [0.5, -1.25, 3.0e38]),
    (V.BOOL, [True, False, True]),
    (V.STRING, ["a", "", "ü🦀"]),
    (V.UINT64, [0, 2**64 - 1]),
    (V.INT64, [-(2**63), 2**63 - 1]),
    (V.FLOAT64, [1e-300, -2.5]),
]

PLAIN = [("f32", "float32"), ("f16", "float16"), ("f64", "float64"), ("i8", "int8"), ("i16", "int16"), ("i32", "int32"), ("i64", "int64")]


def bf16(values: np.ndarray) -> np.ndarray:
    """bfloat16 as gguf-py stores it: 16-bit words (rounded to nearest even), as uint16."""
    return gguf.quants.quantize(values, Q.BF16).view(np.uint16)


def blocks_file(path: Path) -> None:
    w = GGUFWriter(path, "tensorfile-test")
    for qtype in Q:
        if qtype in (Q.F32, Q.F16, Q.F64, Q.I8, Q.I16, Q.I32, Q.I64, Q.BF16):
            continue
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        shape = (2, block * 2)
        if qtype in QUANTIZED:
            data = gguf.quants.quantize(sample(qtype.name, np.dtype("float32"), shape), qtype)
        else:
            data = random_blocks(qtype, shape[0] * 2, size).reshape(shape[0], 2 * size)
        w.add_tensor(qtype.name.lower(), data, raw_shape=data.shape, raw_dtype=qtype)
    save(w)
    record(path)


def random_blocks(qtype: Q, count: int, size: int) -> np.ndarray:
    blocks = (lcg_u32(qtype.name, count * size) & 0xFF).astype(np.uint8).reshape(count, size)
    for at in FP16_SCALES.get(qtype, []):
        blocks[:, at : at + 2] = np.frombuffer(SMALL_HALF, dtype=np.uint8)
    if qtype == Q.Q8_K:
        blocks[:, 0:4] = np.frombuffer(np.float32(0.0125).tobytes(), dtype=np.uint8)
    if qtype == Q.IQ1_M:
        # The fp16 scale is the top nibbles of the four u16 words at bytes 48..56.
        half = int.from_bytes(SMALL_HALF, "little")
        for k in range(4):
            at = 49 + 2 * k
            blocks[:, at] = (blocks[:, at] & 0x0F) | (((half >> (4 * k)) & 0xF) << 4)
    return blocks


def big_endian_file(path: Path) -> None:
    w = GGUFWriter(path, "tensorfile-test", endianess=GGUFEndian.BIG)
    add_scalars(w)
    for vtype, values in ARRAYS:
        w.add_key_value(f"array.{vtype.name.lower()}", values, V.ARRAY, sub_type=vtype)
    w.add_key_value("array.nested", [[1, 2], ["x"]], V.ARRAY)
    for i, (name, dtype) in enumerate(PLAIN):
        w.add_tensor(name, sample(name, np.dtype(dtype), (2, 3)))
    # As uint16 words, gguf-py swaps bfloat16 into the file's order (given as uint8 bytes, as
    # `quantize` returns them, it would not).
    w.add_tensor("bf16", bf16(sample("bf16", np.dtype("float32"), (2, 4))), raw_dtype=Q.BF16)
    q = gguf.quants.quantize(sample("q8_0", np.dtype("float32"), (2, 32)), Q.Q8_0)
    w.add_tensor("q8_0", q, raw_shape=q.shape, raw_dtype=Q.Q8_0)
    save(w)
    record(path)


def alignment_file(path: Path) -> None:
    w = GGUFWriter(path, "tensorfile-test")
    w.add_custom_alignment(64)
    for i, n in enumerate([3, 17, 1, 40]):
        w.add_tensor(f"odd.{i}", sample(f"odd.{i}", np.dtype("float32"), (n,)))
    q = gguf.quants.quantize(sample("q4_0", np.dtype("float32"), (3, 32)), Q.Q4_0)
    w.add_tensor("q4_0", q, raw_shape=q.shape, raw_dtype=Q.Q4_0)
    save(w)
    record(path)


# The record --------------------------------------------------------------------------------

TYPE_NAMES = {
    V.UINT8: "u8", V.INT8: "i8", V.UINT16: "u16", V.INT16: "i16", V.UINT32: "u32", V.INT32: "i32",
    V.FLOAT32: "f32", V.BOOL: "bool", V.STRING: "string", V.ARRAY: "array", V.UINT64: "u64",
    V.INT64: "i64", V.FLOAT64: "f64",
}


def record(path: Path) -> None:
    """Writes `path`.expected.json: what `GGUFReader` reads back."""
    r = GGUFReader(path)
    big = r.endianess == GGUFEndian.BIG
    kvs = []
    for key, field in r.fields.items():
        if key.startswith("GGUF."):
            continue
        # The parts after the key's length, the key and the value type.
        value, end = walk(field.parts, 3, V(int(field.parts[2][0])))
        assert end == len(field.parts), key
        kvs.append({"key": key, **value})
    tensors = []
    for t in r.tensors:
        stored = t.data.tobytes()
        tensor = {
            "name": t.name,
            "type": t.tensor_type.name,
            "shape": [int(d) for d in reversed(t.shape.tolist())],
            "n_bytes": int(t.n_bytes),
            "data_offset": int(t.data_offset),
            "stored_sha256": sha256(stored),
            "sha256": sha256(little_endian(t, stored) if big else stored),
        }
        if t.tensor_type.name not in PLAIN_TYPES:
            try:
                values = gguf.quants.dequantize(t.data, t.tensor_type).astype("<f4")
                tensor["dequantized_sha256"] = sha256(values.tobytes())
            except NotImplementedError:
                pass
        tensors.append(tensor)
    doc = {
        "producer": f"gguf-py {version()} (numpy {np.__version__})",
        "file": path.name,
        "version": int(r.fields["GGUF.version"].parts[0][0]),
        "byte_order": "big" if big else "little",
        "alignment": int(r.alignment),
        "data_offset": int(r.data_offset),
        "metadata": kvs,
        "tensors": tensors,
    }
    path.with_name(path.name + ".expected.json").write_text(pretty_json(doc) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


def walk(parts, i: int, vtype: V):
    """The value whose parts start at `parts[i]`, as a record, and the index after them."""
    if vtype == V.STRING:
        return {"type": "string", "value": bytes(parts[i + 1]).decode("utf-8")}, i + 2
    if vtype != V.ARRAY:
        return {"type": TYPE_NAMES[vtype], "value": parts[i].tolist()[0]}, i + 1
    element, count = V(int(parts[i][0])), int(parts[i + 1][0])
    i += 2
    items = []
    for _ in range(count):
        item, i = walk(parts, i, element)
        items.append(item["value"] if element != V.ARRAY else {k: v for k, v in item.items() if k != "type"})
    value = {"type": "array", "element": TYPE_NAMES[element]}
    if count > LONG:
        value.update(count=count, sha256=sha256(encoded(element, items)))
    else:
        value["value"] = items
    return value, i


def encoded(element: V, items: list) -> bytes:
    """The elements of a long array as a GGUF little-endian file stores them (strings with their
    u64 length): what the record's sha256 is of."""
    if element == V.STRING:
        out = bytearray()
        for s in items:
            b = s.encode("utf-8")
            out += len(b).to_bytes(8, "little") + b
        return bytes(out)
    dtype = {V.INT32: "<i4", V.FLOAT32: "<f4", V.UINT32: "<u4", V.UINT8: "u1"}[element]
    return np.array(items, dtype=dtype).tobytes()


PLAIN_TYPES = {"F32", "F16", "BF16", "F64", "I8", "I16", "I32", "I64"}


def little_endian(t, stored: bytes) -> bytes:
    """The little-endian values of a plain tensor of a big-endian file; blocks as stored."""
    widths = {Q.F32: 4, Q.F16: 2, Q.BF16: 2, Q.F64: 8, Q.I16: 2, Q.I32: 4, Q.I64: 8}
    width = widths.get(t.tensor_type)
    if width is None:
        return stored
    return np.frombuffer(stored, dtype=f">u{width}").astype(f"<u{width}").tobytes()


def sha256(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def version() -> str:
    from importlib.metadata import version as of

    return of("gguf")


if __name__ == "__main__":
    generate(Path(sys.argv[1]))
