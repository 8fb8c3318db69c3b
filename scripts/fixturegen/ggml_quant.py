"""Rows quantized by ggml itself: `ggml_quantize_chunk` of llama.cpp's libggml-base, through ctypes.

Every case is a few rows of float32 values (random normal rows, rows with zeros, all-zero and
constant rows, extremes, subnormals, ties, rows of ten blocks of 32, infinities and NaN); every
quantized type is run on every case whose rows are whole blocks of it, without an importance
matrix and with one or two (random positive weights, and weights with zeros), as
`ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, imatrix)` makes them. The types that
need an importance matrix (IQ2_XXS, IQ2_XS, IQ1_S) get only the records with one; the IQ grid
types get no case with infinities or NaN (ggml indexes its grids with what such values give).
Q2_0's outputs are also dequantized by ggml's `dequantize_row_q2_0`, and Q1_0's by
`dequantize_row_q1_0` (gguf-py knows neither type). Two more sets of blocks are written and
dequantized by ggml: hand-made Q1_0 blocks (negative, zero, subnormal, infinite and NaN scales
that ggml's quantizer never writes), and Q8_K blocks (ggml's intermediate type, which
`ggml_quantize_chunk` does not make): every case of whole blocks of 256 through
`quantize_row_q8_K_ref`, then hand-made blocks (codes -128 to 127, every kind of scale, sums
right and wrong), all through `dequantize_row_q8_K`. Each quantizing call runs in a forked
child: where ggml stops the process (a failed GGML_ASSERT), the record says `"aborts": true`.

Written to OUT: `inputs.f32` (every case's rows, little-endian float32, one after another),
`importance.f32` (every importance vector), `<TYPE>.bin` (that type's outputs, one record after
another), `Q2_0.dequantized.f32`, `Q1_0.dequantized.f32`, `Q1_0.handmade.blocks` and
`Q1_0.handmade.f32`, `Q8_K.blocks` and `Q8_K.dequantized.f32`, and the record
`quant.expected.json` saying where each piece lies and its sha256 (`dequantized`: Q2_0's;
`more_dequantized`: the others, each naming its blocks).

Runs with any Python that has numpy: `python -m fixturegen.ggml_quant OUT LIBGGML_BASE`, with
the library's folder in LD_LIBRARY_PATH (scripts/fixtures does this when scripts/llama-tools has
built the library). The data is deterministic: numpy generators seeded by each case's name.
"""

import ctypes
import hashlib
import json
import os
import sys
import zlib
from pathlib import Path

import numpy as np

RECORD = "quant.expected.json"

# ggml's type numbers (ggml.h `enum ggml_type`), in the order they are recorded.
TYPES = {
    "F16": 1,
    "Q4_0": 2,
    "Q4_1": 3,
    "Q5_0": 6,
    "Q5_1": 7,
    "Q8_0": 8,
    "Q2_K": 10,
    "Q3_K": 11,
    "Q4_K": 12,
    "Q5_K": 13,
    "Q6_K": 14,
    "IQ2_XXS": 16,
    "IQ2_XS": 17,
    "IQ3_XXS": 18,
    "IQ1_S": 19,
    "IQ4_NL": 20,
    "IQ3_S": 21,
    "IQ2_S": 22,
    "IQ4_XS": 23,
    "IQ1_M": 29,
    "BF16": 30,
    "TQ1_0": 34,
    "TQ2_0": 35,
    "MXFP4": 39,
    "NVFP4": 40,
    "Q1_0": 41,
    "Q2_0": 42,
}
# The types whose kernels search a grid of code points: no case with infinities or NaN.
GRID_TYPES = {"IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ3_S", "IQ2_S", "IQ1_M"}
# What ggml_quantize_requires_imatrix says.
NEEDS_IMPORTANCE = {"IQ2_XXS", "IQ2_XS", "IQ1_S"}


def rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def case_rows() -> list:
    """(name, rows as a 2-D float32 array, the importance vectors it is run with)."""
    cases = []

    def add(name, rows, importance=("random",)):
        rows = np.ascontiguousarray(rows, dtype=np.float32)
        assert rows.ndim == 2 and rows.shape[1] % 32 == 0, name
        cases.append((name, rows, importance))

    g = rng("normal")
    add("normal", g.standard_normal((4, 512)) * 0.02, ("random", "sparse"))
    g = rng("normal_wide")
    # Every 16 values a scale of its own, from 1e-3 to 1e2: sub-blocks of very different sizes.
    scales = np.exp(g.uniform(np.log(1e-3), np.log(1e2), (2, 256 // 16))).repeat(16, axis=1)
    add("normal_wide", g.standard_normal((2, 256)) * scales, ("random", "sparse"))
    g = rng("with_zeros")
    rows = g.standard_normal((2, 256))
    rows[g.random((2, 256)) < 0.4] = 0.0
    rows[0, 32:64] = 0.0  # a whole block of 32
    rows[1, 128:144] = -0.0  # a whole sub-block of 16, negative zeros
    add("with_zeros", rows)
    add("all_zero", np.zeros((1, 256)))
    rows = np.zeros((1, 256))
    rows[0, 1::2] = -0.0
    add("signed_zeros", rows)
    add("constant", np.array([[0.5] * 256, [-3.0] * 256, [1e-3] * 256]))
    g = rng("one_sign")
    add("one_sign", np.stack([np.abs(g.standard_normal(256)) + 0.1, -np.abs(g.standard_normal(256)) - 0.1]))
    g = rng("extremes")
    rows = g.uniform(-65000.0, 65000.0, (2, 256))
    rows[0, ::7] = 65504.0
    rows[1, ::5] = -65504.0
    rows[1, 3::9] = 1e-3
    add("extremes", rows)
    g = rng("huge")
    add("huge", g.standard_normal((1, 256)) * 1e30)
    g = rng("tiny")
    add("tiny", np.stack([g.standard_normal(256) * 1e-20, g.standard_normal(256) * 1e-7]))
    g = rng("subnormal")
    # float32 subnormals (below 1.2e-38), and float16 subnormal scales (values near 1e-6).
    add("subnormal", np.stack([g.standard_normal(256) * 1e-39, g.standard_normal(256) * 1e-6]))
    # Values on the ties of every rounding: integers and halves, and their multiples.
    ramp = np.arange(256, dtype=np.float64) / 2.0 - 64.0
    add("ties", np.stack([ramp, ramp / 16.0, np.roll(ramp, 37) * 3.0]))
    g = rng("outlier")
    rows = g.standard_normal((2, 256)) * 0.01
    rows[0, 17] = 40.0
    rows[1, 200] = -40.0
    add("outlier", rows)
    g = rng("row_of_320")
    # Rows of ten blocks of 32 (the types of 32 and 64 only): not a multiple of eight blocks.
    add("row_of_320", g.standard_normal((3, 320)) * 0.05)
    g = rng("nonfinite")
    rows = g.standard_normal((2, 256))
    rows[0, 5] = np.inf
    rows[0, 70] = -np.inf
    rows[1, 10] = np.nan
    rows[1, 100] = np.inf
    add("nonfinite", rows)
    return cases


def importance_vector(kind: str, case: str, n: int) -> np.ndarray:
    g = rng(f"{case}/{kind}")
    w = g.exponential(1.0, n) + 1e-3
    if kind == "sparse":
        w[g.random(n) < 0.3] = 0.0
    return w.astype(np.float32)


def generate(out: Path, library: str) -> None:
    # A failed GGML_ASSERT prints only its message, not a debugger's backtrace.
    os.environ["GGML_NO_BACKTRACE"] = "1"
    lib = ctypes.CDLL(library)
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.ggml_row_size.restype = ctypes.c_size_t
    lib.ggml_blck_size.restype = ctypes.c_int64
    lib.ggml_blck_size.argtypes = [ctypes.c_int]
    lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    for name in ("dequantize_row_q2_0", "dequantize_row_q1_0", "dequantize_row_q8_K", "quantize_row_q8_K_ref"):
        getattr(lib, name).restype = None
        getattr(lib, name).argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    lib.ggml_quantize_init.restype = None
    lib.ggml_quantize_init.argtypes = [ctypes.c_int]
    lib.ggml_version.restype = ctypes.c_char_p
    version = lib.ggml_version().decode()

    out.mkdir(parents=True, exist_ok=True)
    cases = case_rows()
    inputs, case_records = bytearray(), []
    weights, weight_records, weight_at = bytearray(), [], {}
    for name, rows, kinds in cases:
        case_records.append({"name": name, "rows": rows.shape[0], "n_per_row": rows.shape[1],
                             "offset": len(inputs) // 4})
        inputs += rows.astype("<f4").tobytes()
        for kind in kinds:
            w = importance_vector(kind, name, rows.shape[1])
            weight_at[(name, kind)] = w
            weight_records.append({"case": name, "kind": kind, "offset": len(weights) // 4})
            weights += w.astype("<f4").tobytes()

    type_records, dequantized, q1_0_dequantized = [], bytearray(), bytearray()
    for tname, tid in TYPES.items():
        lib.ggml_quantize_init(tid)
        blob, records = bytearray(), []
        for name, rows, kinds in cases:
            if tname in GRID_TYPES and not np.isfinite(rows).all():
                continue
            nrows, n_per_row = rows.shape
            if n_per_row % lib.ggml_blck_size(tid) != 0:
                continue
            row_bytes = lib.ggml_row_size(tid, n_per_row)
            for kind in (None, *kinds):
                if kind is None and tname in NEEDS_IMPORTANCE:
                    continue
                w = weight_at[(name, kind)] if kind else None
                dst = quantize_in_child(lib, tid, rows, w, nrows * row_bytes)
                if dst is None:
                    # ggml stops the process (a failed GGML_ASSERT): recorded as such.
                    records.append({"case": name, "importance": kind, "row_bytes": row_bytes, "aborts": True})
                    continue
                records.append({"case": name, "importance": kind, "row_bytes": row_bytes, "offset": len(blob),
                                "bytes": len(dst)})
                blob += dst.tobytes()
                if tname == "Q2_0":
                    values = np.zeros(nrows * n_per_row, dtype=np.float32)
                    lib.dequantize_row_q2_0(dst.ctypes.data, values.ctypes.data, nrows * n_per_row)
                    dequantized += values.astype("<f4").tobytes()
                if tname == "Q1_0":
                    values = np.zeros(nrows * n_per_row, dtype=np.float32)
                    lib.dequantize_row_q1_0(dst.ctypes.data, values.ctypes.data, nrows * n_per_row)
                    q1_0_dequantized += values.astype("<f4").tobytes()
        (out / f"{tname}.bin").write_bytes(blob)
        type_records.append({"type": tname, "id": tid, "file": f"{tname}.bin", "sha256": sha256(blob),
                             "records": records})
        print(f"{tname}: {len(records)} records, {len(blob)} bytes", flush=True)

    (out / "inputs.f32").write_bytes(inputs)
    (out / "importance.f32").write_bytes(weights)
    (out / "Q2_0.dequantized.f32").write_bytes(dequantized)
    q1_0 = next(t for t in type_records if t["type"] == "Q1_0")
    more = [{"type": "Q1_0", "blocks": q1_0["file"], "blocks_sha256": q1_0["sha256"],
             **write_dequantized(out, "Q1_0.dequantized.f32", q1_0_dequantized)}]
    blocks = q1_0_handmade()
    values = np.zeros(len(blocks) // 18 * 128, dtype=np.float32)
    lib.dequantize_row_q1_0(ctypes.c_char_p(blocks), values.ctypes.data, len(values))
    (out / "Q1_0.handmade.blocks").write_bytes(blocks)
    more.append({"type": "Q1_0", "blocks": "Q1_0.handmade.blocks", "blocks_sha256": sha256(blocks),
                 "handmade_blocks": len(blocks) // 18,
                 **write_dequantized(out, "Q1_0.handmade.f32", values.astype("<f4").tobytes())})
    blocks, quantized = bytearray(), []
    for name, rows, _ in cases:
        if rows.shape[1] % 256 != 0:
            continue
        dst = q8_k_in_child(lib, rows)
        if dst is None:
            quantized.append({"case": name, "aborts": True})
            continue
        quantized.append({"case": name, "offset": len(blocks), "bytes": len(dst)})
        blocks += dst
    handmade = q8_k_handmade()
    blocks += handmade
    values = np.zeros(len(blocks) // 292 * 256, dtype=np.float32)
    lib.dequantize_row_q8_K(ctypes.c_char_p(bytes(blocks)), values.ctypes.data, len(values))
    (out / "Q8_K.blocks").write_bytes(blocks)
    more.append({"type": "Q8_K", "blocks": "Q8_K.blocks", "blocks_sha256": sha256(blocks),
                 "quantize_row_q8_K_ref": quantized, "handmade_blocks": len(handmade) // 292,
                 **write_dequantized(out, "Q8_K.dequantized.f32", values.astype("<f4").tobytes())})
    print(f"dequantized: Q1_0 {len(q1_0_dequantized) // 4} + {more[1]['handmade_blocks'] * 128} "
          f"values, Q8_K {len(blocks) // 292} blocks", flush=True)
    write_record(out, {
        "producer": f"ggml {version} (llama.cpp as vendored by llama-cpp-python 0.3.36): ggml_quantize_chunk",
        "inputs": {"file": "inputs.f32", "sha256": sha256(inputs), "cases": case_records},
        "importance": {"file": "importance.f32", "sha256": sha256(weights), "vectors": weight_records},
        "dequantized": {"type": "Q2_0", "file": "Q2_0.dequantized.f32", "sha256": sha256(dequantized)},
        "more_dequantized": more,
        "types": type_records,
    })


def quantize_in_child(lib, tid: int, rows: np.ndarray, w, size: int):
    """ggml_quantize_chunk's output, made in a forked child (some inputs make ggml abort), or
    None when the child does not finish."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        dst = np.zeros(size, dtype=np.uint8)
        nrows, n_per_row = rows.shape
        written = lib.ggml_quantize_chunk(tid, rows.ctypes.data, dst.ctypes.data, 0, nrows, n_per_row,
                                          w.ctypes.data if w is not None else None)
        data = dst.tobytes() if written == size else b""
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(data)
        os._exit(0 if written == size else 3)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return None
    return np.frombuffer(data, dtype=np.uint8)


def write_dequantized(out: Path, file: str, values: bytes) -> dict:
    (out / file).write_bytes(values)
    return {"file": file, "sha256": sha256(values)}


# Scales ggml's quantizers never write: signed zeros, subnormals, the largest finite value,
# infinities, quiet and signalling NaNs with payloads, negative values.
F16_SCALES = [0x3C00, 0xBC00, 0x0000, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7D55,
              0xFE01, 0x2E66, 0xB4CD]
F32_SCALES = [0x3F800000, 0xBF000000, 0x00000000, 0x80000000, 0x00000001, 0x807FFFFF, 0x000116C2, 0x7F7FFFFF,
              0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00001, 0x7F800001, 0xFFC12345, 0x3C010204, 0xB8D1B717]


def q1_0_handmade() -> bytes:
    """One Q1_0 block per scale of F16_SCALES, its sign bits a different pattern each (all
    clear, all set, and mixed)."""
    out = bytearray()
    for k, d in enumerate(F16_SCALES):
        signs = [0x00] * 16 if k == 0 else [0xFF] * 16 if k == 1 else [(b * 37 + k * 11) & 0xFF for b in range(16)]
        out += d.to_bytes(2, "little") + bytes(signs)
    return bytes(out)


def q8_k_handmade() -> bytes:
    """One Q8_K block per scale of F32_SCALES: codes -128 to 127, rotated by a different step
    each; the sums right in even blocks, and nonsense in odd ones (ggml's dequantization does not
    read them)."""
    out = bytearray()
    for k, d in enumerate(F32_SCALES):
        qs = np.roll(np.arange(-128, 128, dtype=np.int8), 37 * k)
        if k % 2 == 0:
            sums = qs.astype(np.int16).reshape(16, 16).sum(axis=1, dtype=np.int16)
        else:
            sums = np.array([32767, -32768, -1, 0] * 4, dtype=np.int16)
        out += d.to_bytes(4, "little") + qs.tobytes() + sums.astype("<i2").tobytes()
    return bytes(out)


def q8_k_in_child(lib, rows: np.ndarray):
    """quantize_row_q8_K_ref of the rows into zeroed blocks (it leaves an all-zero block's sums
    as they were), made in a forked child (ggml asserts on what some inputs give in a debug
    build), or None when the child does not finish."""
    size = rows.size // 256 * 292
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        dst = np.zeros(size, dtype=np.uint8)
        lib.quantize_row_q8_K_ref(rows.ctypes.data, dst.ctypes.data, rows.size)
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(dst.tobytes())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or len(data) != size:
        return None
    return data


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_record(out: Path, record: dict) -> None:
    """The record with one line per case, vector and output, so that a regenerated set reads
    well in a diff."""
    def rows(items, indent):
        return ",\n".join(f"{indent}{json.dumps(i)}" for i in items)

    types = []
    for t in record["types"]:
        head = {k: v for k, v in t.items() if k != "records"}
        fields = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in head.items())
        types.append(f'    {{{fields}, "records": [\n{rows(t["records"], "      ")}\n    ]}}')
    inputs, importance = record["inputs"], record["importance"]
    text = (
        "{\n"
        f'  "producer": {json.dumps(record["producer"])},\n'
        f'  "inputs": {{"file": {json.dumps(inputs["file"])}, "sha256": {json.dumps(inputs["sha256"])}, "cases": [\n'
        f'{rows(inputs["cases"], "    ")}\n  ]}},\n'
        f'  "importance": {{"file": {json.dumps(importance["file"])}, "sha256": {json.dumps(importance["sha256"])}, '
        f'"vectors": [\n{rows(importance["vectors"], "    ")}\n  ]}},\n'
        f'  "dequantized": {json.dumps(record["dequantized"])},\n'
        f'  "more_dequantized": [\n{rows(record["more_dequantized"], "    ")}\n  ],\n'
        '  "types": [\n' + ",\n".join(types) + "\n  ]\n}\n"
    )
    json.loads(text)
    (out / RECORD).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m fixturegen.ggml_quant OUT LIBGGML_BASE")
    generate(Path(sys.argv[1]), sys.argv[2])
