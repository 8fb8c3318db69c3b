"""Interop of the `tensorfile` binary with numpy: the `.npz` (and `.npy`) files `tensorfile
convert` writes load in `numpy.load(allow_pickle=False)` with every array's name, dtype, shape
and values equal to what the producers of the sources recorded: safetensors and zTensor
fixtures, and numpy's own fixtures (both byte orders, Fortran order, 0-d and empty arrays,
deflated archives) read by tensorfile and written back.

Needs `numpy pytest`; run by `scripts/interop`.
The binary is $TENSORFILE_BIN, else target/release/tensorfile or target/debug/tensorfile.
"""

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
# Sources with records of every tensor: (path, record).
OTHER_SOURCES = sorted([*(FIXTURES / "safetensors").glob("*.safetensors"), *(FIXTURES / "zt" / "python").glob("*.zt")])
NUMPY_SOURCES = sorted([*(FIXTURES / "numpy").glob("*.npy"), *(FIXTURES / "numpy").glob("*.npz")])


def convert(src: Path, out: Path) -> None:
    done = subprocess.run([str(BINARY), "convert", str(src), str(out), "--skip-unsupported"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"tensorfile convert {src} {out}: {done.stdout}{done.stderr}"


def record_of(path: Path) -> dict:
    return json.loads(path.with_name(path.name + ".expected.json").read_text(encoding="utf-8"))


def row_major_le(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"), copy=False)).tobytes(order="C")


def numpy_has(dtype: str) -> bool:
    """Whether numpy itself has the dtype: once ml_dtypes is imported (onnx imports it),
    `np.dtype("float8_e5m2")` resolves to one of its types, of kind "f", which numpy lacks."""
    try:
        found = np.dtype(dtype)
    except TypeError:
        return False
    return found.kind in "biufc" and found.type.__module__ == "numpy"


def zip_safe(name: str) -> bool:
    """Whether a name can be an .npz member: tensorfile refuses (and with --skip-unsupported
    leaves out) names that make a zip member leave its archive."""
    parts = name.replace("\\", "/").split("/")
    drive = len(name) >= 2 and name[0].isalpha() and name[1] == ":"
    return not name.startswith(("/", "\\")) and ".." not in parts and not drive


def check(loaded: dict, wanted: list, what: str) -> None:
    """`loaded` (name -> array, as numpy.load gives them) holds exactly `wanted` (records)."""
    assert sorted(loaded) == sorted(t["name"] for t in wanted), what
    for t in wanted:
        a = loaded[t["name"]]
        assert a.dtype.name == t["dtype"], f"{what}: {t['name']}: dtype"
        assert list(a.shape) == t["shape"], f"{what}: {t['name']}: shape"
        assert hashlib.sha256(row_major_le(a)).hexdigest() == t["sha256"], f"{what}: {t['name']}: values"


def load_npz(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return {name: z[name] for name in z.files}


@pytest.mark.parametrize("src", OTHER_SOURCES, ids=lambda p: p.name)
def test_other_formats_convert_to_npz_that_numpy_loads(src: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.npz"
    convert(src, out)
    # Dense tensors of dtypes numpy has; the others (bfloat16, float8, sparse) are left out.
    wanted = [t for t in record_of(src)["tensors"]
              if t.get("layout", "dense") == "dense" and numpy_has(t["dtype"]) and zip_safe(t["name"])]
    loaded = load_npz(out)
    sparse = {t["name"] for t in record_of(src)["tensors"] if t.get("layout", "dense") != "dense"}
    check({k: v for k, v in loaded.items() if k not in sparse}, wanted, src.name)


@pytest.mark.parametrize("src", NUMPY_SOURCES, ids=lambda p: p.name)
def test_numpy_files_convert_back_to_what_numpy_loads(src: Path, tmp_path: Path) -> None:
    record = record_of(src)
    if not record["arrays"]:
        pytest.skip("no array tensorfile reads")
    out = tmp_path / "out.npz"
    convert(src, out)
    check(load_npz(out), record["arrays"], src.name)
    if len(record["arrays"]) == 1:
        name = record["arrays"][0]["name"]
        single = tmp_path / f"{name}.npy"
        convert(src, single)
        check({name: np.load(single, allow_pickle=False)}, record["arrays"], f"{src.name} -> .npy")


def test_the_fixtures_are_there() -> None:
    assert len(OTHER_SOURCES) >= 10 and len(NUMPY_SOURCES) >= 40
