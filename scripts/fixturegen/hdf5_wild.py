"""HDF5 files as other producers than plain h5py write them ("files from the wild", issue 29),
small, and their records as h5py reads them back.

  userblock_1024.h5    h5py with a 1024-byte user block (the signature at 1024)
  matlab_v73.mat       a MATLAB v7.3 MAT-file: HDF5 after a 512-byte user block holding
                       MATLAB's header text, numeric variables stored transposed with their
                       MATLAB_class attributes, by hdf5storage (left as it is when
                       hdf5storage cannot be imported); the header's date is fixed
  undefined_fill.h5    chunked datasets whose fill value is undefined (H5Pset_fill_value
                       with no value, through the HDF5 library h5py loaded), some chunks
                       never written, their fill value messages rewritten as older HDF5
                       libraries wrote them (a size of -1)
  huge_attribute.h5    libver 'latest': a dataset and the root with more attributes than
                       fit compact storage, one of each larger than the fractal heap's
                       managed objects (a huge object, found through the heap's B-tree v2)
  enum_bitfield.h5     enum datasets (int16 and uint8 bases), bitfields of 1, 2 and 4 bytes
                       (one big-endian)
  null_dataspace.h5    a dataset and an attribute of null dataspace (h5py.Empty) beside a
                       plain dataset
  array_dtype.h5       datasets of HDF5 array datatypes (h5py reads each element as extra
                       trailing dimensions): float32[3] over (4,), big-endian int16[2,3]
                       over (5,) chunked and deflated, a scalar float64[2,2], complex64[2]
                       over (2,)
  unrepresentable.h5   what stays refused, beside a plain dataset: an array datatype of
                       fixed-length strings, and NumPy's long double (x87 80-bit extended
                       precision in 16 bytes; written where numpy's longdouble is that)
  netcdf4.nc           a netCDF-4 file by the netCDF4 package (when it imports): coordinate
                       variables, a compressed variable over an unlimited dimension, a
                       dimension with no variable, global and variable attributes
  pytables_filters.h5  chunked datasets whose filters run in PyTables' order, fletcher32
                       first, then shuffle and deflate (h5py puts fletcher32 last): the
                       checksum is deflated with the data (issue 39: 15 uint8 bitfield values
                       in chunks of 2, as jhdf's bitfield_datasets.hdf5 has them; and int32
                       values with a short edge chunk)

Records are those of hdf5_files.py, with three additions: a dataset h5py reads as something
other than a numeric array (h5py.Empty, strings) has "refused": true and no digest; an enum
dataset has "enum": {name: value} (h5py's check_enum_dtype); attributes that are not numbers
or text (references, compounds) are listed by name under "other_attributes".

hdf5_files.py runs this too (scripts/fixtures). Run alone (inside an environment with h5py and
numpy; netCDF4 and hdf5storage optional):
  PYTHONPATH=scripts python -m fixturegen.hdf5_wild tests/fixtures/hdf5/wild
"""

import ctypes
import hashlib
import sys
from pathlib import Path

import h5py
import numpy as np

from .common import pretty_json, row_major_le, sample, value

RECORD_DTYPES = {
    "b1": "bool", "i1": "int8", "u1": "uint8", "i2": "int16", "u2": "uint16", "i4": "int32",
    "u4": "uint32", "i8": "int64", "u8": "uint64", "f2": "float16", "f4": "float32",
    "f8": "float64", "c8": "complex64", "c16": "complex128",
}

