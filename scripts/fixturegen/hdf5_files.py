"""The HDF5 file-structure fixtures written by h5py (and Keras when it can be imported), and
their records as h5py reads them back: groups, links and attributes, the two superblock and
group generations, and the layouts of Keras weights files.

  groups_earliest.h5   libver 'earliest' (superblock 0, object headers v1, old-style groups:
                       symbol tables, B-tree v1, local heaps): nested groups, a dataset reachable
                       by two hard links, a hard link back to the root (a cycle), a soft and an
                       external link, attributes of every kind (numbers, numeric arrays, fixed
                       and variable-length strings, arrays of strings) on the root, a group
                       and a dataset
  groups_latest.h5     the same with libver 'latest' (superblock 3, object headers v2, link
                       messages), plus a group of 40 links (dense: fractal heap and B-tree v2
                       name index) and a dataset with 20 attributes (dense attribute storage)
  userblock.h5         a 512-byte user block before the superblock
  keras_legacy.h5      the layout of Hugging Face `tf_model.h5` files (Keras 2 `save_weights`):
                       root attributes layer_names, backend, keras_version, a group per layer
                       with weight_names, datasets `layer/layer/kernel:0`; written with h5py
                       following that layout (Keras 2 is not installable beside Keras 3)
  keras3.weights.h5    `model.save_weights` of Keras 3 (torch backend), when keras imports

Each record lists the datasets as h5py's `visititems` reaches them (each object once, paths
without the leading '/') with dtype, shape and the sha256 of the row-major little-endian bytes
of `ds[()]`, and the attributes of every object ('' for the root) as h5py reads them.

Run alone (inside an environment with h5py and numpy):
  PYTHONPATH=scripts python -m fixturegen.hdf5_files tests/fixtures/hdf5/files
"""

import hashlib
import os
import sys
from pathlib import Path

import h5py
import numpy as np

from . import hdf5_wild
from .common import pretty_json, row_major_le, sample, value

RECORD_DTYPES = {
    "b1": "bool", "i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16", "i4": "int32",
    "u4": "uint32", "i8": "int64", "u8": "uint64", "f2": "float16", "f4": "float32",
    "f8": "float64", "c8": "complex64", "c16": "complex128",
}


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    # keras3.weights.h5 is replaced only where keras is installed.
    for old in [*out.glob("*.h5"), *out.glob("*.h5.expected.json")]:
        if not old.name.startswith("keras3."):
            old.unlink()
    for libver in ["earliest", "latest"]:
        path = out / f"groups_{libver}.h5"
        with h5py.File(path, "w", libver=libver) as f:
            groups(f, libver == "latest")
        record(path)
    path = out / "userblock.h5"
    with h5py.File(path, "w", userblock_size=512) as f:
        f.create_dataset("x", data=sample("ub", np.dtype("f4"), (4, 4)))
        f.attrs["note"] = "after a user block"
    record(path)
    path = out / "keras_legacy.h5"
    keras_legacy(path)
    record(path)
    path = out / "keras3.weights.h5"
    if keras3(path):
        record(path)
    # Other producers' forms, beside these.
    hdf5_wild.generate(out.parent / "wild")


def attributes(obj) -> None:
    """One attribute of every kind h5py writes for Python and numpy values."""
    obj.attrs["int"] = np.int64(-7)
    obj.attrs["uint8"] = np.uint8(200)
    obj.attrs["float"] = 0.25
    obj.attrs["float32s"] = np.array([1.5, -2.0, 3.25], dtype="f4")
    obj.attrs["matrix"] = np.arange(6, dtype="i2").reshape(2, 3)
    obj.attrs["vlen_text"] = "variable-length UTF-8 ✓"
    obj.attrs["fixed_bytes"] = np.bytes_(b"fixed ascii")
    obj.attrs["names"] = [b"dense", b"dense_1", b"output"]
    obj.attrs["vlen_names"] = ["alpha", "beta"]
    obj.attrs["flag"] = np.bool_(True)


