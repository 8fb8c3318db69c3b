"""Keras 3 `.keras` files (`model.save`) and their records, as Keras and h5py read them back.

  sequential.keras   a Sequential model (Conv2D, BatchNormalization, MaxPooling2D, Flatten,
                     Dense), compiled with Adam and trained one step, so that the optimizer's
                     variables are saved too; members stored, as Keras writes them
  sequential.weights.h5  the same model's `model.save_weights` (what a `.keras` must list
                     alike), with h5py's record as the HDF5 fixtures have it
  functional.keras   a functional model of two inputs (Embedding, Conv1D, BatchNormalization,
                     GlobalAveragePooling1D, Concatenate, Dense), not compiled
  deflated.keras     functional.keras re-packed by Python's zipfile with every member deflated
                     (Keras writes its members stored; an archive re-zipped by another tool is
                     deflated), which `keras.saving.load_model` reads alike

A `.keras` file is a zip archive of `metadata.json` (Keras version, date saved), `config.json`
(the model as `serialize_keras_object` gives it) and `model.weights.h5` (the variables,
`layers/<layer>/vars/<i>`, as `model.save_weights` writes them), plus `assets/` when a layer
has assets. Each record lists the members (name, stored or deflated), `metadata.json` as
written, the model as `keras.saving.load_model` builds it (class, name, layers), and the
datasets of the weights member as h5py reads them (`visititems` order, dtype, shape, sha256 of
the row-major little-endian bytes), in the HDF5 fixtures' record format. Every dataset that
is a loaded layer's (or the optimizer's) variable names it (`variable`, Keras's path), after
checking that Keras loaded exactly those values into it.

Run alone (inside an environment with keras, a backend, h5py and numpy):
  PYTHONPATH=scripts python -m fixturegen.keras_files tests/fixtures/keras
"""

import hashlib
import importlib.util
import io
import json
import os
import sys
import zipfile
from pathlib import Path

import h5py
import numpy as np

from .common import pretty_json, row_major_le
from . import hdf5_files
from .hdf5_files import RECORD_DTYPES

WEIGHTS = "model.weights.h5"


def backend() -> str:
    """The backend Keras runs on: as set, else torch where it is installed, else jax."""
    if "KERAS_BACKEND" not in os.environ:
        os.environ["KERAS_BACKEND"] = "torch" if importlib.util.find_spec("torch") else "jax"
    return os.environ["KERAS_BACKEND"]


def generate(out: Path) -> bool:
    """The fixtures into `out` (emptied of older ones); False when keras cannot be imported."""
    backend()
    try:
        import keras
    except ImportError:
        print("keras is not installed: tests/fixtures/keras left as it is", flush=True)
        return False
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.keras"), *out.glob("*.h5"), *out.glob("*.expected.json")]:
        old.unlink()
    sequential(keras, out / "sequential.keras")
    functional(keras, out / "functional.keras")
    deflate(out / "functional.keras", out / "deflated.keras")
    for name in ["sequential.keras", "functional.keras", "deflated.keras"]:
        record(keras, out / name)
    hdf5_files.record(out / "sequential.weights.h5")
    return True


def sequential(keras, path: Path) -> None:
    keras.utils.set_random_seed(23)
    model = keras.Sequential(
        [
            keras.Input((8, 8, 3)),
            keras.layers.Conv2D(4, 3, activation="relu"),
            keras.layers.BatchNormalization(),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dense(5),
        ],
        name="small_cnn",
    )
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=0.01), loss="mse")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 8, 8, 3)).astype("float32")
    y = rng.standard_normal((4, 5)).astype("float32")
    model.fit(x, y, epochs=1, batch_size=4, verbose=0)
    model.save(str(path))
    model.save_weights(str(path.with_name("sequential.weights.h5")))


def functional(keras, path: Path) -> None:
    keras.utils.set_random_seed(29)
    tokens = keras.Input((10,), dtype="int32", name="tokens")
    extra = keras.Input((3,), name="extra")
    x = keras.layers.Embedding(50, 6, name="embed")(tokens)
    x = keras.layers.Conv1D(8, 3, padding="same", name="conv")(x)
    x = keras.layers.BatchNormalization(name="norm")(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Concatenate()([x, extra])
    out = keras.layers.Dense(2, activation="softmax", name="head")(x)
    model = keras.Model([tokens, extra], out, name="two_inputs")
    model.save(str(path))


def deflate(source: Path, path: Path) -> None:
    """`source`'s members, in its order, deflated into `path`."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info, src.read(info), compress_type=zipfile.ZIP_DEFLATED)


def variables(keras, model) -> dict:
    """Dataset path -> the Keras variable loaded from it: `layers/<group>/vars/<i>` for the
    layers' variables (trainable first, as Keras saves them; each layer's group named by
    Keras's own saving code: its class in snake case, `_1`, `_2`... for the next ones of a
    class), `optimizer/vars/<i>` for the optimizer's."""
    from keras.src.saving.saving_lib import _get_unique_name
    from keras.src.utils.naming import to_snake_case

    found = {}
    used = {}
    for layer in model.layers:
        group = _get_unique_name(to_snake_case(type(layer).__name__), used)
        for i, v in enumerate(layer.trainable_variables + layer.non_trainable_variables):
            found[f"layers/{group}/vars/{i}"] = v
    if getattr(model, "optimizer", None) is not None and model.optimizer.built:
        for i, v in enumerate(model.optimizer.variables):
            found[f"optimizer/vars/{i}"] = v
    return found


def record(keras, path: Path) -> None:
    """Writes `path`.expected.json, checking that Keras loaded the weights member's values."""
    model = keras.saving.load_model(str(path))
    loaded = variables(keras, model)
    with zipfile.ZipFile(path) as z:
        members = [
            {"name": i.filename, "method": "deflated" if i.compress_type == zipfile.ZIP_DEFLATED else "stored"}
            for i in z.infolist()
        ]
        metadata = json.loads(z.read("metadata.json"))
        weights = z.read(WEIGHTS)
    datasets = []
    with h5py.File(io.BytesIO(weights), "r") as f:
        names = []
        f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
        for name in names:
            array = np.asarray(f[name][()])
            code = "b1" if array.dtype.kind == "b" else f"{array.dtype.kind}{array.dtype.itemsize}"
            entry = {"name": name, "dtype": RECORD_DTYPES[code], "shape": [int(d) for d in array.shape]}
            entry["sha256"] = hashlib.sha256(row_major_le(array)).hexdigest()
            variable = loaded.pop(name, None)
            if variable is not None:
                value = keras.ops.convert_to_numpy(variable)
                if value.shape != array.shape or not np.array_equal(value, array):
                    raise SystemExit(f"{path}: Keras loaded {variable.path} with other values than {name}")
                entry["variable"] = variable.path
            datasets.append(entry)
    if loaded:
        raise SystemExit(f"{path}: variables without a dataset: {sorted(loaded)}")
    layers = [{"name": layer.name, "class_name": type(layer).__name__} for layer in model.layers]
    document = {
        "producer": f"keras {keras.__version__} ({keras.backend.backend()} backend), h5py {h5py.__version__}",
        "file": path.name,
        "members": members,
        "metadata": metadata,
        "model": {"class_name": type(model).__name__, "name": model.name, "layers": layers},
        "datasets": datasets,
    }
    path.with_name(path.name + ".expected.json").write_text(pretty_json(document) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    generate(Path(sys.argv[1]))