# MATLAB's header text, with a fixed date so that a second run gives the same file.
MATLAB_HEADER = b"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Thu Jan  1 00:00:00 2026 HDF5 schema 1.00 ."


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / "userblock_1024.h5"
    with h5py.File(path, "w", userblock_size=1024) as f:
        f.create_dataset("x", data=sample("ub1024", np.dtype("i4"), (3, 5)))
        f.attrs["note"] = "after a 1024-byte user block"
    record(path)
    if matlab(out / "matlab_v73.mat"):
        record(out / "matlab_v73.mat")
    undefined_fill(out / "undefined_fill.h5")
    record(out / "undefined_fill.h5")
    huge_attribute(out / "huge_attribute.h5")
    record(out / "huge_attribute.h5")
    enum_bitfield(out / "enum_bitfield.h5")
    record(out / "enum_bitfield.h5")
    path = out / "null_dataspace.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("null", data=h5py.Empty("f4"))
        f.create_dataset("plain", data=np.arange(3, dtype="u2"))
        f["plain"].attrs["empty"] = h5py.Empty("i4")
        f["plain"].attrs["kept"] = np.int32(5)
    record(path)
    array_dtype(out / "array_dtype.h5")
    record(out / "array_dtype.h5")
    unrepresentable(out / "unrepresentable.h5")
    record(out / "unrepresentable.h5")
    if netcdf4(out / "netcdf4.nc"):
        record(out / "netcdf4.nc")
    pytables_filters(out / "pytables_filters.h5")
    record(out / "pytables_filters.h5")


def matlab(path: Path) -> bool:
    """A v7.3 MAT-file with numeric variables; MATLAB (and hdf5storage) store an m-by-n array
    as HDF5 dimensions (n, m): h5py reads the transpose."""
    variables = {
        "A": sample("mat_A", np.dtype("f8"), (3, 4)),
        "single": sample("mat_single", np.dtype("f4"), (2, 5)),
        "counts": np.arange(24, dtype="i2").reshape(2, 3, 4),
        "flag": np.array([[True, False, True]]),
        "scalar": np.float64(2.5),
    }
    try:
        import hdf5storage
    except ImportError:
        print("hdf5storage is not installed: matlab_v73.mat left as it is", flush=True)
        return False
    hdf5storage.savemat(str(path), variables, format="7.3", oned_as="row", store_python_metadata=False)
    with open(path, "r+b") as f:
        head = bytearray(f.read(512))
        head[:116] = MATLAB_HEADER.ljust(116, b" ")
        # Subsystem data offset (none), version 0x0200, endian indicator 'IM'.
        head[116:124] = b" " * 8
        head[124:128] = b"\x00\x02IM"
        f.seek(0)
        f.write(bytes(head))
    return True


