"""HDF5 files (.h5, .hdf5, netCDF-4 .nc, MATLAB v7.3 .mat) as h5py reads them, each dataset by
its path without the leading '/'. MATLAB v4/v5 files (read with scipy.io.loadmat) and netCDF-3
files are not HDF5: tensorfile does not claim them."""

from pathlib import Path

import h5py

from reading import NotTensor, Reading, numeric


def read(path: Path) -> Reading:
    if not h5py.is_hdf5(path):
        return other(path)
    entries = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            entries[name] = dataset(obj)

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return Reading("hdf5", entries)


def dataset(ds: "h5py.Dataset"):
    try:
        return value(ds)
    except Exception as e:  # noqa: BLE001 (a type or filter h5py lacks, a broken file: anything)
        return NotTensor("the real reader cannot read it", f"{type(e).__name__}: {e}")


def value(ds: "h5py.Dataset"):
    dtype = ds.dtype
    if h5py.check_string_dtype(dtype) is not None:
        return NotTensor("string", str(dtype))
    if h5py.check_vlen_dtype(dtype) is not None:
        return NotTensor("variable-length", str(dtype))
    if h5py.check_ref_dtype(dtype) is not None:
        return NotTensor("reference", str(dtype))
    if ds.shape is None:
        return NotTensor("null dataspace")
    return numeric(ds[()])


def other(path: Path) -> Reading:
    """A file with an HDF5 suffix that is not HDF5."""
    head = path.read_bytes()[:4]
    if head[:3] == b"CDF":
        return Reading("netCDF-3", {}, claimed=False)
    if path.suffix == ".mat":
        from scipy import io

        try:
            variables = io.loadmat(path)
        except Exception as e:  # noqa: BLE001
            return Reading("MATLAB v4/v5 (scipy.io.loadmat fails)", {"": NotTensor("the real reader cannot read it", str(e))},
                           claimed=False)
        entries = {k: numeric(v) if not isinstance(v, (bytes, str, list)) else NotTensor("string")
                   for k, v in variables.items() if not k.startswith("__")}
        return Reading("MATLAB v4/v5", entries, claimed=False)
    return Reading("not HDF5", {}, claimed=False)

