"""Reference quantizations of ggml's grid types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
IQ1_M), made by ggml itself: `ggml_quantize_chunk` of `libggml-base.so`, called through ctypes.

Every case is a few rows of float32 values (random normal rows, rows scaled far apart, rows
and sub-blocks of zeros, constant rows, ties, extremes, subnormals, NaN and infinities) with
its own importance weights (random positive ones; for one case a quarter of them zero). Each
type quantizes each case with the importance weights and, where ggml allows it, without.
ggml aborts the process on what it cannot quantize, so every call runs in a forked child; where
a case's child dies, each of its rows is quantized alone and the rows whose child dies are
recorded as aborted.

Files written to OUT (the record format is described in OUT's README.md):
  inputs.f32    the cases' rows, one after the other (little-endian float32)
  imatrix.f32   each case's importance weights, one row's worth per case
  <TYPE>.bin    the bytes ggml wrote for each quantization of that type, one after the other
  records.json  where each case and each quantization lies, with sha256 digests

Runs with numpy (any environment that has it), given the folder of llama.cpp's built shared
libraries (`lib_dir` in the JSON of `scripts/llama-tools --print`):
`python -m fixturegen.ggml_quant_iq OUT LIB_DIR`. The data is deterministic: a generator
seeded by each case's name.
"""

import ctypes
import hashlib
import json
import os
import sys
import zlib
from pathlib import Path

import numpy as np

RECORD = "records.json"

# ggml's numbers of the grid types and whether ggml_quantize_requires_imatrix says yes.
TYPES = {
    "IQ2_XXS": (16, True),
    "IQ2_XS": (17, True),
    "IQ3_XXS": (18, False),
    "IQ1_S": (19, True),
    "IQ3_S": (21, False),
    "IQ2_S": (22, False),
    "IQ1_M": (29, False),
}

F32_MAX = np.finfo(np.float32).max
SMALLEST_SUBNORMAL = np.float32(1e-45)


def cases() -> list:
    """(name, rows as a float32 array, importance weights) of every case."""
    out = []

    def case(name, make, n_per_row=512, imatrix=None):
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        rows = np.ascontiguousarray(make(rng, n_per_row), dtype="<f4")
        assert rows.ndim == 2 and rows.shape[1] == n_per_row, name
        weights = imatrix(rng, n_per_row) if imatrix else positive_weights(rng, n_per_row)
        out.append((name, rows, np.ascontiguousarray(weights, dtype="<f4")))

    case("normal", lambda r, n: r.standard_normal((4, n)))
    case("single-block", lambda r, n: r.standard_normal((3, n)) * 0.02, n_per_row=256)
    case("scaled", lambda r, n: r.standard_normal((4, n)) * np.array([[1e-4], [3e-2], [7.0], [2e3]]))
    case("heavy-tails", lambda r, n: r.standard_t(2, (3, n)))
    case("zeros", zeros)
    case("constant", lambda r, n: np.array([[1.0], [-0.5], [3e-3], [1e4]]) * np.ones((4, n)))
    case("ties", lambda r, n: r.integers(-2, 3, (3, n)) * 0.5)
    case("one-sign", lambda r, n: np.abs(r.standard_normal((2, n))) * np.array([[1.0], [-1.0]]))
    case("extremes", extremes)
    case("subnormals", subnormals)
    case("sparse-imatrix", lambda r, n: r.standard_normal((2, n)), imatrix=sparse_weights)
    case("nan", lambda r, n: poisoned(r, n, np.nan))
    case("inf", lambda r, n: poisoned(r, n, np.inf))
    return out


def positive_weights(rng, n):
    """Importance weights as llama-imatrix makes them: positive, spread over magnitudes."""
    return np.exp(rng.standard_normal(n) * 1.5) * 0.1


def sparse_weights(rng, n):
    """Positive weights with a quarter of them zero (columns never activated)."""
    w = positive_weights(rng, n)
    w[rng.random(n) < 0.25] = 0.0
    return w


def zeros(rng, n):
    """A row of zeros, a row whose first block is zeros, a row with zeros scattered, and rows
    whose sub-blocks alternate between zeros and values (every other 16, every other 32)."""
    rows = rng.standard_normal((5, n))
    rows[0] = 0.0
    rows[1, :256] = 0.0
    rows[2, rng.random(n) < 0.3] = 0.0
    rows[3].reshape(-1, 32)[::2] = 0.0
    rows[4].reshape(-1, 16)[1::2] = 0.0
    rows[4, 256:288] = -0.0
    return rows


def extremes(rng, n):
    """NaN-free extremes: the largest floats, huge values whose squares overflow, a single huge
    value among ordinary ones, half-precision's limits."""
    rows = rng.standard_normal((6, n))
    rows[0] = np.where(rng.random(n) < 0.5, F32_MAX, -F32_MAX)
    rows[1] *= 1e30
    rows[2, 7] = 1e20
    rows[3] = np.clip(rows[3] * 65504.0, -65504.0, 65504.0)
    rows[4] *= 1e18
    rows[5] = rows[5] * 1e-30
    return rows


