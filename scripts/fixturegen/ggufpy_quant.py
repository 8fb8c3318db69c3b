"""Rows quantized by gguf-py's numpy quantizers (`gguf.quants.quantize`, gguf 0.19), on the same
rows as ggml's records (`tests/fixtures/ggml-quant/`, made by `fixturegen.ggml_quant`).

gguf-py quantizes BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, TQ1_0, TQ2_0 and MXFP4 (F16 is numpy's own
cast there) and takes no importance matrix. For each of those types and each case of ggml's
inputs whose rows are whole blocks of it and hold no infinity or NaN (gguf-py warns and
computes what numpy gives there), the rows are quantized by gguf-py and compared here, byte for
byte, with ggml's output for the same rows without importance: the record keeps gguf-py's
bytes and, for every case, the rows where gguf-py's differ from ggml's. The library follows
ggml (docs/gguf.md says where and why they part).

Those few cases show few differences, so a search follows when ggml's library is given: for
each type, 4096 random rows of 256 values at scales from 1e-3 to 1e3, quantized by gguf-py and
by ggml (`ggml_quantize_chunk` through ctypes); up to 16 rows where the two part are kept (their
values in `found.f32`, both outputs recorded) and how many parted of the 4096.

Written to OUT: `<TYPE>.bin` (gguf-py's outputs, one case after another), `found.f32` and
`found-<TYPE>.bin` (the rows where they part: gguf-py's row, then ggml's, row after row) and
`ggufpy.json`. Runs in the environment that has gguf 0.19:
`python -m fixturegen.ggufpy_quant OUT GGML_QUANT_FOLDER [LIBGGML_BASE]`.
"""

import hashlib
import json
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType
from gguf.quants import quantize

RECORD = "ggufpy.json"
TYPES = ["BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


SEARCH_ROWS, SEARCH_WIDTH, KEEP = 4096, 256, 16


def ggml_library(path: str):
    import ctypes

    lib = ctypes.CDLL(path)
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    return lib


def ggml_quantize(lib, qtype: int, rows: np.ndarray, size: int) -> bytes:
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    dst = np.zeros(size, dtype=np.uint8)
    written = lib.ggml_quantize_chunk(qtype, rows.ctypes.data, dst.ctypes.data, 0, rows.shape[0], rows.shape[1],
                                      None)
    assert written == size, f"type {qtype}: ggml wrote {written} bytes, {size} expected"
    return dst.tobytes()


def search(lib, out: Path, found: bytearray, name: str) -> dict:
    """Rows where gguf-py and ggml part, among SEARCH_ROWS random ones."""
    qtype = GGMLQuantizationType[name]
    g = np.random.default_rng(int.from_bytes(hashlib.sha256(f"search {name}".encode()).digest()[:8], "little"))
    scales = 10.0 ** g.uniform(-3, 3, size=(SEARCH_ROWS, 1))
    rows = (g.standard_normal((SEARCH_ROWS, SEARCH_WIDTH)) * scales).astype(np.float32)
    mine = quantize(rows, qtype)
    row_bytes = mine.shape[1]
    theirs = np.frombuffer(ggml_quantize(lib, int(qtype), rows, mine.size), dtype=np.uint8).reshape(mine.shape)
    unlike = np.nonzero((mine != theirs).any(axis=1))[0]
    kept = unlike[:KEEP]
    blob = b"".join(mine[i].tobytes() + theirs[i].tobytes() for i in kept)
    file = f"found-{name}.bin"
    (out / file).write_bytes(blob)
    at = len(found) // 4
    found += rows[kept].tobytes()
    return {"rows": SEARCH_ROWS, "n_per_row": SEARCH_WIDTH, "unlike": int(unlike.size), "kept": int(kept.size),
            "row_bytes": int(row_bytes), "inputs_offset": at, "file": file, "sha256": sha256(blob)}


def main() -> None:
    out, ggml = Path(sys.argv[1]), Path(sys.argv[2])
    lib = ggml_library(sys.argv[3]) if len(sys.argv) > 3 else None
    found = bytearray()
    out.mkdir(parents=True, exist_ok=True)
    ggml_record = json.loads((ggml / "quant.expected.json").read_text())
    inputs = np.frombuffer((ggml / ggml_record["inputs"]["file"]).read_bytes(), dtype="<f4")
    cases = {c["name"]: c for c in ggml_record["inputs"]["cases"]}
    ggml_types = {t["type"]: t for t in ggml_record["types"]}
    types = []
    for name in TYPES:
        qtype = GGMLQuantizationType[name]
        ggml_type = ggml_types[name]
        ggml_blob = (ggml / ggml_type["file"]).read_bytes()
        blob = bytearray()
        records = []
        for r in ggml_type["records"]:
            if r["importance"] is not None or "bytes" not in r:
                continue
            case = cases[r["case"]]
            rows = inputs[case["offset"]:case["offset"] + case["rows"] * case["n_per_row"]]
            if not np.isfinite(rows).all():
                continue
            rows = rows.reshape(case["rows"], case["n_per_row"])
            mine = quantize(rows, qtype).tobytes()
            theirs = ggml_blob[r["offset"]:r["offset"] + r["bytes"]]
            assert len(mine) == len(theirs), f"{name} / {r['case']}: {len(mine)} bytes, ggml {len(theirs)}"
            row_bytes = r["row_bytes"]
            differ = [i for i in range(case["rows"])
                      if mine[i * row_bytes:(i + 1) * row_bytes] != theirs[i * row_bytes:(i + 1) * row_bytes]]
            records.append({"case": r["case"], "row_bytes": row_bytes, "offset": len(blob), "bytes": len(mine),
                            "rows_unlike_ggml": differ})
            blob += mine
        file = f"{name}.bin"
        (out / file).write_bytes(bytes(blob))
        entry = {"type": name, "id": int(qtype), "file": file, "sha256": sha256(bytes(blob)), "records": records}
        if lib is not None:
            entry["search"] = search(lib, out, found, name)
        types.append(entry)
    (out / "found.f32").write_bytes(bytes(found))
    record = {
        "producer": f"gguf {version('gguf')}: gguf.quants.quantize (numpy {np.__version__})",
        "inputs": {"folder": "../ggml-quant", "file": ggml_record["inputs"]["file"],
                   "sha256": ggml_record["inputs"]["sha256"]},
        "found": {"file": "found.f32", "sha256": sha256(bytes(found))},
        "types": types,
    }
    (out / RECORD).write_text(json.dumps(record, indent=1) + "\n")
    for t in types:
        unlike = sum(len(r["rows_unlike_ggml"]) for r in t["records"])
        total = sum(r["bytes"] // r["row_bytes"] for r in t["records"])
        found_note = f"; search: {t['search']['unlike']} of {t['search']['rows']} unlike" if "search" in t else ""
        print(f"{t['type']}: {total} rows, {unlike} unlike ggml's{found_note}")


if __name__ == "__main__":
    main()