def groups(f: h5py.File, latest: bool) -> None:
    attributes(f)
    f.create_dataset("top", data=sample("top", np.dtype("f4"), (3, 4)))
    deep = f.create_group("a/b/c")
    deep.create_dataset("leaf", data=sample("leaf", np.dtype("i8"), (5,)))
    attributes(f["a"])
    ds = f["a"].create_dataset("weights", data=sample("weights", np.dtype("f8"), (2, 3)))
    attributes(ds)
    f["a/b"].create_dataset("scalar", data=np.float32(3.5))
    # A second hard link to the same dataset, and a hard link back to the root.
    f["z_alias"] = ds
    f["a/b/up"] = f["/"]
    f["soft"] = h5py.SoftLink("/a/weights")
    f["external"] = h5py.ExternalLink("elsewhere.h5", "/data")
    if latest:
        many = f.create_group("many")
        for i in range(40):
            many.create_dataset(f"item{i:02d}", data=np.full((2,), i, dtype="u2"))
        dense = f.create_dataset("dense_attrs", data=np.arange(4, dtype="i4"))
        for i in range(20):
            dense.attrs[f"attr{i:02d}"] = np.int32(i * 3)


def keras_legacy(path: Path) -> None:
    """The layout Keras 2's `save_weights` gives `tf_model.h5` (hdf5_format.py): root attributes
    `layer_names`, `backend`, `keras_version`; per layer a group with `weight_names` holding a
    group of the layer's name holding datasets `kernel:0`, `bias:0`."""
    layers = {
        "tf_bert_model": [("embeddings/word_embeddings/weight:0", (30, 8)), ("pooler/dense/kernel:0", (8, 8)), ("pooler/dense/bias:0", (8,))],
        "dense": [("kernel:0", (8, 3)), ("bias:0", (3,))],
        "dropout": [],
    }
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = [name.encode() for name in layers]
        f.attrs["backend"] = b"tensorflow"
        f.attrs["keras_version"] = b"2.15.0"
        for layer, weights in layers.items():
            g = f.create_group(layer)
            g.attrs["weight_names"] = [f"{layer}/{w}".encode() for w, _ in weights]
            for w, shape in weights:
                g.create_dataset(f"{layer}/{w}", data=sample(f"{layer}/{w}", np.dtype("f4"), shape))


def keras3(path: Path) -> bool:
    """`model.save_weights` of a small Keras 3 model; False when keras cannot be imported."""
    os.environ.setdefault("KERAS_BACKEND", "torch")
    try:
        import keras
    except ImportError:
        print("keras is not installed: keras3.weights.h5 left as it is", flush=True)
        return False
    keras.utils.set_random_seed(17)
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4, activation="relu"), keras.layers.LayerNormalization(), keras.layers.Dense(2)])
    model.save_weights(str(path))
    return True


def record(path: Path) -> None:
    """Writes `path`.expected.json: every dataset and every attribute as h5py reads them."""
    datasets = []
    attrs = {}
    with h5py.File(path, "r") as f:
        attrs[""] = {k: value(f.attrs[k]) for k in sorted(f.attrs)}
        names = []

        def visit(name, obj):
            if obj.attrs:
                attrs[name] = {k: value(obj.attrs[k]) for k in sorted(obj.attrs)}
            if isinstance(obj, h5py.Dataset):
                names.append(name)

        f.visititems(visit)
        for name in names:
            ds = f[name]
            code = "b1" if ds.dtype.kind == "b" else f"{ds.dtype.kind}{ds.dtype.itemsize}"
            entry = {"name": name, "dtype": RECORD_DTYPES[code], "shape": [int(d) for d in ds.shape]}
            entry["sha256"] = hashlib.sha256(row_major_le(np.asarray(ds[()]))).hexdigest()
            datasets.append(entry)
    document = {
        "producer": f"h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}, numpy {np.__version__})",
        "file": path.name,
        "datasets": datasets,
        "attributes": attrs,
    }
    path.with_name(path.name + ".expected.json").write_text(pretty_json(document) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    generate(Path(sys.argv[1]))
