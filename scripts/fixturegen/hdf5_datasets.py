"""The HDF5 dataset fixtures written by h5py, and their records as h5py reads them back (`ds[()]`):
every storage form of a dataset the tensorfile HDF5 reader handles, and a few it refuses.

  dtypes_earliest.h5   libver 'earliest' (datatype message v1, layout v3, dataspace v1):
                       every numeric dtype in both byte orders, bool, complex64/128, a 0-d, an
                       empty, a compact and an unwritten contiguous dataset, and refused ones
                       (a string, a compound), an enum that is not h5py's bool (read as
                       its base int8)
  dtypes_latest.h5     the same with libver 'latest' (object header v2, layout v4, dataspace v2)
  chunked_earliest.h5  chunked datasets (layout v3, B-tree v1 chunk index): plain, gzip,
                       shuffle+gzip, fletcher32, all three, edge chunks, a partly written one
                       with a fill value, an unwritten one, one with many chunks (a deeper
                       B-tree), a big-endian one, an lzf one (refused)
  chunked_latest.h5    the same forms under libver 'latest' (layout v4) for every chunk index:
                       single chunk (filtered and not), implicit (early allocation, no
                       filters), fixed array (small and paged), extensible array (one
                       unlimited dimension), B-tree v2 (two unlimited dimensions), each with and
                       without filters where HDF5 allows, partly written ones

Each record lists the datasets (paths without the leading '/') in name order with the address
of their object header (h5py's `h5o.get_info`), dtype, shape and the sha256 of the row-major little-endian bytes h5py reads; a dataset tensorfile must
refuse has "refused": true and no digest.

Run alone (inside an environment with h5py and numpy):
  PYTHONPATH=scripts python -m fixturegen.hdf5_datasets tests/fixtures/hdf5/datasets
"""

import hashlib
import sys
from pathlib import Path

import h5py
import numpy as np

from .common import pretty_json, row_major_le, sample

LAYOUTS = {0: "compact", 1: "contiguous", 2: "chunked"}

NUMERIC = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8"]

RECORD_DTYPES = {
    "b": "bool",
    "i1": "int8",
    "u1": "uint8",
    "i2": "int16",
    "u2": "uint16",
    "i4": "int32",
    "u4": "uint32",
    "i8": "int64",
    "u8": "uint64",
    "f2": "float16",
    "f4": "float32",
    "f8": "float64",
    "c8": "complex64",
    "c16": "complex128",
}


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.h5"), *out.glob("*.h5.expected.json")]:
        old.unlink()
    for libver in ["earliest", "latest"]:
        path = out / f"dtypes_{libver}.h5"
        with h5py.File(path, "w", libver=libver, track_order=False) as f:
            dtype_datasets(f)
        record(path)
        path = out / f"chunked_{libver}.h5"
        with h5py.File(path, "w", libver=libver) as f:
            chunked_datasets(f)
            if libver == "latest":
                chunk_index_datasets(f)
        record(path)


def dtype_datasets(f: h5py.File) -> None:
    for code in NUMERIC:
        for order in "<>":
            dtype = np.dtype(order + code)
            f.create_dataset(f"{code}_{'le' if order == '<' else 'be'}", data=sample(code, dtype, (3, 5)))
    f.create_dataset("bool", data=sample("bool", np.dtype(bool), (4, 3)))
    for code in ["c8", "c16"]:
        for order in "<>":
            dtype = np.dtype(order + code)
            f.create_dataset(f"{code}_{'le' if order == '<' else 'be'}", data=sample(code, dtype, (2, 3)))
    f.create_dataset("scalar_f8", data=np.float64(2.5))
    f.create_dataset("scalar_i4_be", data=np.array(-7, dtype=">i4"))
    f.create_dataset("empty_f4", data=np.zeros((0, 3), dtype="f4"))
    f.create_dataset("rank4", data=sample("rank4", np.dtype("f4"), (1, 2, 1, 3)))
    compact("compact_i2", f, sample("compact", np.dtype("<i2"), (2, 5)))
    compact("compact_f8_be", f, sample("compact_be", np.dtype(">f8"), (3,)))
    # Contiguous, never written: h5py reads the fill value (here the default, zeros; and 3).
    f.create_dataset("unwritten_f4", shape=(4, 2), dtype="f4")
    f.create_dataset("unwritten_fill_i2", shape=(5,), dtype="i2", fillvalue=3)
    f.create_dataset("group/nested_u2", data=sample("nested", np.dtype("u2"), (6,)))
    # Refused: not tensors.
    f.create_dataset("refused_string", data=np.array([b"ab", b"cd"], dtype="S2"))
    f.create_dataset("refused_vlen_string", data=["one", "two"], dtype=h5py.string_dtype())
    f.create_dataset("refused_compound", data=np.zeros(3, dtype=[("a", "i4"), ("b", "f8")]))
    colors = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="i1")
    f.create_dataset("enum_colors", data=np.array([0, 2, 1], dtype="i1"), dtype=colors)