def subnormals(rng, n):
    """Subnormal floats alone, mixed with normal ones, and the smallest of them."""
    tiny = np.float32(np.finfo(np.float32).smallest_normal)
    rows = rng.standard_normal((4, n)).astype(np.float32)
    rows[0] = rows[0] * tiny * np.float32(0.5)
    rows[1, ::2] = rows[1, ::2] * tiny * np.float32(0.01)
    rows[2] = np.where(rng.random(n) < 0.5, SMALLEST_SUBNORMAL, -SMALLEST_SUBNORMAL)
    rows[3] = rows[3] * np.float32(1e-20)
    return rows


def poisoned(rng, n, value):
    """Ordinary rows with one special value in one block, and a row of it alone."""
    rows = rng.standard_normal((3, n))
    rows[0, 300] = value
    rows[1, 5] = -value
    rows[2, :] = value
    return rows


def generate(out: Path, lib_dir: Path) -> None:
    lib = load(lib_dir)
    out.mkdir(parents=True, exist_ok=True)
    made = cases()
    inputs, imatrices, records = bytearray(), bytearray(), []
    for name, rows, weights in made:
        records.append(
            {
                "name": name,
                "rows": rows.shape[0],
                "n_per_row": rows.shape[1],
                "input_offset": len(inputs),
                "imatrix_offset": len(imatrices),
                "input_sha256": hashlib.sha256(rows.tobytes()).hexdigest(),
                "imatrix_sha256": hashlib.sha256(weights.tobytes()).hexdigest(),
            }
        )
        inputs += rows.tobytes()
        imatrices += weights.tobytes()
    (out / "inputs.f32").write_bytes(bytes(inputs))
    (out / "imatrix.f32").write_bytes(bytes(imatrices))

    results = []
    for tname, (tid, needs_imatrix) in TYPES.items():
        lib.ggml_quantize_init(tid)
        blob = bytearray()
        for name, rows, weights in made:
            for with_imatrix in (True, False):
                if needs_imatrix and not with_imatrix:
                    continue
                imatrix = weights if with_imatrix else None
                got = quantize_in_child(lib, tid, rows, imatrix)
                aborted = []
                if got is None:
                    # Row by row, to keep the rows ggml does quantize.
                    got = b""
                    for i in range(rows.shape[0]):
                        row = quantize_in_child(lib, tid, rows[i : i + 1], imatrix)
                        if row is None:
                            aborted.append(i)
                        else:
                            got += row
                results.append(
                    {
                        "type": tname,
                        "case": name,
                        "imatrix": with_imatrix,
                        "offset": len(blob),
                        "bytes": len(got),
                        "sha256": hashlib.sha256(got).hexdigest(),
                        "aborted_rows": aborted,
                    }
                )
                blob += got
        (out / f"{tname}.bin").write_bytes(bytes(blob))

    version = ggml_version(lib_dir)
    record = {"producer": f"ggml {version} (llama.cpp vendored in llama-cpp-python 0.3.36), ggml_quantize_chunk"}
    lines = ",\n".join(f"    {json.dumps(r)}" for r in records)
    result_lines = ",\n".join(f"    {json.dumps(r)}" for r in results)
    text = (
        f'{{\n  "producer": {json.dumps(record["producer"])},\n  "cases": [\n{lines}\n  ],\n'
        f'  "results": [\n{result_lines}\n  ]\n}}\n'
    )
    (out / RECORD).write_text(text, encoding="utf-8")
    aborted = sum(len(r["aborted_rows"]) for r in results)
    print(f"wrote {len(records)} cases, {len(results)} quantizations ({aborted} rows aborted) to {out}", flush=True)


def load(lib_dir: Path):
    lib = ctypes.CDLL(str(lib_dir / "libggml-base.so"))
    lib.ggml_quantize_init.argtypes = [ctypes.c_int]
    lib.ggml_quantize_init.restype = None
    lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    lib.ggml_row_size.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_void_p,
    ]
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    return lib


def quantize_in_child(lib, tid: int, rows: np.ndarray, weights) -> bytes | None:
    """ggml's bytes for `rows`, or None when ggml aborts (in a forked child, so that an abort
    ends only the child). The grids are built by the parent beforehand (ggml_quantize_init),
    so the child runs no OpenMP region."""
    nrows, n_per_row = rows.shape
    size = lib.ggml_row_size(tid, n_per_row) * nrows
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        dst = ctypes.create_string_buffer(size)
        imatrix = None if weights is None else weights.ctypes.data
        # Silence ggml's own messages on the way to an abort.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        written = lib.ggml_quantize_chunk(tid, rows.ctypes.data, dst, 0, nrows, n_per_row, imatrix)
        data = dst.raw[:written] if written == size else b""
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view) :]
        os._exit(0 if written == size else 3)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 1 << 16):
        chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        return b"".join(chunks)
    if os.WIFSIGNALED(status):
        return None
    sys.exit(f"ggml_quantize_chunk of type {tid} wrote an unexpected size (exit status {status})")


def ggml_version(lib_dir: Path) -> str:
    """ggml's version from the name its shared library carries (libggml-base.so.X.Y.Z)."""
    names = sorted(p.name for p in lib_dir.glob("libggml-base.so.*.*.*"))
    return names[-1].removeprefix("libggml-base.so.") if names else "unknown"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m fixturegen.ggml_quant_iq OUT LIB_DIR")
    generate(Path(sys.argv[1]), Path(sys.argv[2]))
