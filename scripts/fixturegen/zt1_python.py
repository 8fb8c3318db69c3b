"""zTensor 1.x fixtures written by the pip package `ztensor` 1.2.3 (the format `ZTEN1000`,
which pip ztensor 2.x no longer reads), with records of what its own reader reads back.

Runs in the zTensor 1 environment (`tfvenv.ZT1_VENV`: ztensor 1.2.3, numpy, ml_dtypes):
`python -m fixturegen.zt1_python OUT`. Its Python writer writes dense tensors only.
"""

import hashlib
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import ztensor

from .common import pretty_json, sample

PRODUCER = "ztensor 1.2.3 (pip)"

DTYPES = {
    "float64": np.dtype("float64"),
    "float32": np.dtype("float32"),
    "float16": np.dtype("float16"),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "int64": np.dtype("int64"),
    "int32": np.dtype("int32"),
    "int16": np.dtype("int16"),
    "int8": np.dtype("int8"),
    "uint64": np.dtype("uint64"),
    "uint32": np.dtype("uint32"),
    "uint16": np.dtype("uint16"),
    "uint8": np.dtype("uint8"),
    "bool": np.dtype(bool),
}


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    shapes = [(7,), (3, 5), (2, 3, 4), (1, 2, 1, 3)]
    write(out / "dtypes.zt", [(d, sample(d, t, shapes[i % 4]), {}) for i, (d, t) in enumerate(DTYPES.items())])
    write(out / "zstd.zt", [
        ("compressible", np.tile(np.arange(64, dtype=np.float32), 64), {"compress": True}),
        ("level9", sample("level9", np.dtype("int16"), (40,)), {"compress": 9}),
        ("mask", sample("mask", np.dtype(bool), (5, 5)), {"compress": True}),
        ("raw", sample("raw", np.dtype(ml_dtypes.bfloat16), (6,)), {}),
    ])
    write(out / "checksums.zt", [
        ("crc32c", sample("crc", np.dtype("float32"), (3, 3)), {"checksum": "crc32c"}),
        ("sha256", sample("sha", np.dtype("int64"), (4,)), {"checksum": "sha256"}),
        ("zstd_crc32c", np.zeros(500, dtype=np.uint8), {"compress": True, "checksum": "crc32c"}),
        ("zstd_sha256", np.ones(300, dtype=np.float16), {"compress": True, "checksum": "sha256"}),
    ])
    write(out / "zero_size.zt", [
        ("before", sample("before", np.dtype("float32"), (3,)), {}),
        ("empty", np.zeros((2, 0, 3), dtype=np.float64), {}),
        ("scalar", np.array(2.5, dtype=np.float32), {}),
        ("after", sample("after", np.dtype("int32"), (2, 2)), {}),
    ])
    write(out / "empty.zt", [])
    path = out / "appended.zt"
    write(path, [("first", sample("first", np.dtype("float32"), (4,)), {})], record_it=False)
    with ztensor.Writer.append(str(path)) as w:
        w.write_numpy("second", sample("second", np.dtype("uint16"), (3,)))
    record(path)


def write(path: Path, tensors: list, record_it: bool = True) -> None:
    path.unlink(missing_ok=True)
    with ztensor.Writer(str(path)) as w:
        for name, array, options in tensors:
            w.write_numpy(name, array, **options)
    if record_it:
        record(path)


def record(path: Path) -> None:
    """Writes `path`.expected.json: what ztensor 1.2.3's reader reads back from `path`."""
    reader = ztensor.Reader(str(path))
    tensors = []
    for name in reader.keys():
        meta = reader.metadata(name)
        data = np.ascontiguousarray(reader.read_numpy(name, copy=True)).tobytes()
        components = {role: {k: c[k] for k in ("dtype", "offset", "length", "encoding")} for role, c in meta.components.items()}
        tensors.append({"name": name, "dtype": meta.dtype, "shape": [int(d) for d in meta.shape], "layout": meta.format,
                        "components": components, "sha256": hashlib.sha256(data).hexdigest()})
    rec = {"producer": PRODUCER, "file": path.name, "objects": tensors}
    path.with_name(path.name + ".expected.json").write_text(pretty_json(rec) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    generate(Path(sys.argv[1]))
