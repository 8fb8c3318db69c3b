"""Interop of the `tensorfile` binary with h5py: every HDF5 fixture (files made by h5py, the
Keras weights layouts, the dataset fixtures of every layout, chunk index and filter, and other
producers' forms: user blocks, MATLAB v7.3 `.mat`, netCDF-4 `.nc`), recognised from content,
converts to safetensors whose tensors, read back with safetensors' numpy loader, equal the
arrays h5py reads (`ds[()]`) under the same names (paths without the leading '/').

Needs `h5py safetensors numpy pytest`; run by `scripts/interop`.
The binary is $TENSORFILE_BIN, else target/release/tensorfile or target/debug/tensorfile.
"""

import json
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest
from safetensors.numpy import load_file

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "hdf5"
HDF5_FIXTURES = sorted(p for pattern in ("*.h5", "*.mat", "*.nc") for p in FIXTURES.rglob(pattern))


def run(*args) -> str:
    done = subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"tensorfile {' '.join(map(str, args))}: {done.stdout}{done.stderr}"
    return done.stdout


def h5py_arrays(path: Path) -> dict:
    """Every dataset h5py reads as a tensor, by path, each object once (as `visititems`)."""
    out = {}

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset) or obj.shape is None:
            return
        # An HDF5 array datatype is a numpy subarray dtype: h5py reads it as trailing
        # dimensions of its base type. Long doubles (float128, complex256) have no tensor
        # dtype: tensorfile refuses them with a rule.
        base = obj.dtype.base
        long_double = (base.kind == "f" and base.itemsize > 8) or (base.kind == "c" and base.itemsize > 16)
        if base.kind in "biufc" and not long_double:
            out[name] = np.asarray(obj[()])

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return out


@pytest.mark.parametrize("path", HDF5_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_convert_to_safetensors_equals_h5py(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.safetensors"
    run("convert", path, out, "--skip-unsupported")
    ours = load_file(str(out))
    theirs = h5py_arrays(path)
    listed = json.loads(run("ls", path, "--json"))
    refused = {t["name"] for t in listed if t["kind"] == "unreadable"}
    # Refused: what the fixtures name so, and what h5py gives as no numeric array (h5py.Empty).
    assert all(name.startswith("refused") or name not in theirs for name in refused), refused
    for name, want in theirs.items():
        if name in refused:
            continue
        if want.dtype.kind == "c" and want.dtype.itemsize == 16:
            # safetensors has no complex128: left out by --skip-unsupported.
            assert name not in ours, name
            continue
        got = ours[name]
        assert got.shape == want.shape, name
        assert got.dtype == want.dtype.newbyteorder("="), name
        assert np.array_equal(got, want.astype(want.dtype.newbyteorder("=")), equal_nan=True), name
    assert not set(ours) - set(theirs), f"tensors h5py does not list: {set(ours) - set(theirs)}"