def hdf5_library():
    """The HDF5 library h5py has loaded (the same instance: its identifiers are h5py's)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libhdf5" in line and "hl" not in line.rsplit("/", 1)[-1]:
                return ctypes.CDLL(line.split()[-1])
    raise RuntimeError("h5py's HDF5 library is not mapped")


def undefined_fill(path: Path) -> None:
    lib = hdf5_library()
    lib.H5Pset_fill_value.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    with h5py.File(path, "w") as f:
        for name, chunks in [("a", (2, 3)), ("b", (4, 2))]:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk(chunks)
            dcpl.set_obj_track_times(False)
            if lib.H5Pset_fill_value(dcpl.id, h5py.h5t.NATIVE_FLOAT.id, None) < 0:
                raise RuntimeError("H5Pset_fill_value failed")
            space = h5py.h5s.create_simple((6, 6))
            h5py.h5d.create(f.id, name.encode(), h5py.h5t.IEEE_F32LE, space, dcpl=dcpl)
            f[name][0:2, 0:3] = sample(name, np.dtype("f4"), (2, 3))
            f[name][4:6, 3:6] = 7.5
            defined = f[name].id.get_create_plist().fill_value_defined()
            assert defined == h5py.h5d.FILL_VALUE_UNDEFINED, defined
    # HDF5 2.0 writes the undefined fill value as a version-2 message "not defined" with no
    # size; older libraries wrote a size of -1 (0xffffffff), which HDF5 still reads as
    # undefined: "a" gets version 2 "defined" with size -1, "b" version 1 (its size field
    # always present) "not defined" with size -1. Each message (type 5, 8 bytes, constant)
    # is rewritten in place; object headers v1 carry no checksum.
    data = bytearray(path.read_bytes())
    message = bytes.fromhex("0500080001000000" "02030200" "00000000")
    found = [i for i in range(len(data)) if data[i : i + len(message)] == message]
    assert len(found) == 2, found
    for at, body in zip(found, ["02030201ffffffff", "01030200ffffffff"]):
        data[at + 8 : at + 16] = bytes.fromhex(body)
    path.write_bytes(bytes(data))


def huge_attribute(path: Path) -> None:
    with h5py.File(path, "w", libver="latest") as f:
        ds = f.create_dataset("data", data=sample("huge_data", np.dtype("f4"), (2, 3)))
        # Past 8 attributes storage is dense; past 4096 bytes (the heap's largest managed
        # object) an attribute is a huge object.
        for target in (f, ds):
            for i in range(9):
                target.attrs[f"small{i}"] = np.int32(i)
        f.attrs["big_text"] = np.bytes_(b"history: " + b"x" * 4200)
        ds.attrs["big"] = np.arange(2100, dtype="i2") * np.int16(3)


def enum_bitfield(path: Path) -> None:
    with h5py.File(path, "w") as f:
        levels = h5py.enum_dtype({"LOW": -1, "MID": 5, "HIGH": 900}, basetype="i2")
        f.create_dataset("level", data=np.array([[5, 900, -1], [-1, 5, 5]], dtype="i2"), dtype=levels)
        colors = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 2}, basetype="u1")
        f.create_dataset("color", data=np.array([2, 0, 1, 1], dtype="u1"), dtype=colors)
        for name, ftype, dtype in [
            ("bits8", h5py.h5t.STD_B8LE, "u1"),
            ("bits16", h5py.h5t.STD_B16LE, "<u2"),
            ("bits32_be", h5py.h5t.STD_B32BE, ">u4"),
        ]:
            data = (sample(name, np.dtype("u4"), (5,)) & np.uint32(np.iinfo(dtype).max)).astype(dtype)
            space = h5py.h5s.create_simple(data.shape)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_obj_track_times(False)
            dsid = h5py.h5d.create(f.id, name.encode(), ftype, space, dcpl=dcpl)
            dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, data, mtype=ftype)


def array_dtype(path: Path) -> None:
    with h5py.File(path, "w") as f:
        for name, data, element, shape, chunks in [
            ("vec3", sample("arr_vec3", np.dtype("f4"), (4, 3)), "<f4", (4,), None),
            ("grid_be", sample("arr_grid", np.dtype("i2"), (5, 2, 3)), ">i2", (5,), (2,)),
            ("scalar", sample("arr_scalar", np.dtype("f8"), (2, 2)), "<f8", (), None),
            ("pairs", sample("arr_pairs", np.dtype("c8"), (2, 2)), "<c8", (2,), None),
        ]:
            dtype = np.dtype((element, data.shape[len(shape):]))
            ds = f.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks,
                                  compression="gzip" if chunks else None)
            ds[...] = data


def unrepresentable(path: Path) -> None:
    with h5py.File(path, "w") as f:
        f.create_dataset("kept", data=np.arange(4, dtype="<i4"))
        words = f.create_dataset("words", shape=(3,), dtype=np.dtype(("S2", (2,))))
        words[...] = np.array([[b"ab", b"cd"]] * 3, dtype="S2")
        if np.dtype(np.longdouble).itemsize == 16:
            thirds = np.arange(3, dtype=np.longdouble) / 3
            # The 6 padding bytes after the 80 bits are whatever memory held: zeroed, so that
            # a second run gives the same file.
            thirds.view(np.uint8).reshape(3, 16)[:, 10:] = 0
            f.create_dataset("longdouble", data=thirds)


def netcdf4(path: Path) -> bool:
    try:
        import netCDF4
    except ImportError:
        print("netCDF4 is not installed: netcdf4.nc left as it is", flush=True)
        return False
    with netCDF4.Dataset(path, "w", format="NETCDF4") as nc:
        nc.title = "tensorfile fixture"
        nc.setncattr("comment", "netCDF-4 variables as h5py reads them")
        nc.createDimension("time", None)
        nc.createDimension("lat", 3)
        nc.createDimension("lon", 4)
        nc.createDimension("nv", 2)
        lat = nc.createVariable("lat", "f4", ("lat",))
        lat.units = "degrees_north"
        lat[:] = [-10.0, 0.0, 10.0]
        lon = nc.createVariable("lon", "f8", ("lon",))
        lon[:] = [0.0, 90.0, 180.0, 270.0]
        time = nc.createVariable("time", "i4", ("time",))
        time[:] = [0, 6]
        temp = nc.createVariable("temp", "f4", ("time", "lat", "lon"), zlib=True, fill_value=np.float32(-999.0))
        temp.long_name = "temperature"
        temp[:] = sample("nc_temp", np.dtype("f4"), (2, 3, 4))
        bounds = nc.createVariable("lat_bnds", "f4", ("lat", "nv"))
        bounds[:] = sample("nc_bnds", np.dtype("f4"), (3, 2))
        counts = nc.createVariable("counts", "u2", ("lat",))
        counts[:] = [1, 2, 3]
    return True


def pytables_filters(path: Path) -> None:
    """Filters set through the property list in PyTables' order: fletcher32, shuffle, deflate."""
    with h5py.File(path, "w") as f:
        bits = sample("pt_bits", np.dtype("u1"), (15,))
        ints = sample("pt_ints", np.dtype("<i4"), (7, 3))
        for name, ftype, data, chunks in [
            ("compressed_chunked_bitfield", h5py.h5t.STD_B8LE, bits, (2,)),
            ("compressed_chunked_int32", h5py.h5t.STD_I32LE, ints, (2, 2)),
        ]:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk(chunks)
            dcpl.set_fletcher32()
            dcpl.set_shuffle()
            dcpl.set_deflate(6)
            dcpl.set_obj_track_times(False)
            space = h5py.h5s.create_simple(data.shape)
            dsid = h5py.h5d.create(f.id, name.encode(), ftype, space, dcpl=dcpl)
            dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(data), mtype=ftype)
            filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
            assert filters == [h5py.h5z.FILTER_FLETCHER32, h5py.h5z.FILTER_SHUFFLE, h5py.h5z.FILTER_DEFLATE], filters