def compact(name: str, f: h5py.File, data: np.ndarray) -> None:
    """A dataset with the compact layout (its data inside the object header)."""
    space = h5py.h5s.create_simple(data.shape)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    # No modification times: the file is the same every run.
    dcpl.set_obj_track_times(False)
    dset = h5py.h5d.create(f.id, name.encode(), h5py.h5t.py_create(data.dtype), space, dcpl=dcpl)
    dset.write(h5py.h5s.ALL, h5py.h5s.ALL, data)


def chunked_datasets(f: h5py.File) -> None:
    data = sample("chunked", np.dtype("f4"), (12, 10))
    f.create_dataset("plain", data=data, chunks=(4, 5))
    f.create_dataset("gzip", data=data, chunks=(4, 5), compression="gzip", compression_opts=6)
    f.create_dataset("shuffle_gzip", data=data, chunks=(4, 5), shuffle=True, compression="gzip")
    f.create_dataset("fletcher32", data=data, chunks=(4, 5), fletcher32=True)
    f.create_dataset("all_filters", data=data, chunks=(4, 5), shuffle=True, compression="gzip", fletcher32=True)
    odd = sample("edge", np.dtype("i2"), (7, 5, 3))
    f.create_dataset("edge_chunks", data=odd, chunks=(3, 2, 2))
    f.create_dataset("edge_chunks_gzip", data=odd, chunks=(3, 2, 2), compression="gzip", shuffle=True)
    f.create_dataset("big_endian_gzip", data=sample("be", np.dtype(">i4"), (9, 4)), chunks=(4, 4), compression="gzip")
    part = f.create_dataset("partial_fill", shape=(10, 8), dtype="f8", chunks=(3, 3), fillvalue=-1.5)
    part[0:3, 0:3] = sample("part", np.dtype("f8"), (3, 3))
    part[8:10, 5:8] = 4.0
    f.create_dataset("unwritten_chunked", shape=(6, 6), dtype="u1", chunks=(2, 2), fillvalue=9)
    # 150 chunks: more than a B-tree v1 leaf holds (64 with the default K of 32).
    many = sample("many", np.dtype("u2"), (30, 50))
    f.create_dataset("many_chunks", data=many, chunks=(2, 5), compression="gzip")
    f.create_dataset("refused_lzf", data=data, chunks=(4, 5), compression="lzf")
    f.create_dataset("complex_gzip", data=sample("cg", np.dtype("c8"), (5, 3)), chunks=(2, 2), compression="gzip")


