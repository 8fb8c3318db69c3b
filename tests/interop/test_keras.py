"""Interop of the `tensorfile` binary with Keras 3 `.keras` files: every `.keras` fixture
converts to safetensors whose tensors, read back with safetensors' numpy loader, are the
datasets h5py reads from its `model.weights.h5` member under the same names; and, where Keras
is installed (the full set, `scripts/interop --full`), the values `keras.saving.load_model`
loads into every layer's and the optimizer's variables.

Needs `h5py safetensors numpy pytest` (Keras with a backend for the second test); run by
`scripts/interop`. The binary is $TENSORFILE_BIN, else target/release/tensorfile or
target/debug/tensorfile.
"""

import io
import json
import os
import subprocess
import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest
from safetensors.numpy import load_file

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "keras"
KERAS_FIXTURES = sorted(FIXTURES.glob("*.keras"))


def run(*args) -> str:
    done = subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"tensorfile {' '.join(map(str, args))}: {done.stdout}{done.stderr}"
    return done.stdout


def converted(path: Path, tmp_path: Path) -> dict:
    out = tmp_path / "out.safetensors"
    run("convert", path, out)
    return load_file(str(out))


def h5py_arrays(path: Path) -> dict:
    """Every dataset of the weights member, by path, as h5py reads it."""
    out = {}
    with zipfile.ZipFile(path) as z, h5py.File(io.BytesIO(z.read("model.weights.h5")), "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, np.asarray(obj[()])) if isinstance(obj, h5py.Dataset) else None)
    return out


def test_every_fixture_is_there() -> None:
    assert {p.name for p in KERAS_FIXTURES} >= {"sequential.keras", "functional.keras", "deflated.keras"}


@pytest.mark.parametrize("path", KERAS_FIXTURES, ids=lambda p: p.name)
def test_convert_to_safetensors_equals_h5py_on_the_weights_member(path: Path, tmp_path: Path) -> None:
    ours = converted(path, tmp_path)
    theirs = h5py_arrays(path)
    assert sorted(ours) == sorted(theirs)
    for name, want in theirs.items():
        assert ours[name].dtype == want.dtype and ours[name].shape == want.shape, name
        assert np.array_equal(ours[name], want), name
    listed = [t["name"] for t in json.loads(run("ls", path, "--json"))]
    assert listed == list(theirs), "tensors listed in the order of h5py's visititems"


@pytest.mark.parametrize("path", KERAS_FIXTURES, ids=lambda p: p.name)
def test_convert_to_safetensors_equals_what_keras_loads(path: Path, tmp_path: Path) -> None:
    if "KERAS_BACKEND" not in os.environ:
        import importlib.util

        os.environ["KERAS_BACKEND"] = "torch" if importlib.util.find_spec("torch") else "jax"
    try:
        import keras
        from keras.src.saving.saving_lib import _get_unique_name
        from keras.src.utils.naming import to_snake_case
    except ImportError as err:
        pytest.skip(f"Keras with a backend is not installed ({err.name}): scripts/interop --full")
    ours = converted(path, tmp_path)
    model = keras.saving.load_model(str(path))
    loaded = 0
    used = {}
    for layer in model.layers:
        # The group Keras's saving code keeps a layer's variables in.
        group = _get_unique_name(to_snake_case(type(layer).__name__), used)
        for i, v in enumerate(layer.trainable_variables + layer.non_trainable_variables):
            want = keras.ops.convert_to_numpy(v)
            got = ours[f"layers/{group}/vars/{i}"]
            assert got.shape == want.shape and np.array_equal(got, want), v.path
            loaded += 1
    if getattr(model, "optimizer", None) is not None and model.optimizer.built:
        for i, v in enumerate(model.optimizer.variables):
            assert np.array_equal(ours[f"optimizer/vars/{i}"], keras.ops.convert_to_numpy(v)), v.path
            loaded += 1
    assert loaded == len(ours), "every tensor is a variable Keras loaded"