def plain_attribute(v) -> bool:
    """Whether h5py gives the attribute as numbers or text (not references, compounds, Empty)."""
    if isinstance(v, (bytes, str, int, float)):
        return True
    if isinstance(v, (np.ndarray, np.generic)):
        return v.dtype.kind in "biufS" or (v.dtype.kind == "O" and all(isinstance(x, (str, bytes)) for x in np.ravel(v)))
    return False


def record(path: Path) -> None:
    """Writes `path`.expected.json: every dataset and every attribute as h5py reads them."""
    datasets = []
    attrs = {}
    others = {}
    with h5py.File(path, "r") as f:
        names = []

        def attributes(name, obj):
            plain = {}
            for k in sorted(obj.attrs):
                v = obj.attrs[k]
                if plain_attribute(v):
                    plain[k] = value(v)
                else:
                    others.setdefault(name, []).append(k)
            if plain:
                attrs[name] = plain

        attributes("", f)

        def visit(name, obj):
            attributes(name, obj)
            if isinstance(obj, h5py.Dataset):
                names.append(name)

        f.visititems(visit)
        for name in names:
            ds = f[name]
            data = ds[()]
            entry = {"name": name}
            if isinstance(data, h5py.Empty) or not isinstance(data, (np.ndarray, np.generic)) or data.dtype.kind not in "biufc":
                entry["refused"] = True
                datasets.append(entry)
                continue
            data = np.asarray(data)
            code = "b1" if data.dtype.kind == "b" else f"{data.dtype.kind}{data.dtype.itemsize}"
            if code not in RECORD_DTYPES:  # float128 (long double): no tensor dtype holds it
                entry["refused"] = True
                datasets.append(entry)
                continue
            entry["dtype"] = RECORD_DTYPES[code]
            # An array datatype's dimensions follow the dataset's.
            entry["shape"] = [int(d) for d in data.shape]
            entry["sha256"] = hashlib.sha256(row_major_le(data)).hexdigest()
            mapping = h5py.check_enum_dtype(ds.dtype)
            if mapping is not None:
                entry["enum"] = {k: int(v) for k, v in mapping.items()}
            datasets.append(entry)
    document = {
        "producer": f"h5py {h5py.__version__} (HDF5 {h5py.version.hdf5_version}, numpy {np.__version__})",
        "file": path.name,
        "datasets": datasets,
        "attributes": attrs,
        "other_attributes": others,
    }
    path.with_name(path.name + ".expected.json").write_text(pretty_json(document) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    generate(Path(sys.argv[1]))