def chunk_index_datasets(f: h5py.File) -> None:
    """libver 'latest' only: one dataset per chunk index of layout v4."""
    data = sample("index", np.dtype("i4"), (6, 8))
    # Single chunk: the chunk is the whole (fixed) shape.
    f.create_dataset("index_single", data=data, chunks=(6, 8))
    f.create_dataset("index_single_gzip", data=data, chunks=(6, 8), compression="gzip", fletcher32=True)
    # Implicit: fixed shape, no filters, space allocated early.
    space = h5py.h5s.create_simple((6, 8))
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((4, 3))
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dcpl.set_obj_track_times(False)
    dset = h5py.h5d.create(f.id, b"index_implicit", h5py.h5t.STD_I32LE, space, dcpl=dcpl)
    dset.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))
    # The same over a larger (fixed) maximum shape: chunks numbered over the maximum.
    space = h5py.h5s.create_simple((6, 8), (10, 11))
    dset = h5py.h5d.create(f.id, b"index_implicit_max", h5py.h5t.STD_I32LE, space, dcpl=dcpl)
    dset.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data))
    # Fixed array: fixed max shape, several chunks.
    f.create_dataset("index_fixed", data=data, chunks=(4, 3))
    f.create_dataset("index_fixed_gzip", data=data, chunks=(4, 3), compression="gzip", shuffle=True)
    # A fixed array of 1200 chunks: its data block is paged (pages of 1024 entries).
    paged = sample("paged", np.dtype("u1"), (1200,))
    f.create_dataset("index_fixed_paged", data=paged, chunks=(1,))
    f.create_dataset("index_fixed_paged_gzip", data=paged, chunks=(1,), compression="gzip")
    # A maximum shape larger than the shape, not unlimited: chunks numbered over the maximum.
    f.create_dataset("index_fixed_max", data=data, chunks=(4, 3), maxshape=(10, 11))
    part = f.create_dataset("index_fixed_partial", shape=(6, 8), dtype="i4", chunks=(2, 2), fillvalue=42)
    part[2:4, 4:8] = 5
    # Extensible array: one unlimited dimension.
    f.create_dataset("index_extensible", data=data, chunks=(2, 3), maxshape=(None, 8))
    f.create_dataset("index_extensible_gzip", data=data, chunks=(2, 3), maxshape=(None, 8), compression="gzip")
    # The unlimited dimension second: the array numbers chunks with it first.
    f.create_dataset("index_extensible_dim1", data=data, chunks=(4, 3), maxshape=(9, None))
    # Many chunks: the extensible array's data blocks, super blocks and their pages.
    long = sample("long", np.dtype("i2"), (3000,))
    f.create_dataset("index_extensible_many", data=long, chunks=(2,), maxshape=(None,))
    f.create_dataset("index_extensible_many_gzip", data=long, chunks=(2,), maxshape=(None,), compression="gzip")
    grow = f.create_dataset("index_extensible_partial", shape=(4, 4), dtype="f4", chunks=(2, 2), maxshape=(None, 4))
    grow[0:2, 0:2] = 1.0
    grow.resize((9, 4))
    grow[8, :] = 2.0
    # B-tree v2: two unlimited dimensions (records of type 10, filtered: type 11).
    f.create_dataset("index_btree2", data=data, chunks=(2, 3), maxshape=(None, None))
    f.create_dataset("index_btree2_gzip", data=data, chunks=(2, 3), maxshape=(None, None), compression="gzip", fletcher32=True)
    wide = sample("wide", np.dtype("f4"), (40, 60))
    f.create_dataset("index_btree2_many", data=wide, chunks=(2, 3), maxshape=(None, None))
    f.create_dataset("index_btree2_many_gzip", data=wide, chunks=(2, 3), maxshape=(None, None), compression="gzip")


def record(path: Path) -> None:
    """Writes `path`.expected.json: every dataset as h5py reads it."""
    datasets = []
    with h5py.File(path, "r") as f:
        names = []
        f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
        for name in sorted(names):
            ds = f[name]
            # Where h5py says the dataset's object header is: lets tests read one dataset alone.
            entry = {"name": name, "header_address": h5py.h5o.get_info(ds.id).addr, "shape": [int(d) for d in ds.shape]}
            code = "b" if ds.dtype.kind == "b" else f"{ds.dtype.kind}{ds.dtype.itemsize}"
            if name.startswith("refused") or code not in RECORD_DTYPES:
                entry["refused"] = True
            else:
                entry["dtype"] = RECORD_DTYPES[code]
                entry["layout"] = LAYOUTS[ds.id.get_create_plist().get_layout()]
                entry["sha256"] = hashlib.sha256(row_major_le(np.asarray(ds[()]))).hexdigest()
            datasets.append(entry)
    document = {
        "producer": f"h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}, numpy {np.__version__})",
        "file": path.name,
        "datasets": datasets,
    }
    path.with_name(path.name + ".expected.json").write_text(pretty_json(document) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    generate(Path(sys.argv[1]))
