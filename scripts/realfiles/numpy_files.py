"""NumPy .npy and .npz files as numpy reads them without unpickling: a .npy's one array is named
by the file's stem, an .npz's by its member names without `.npy`."""

import zipfile
from pathlib import Path

import numpy as np

from reading import NotTensor, Reading, numeric


def read(path: Path) -> Reading:
    if path.suffix == ".npy":
        with path.open("rb") as f:
            return Reading("npy", {path.stem: array(f)})
    entries = {}
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if name.endswith(".npy"):
                with z.open(name) as f:
                    entries[name[: -len(".npy")]] = array(f)
    return Reading("npz", entries)


def array(f):
    """The array of an open .npy stream, or why it is not a tensor (object arrays are pickles:
    their dtype is read from the header, nothing is unpickled)."""
    version = np.lib.format.read_magic(f)
    reader = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(version)
    if reader is None:
        f.seek(0)
        return numeric(np.lib.format.read_array(f, allow_pickle=False))
    _, _, dtype = reader(f)
    if dtype.hasobject:
        return NotTensor("object array", str(dtype))
    f.seek(0)
    return numeric(np.lib.format.read_array(f, allow_pickle=False))
