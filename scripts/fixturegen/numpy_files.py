"""The NumPy fixtures written by numpy itself (`np.save`, `np.lib.format.write_array`,
`np.savez`, `np.savez_compressed`), and their records as `numpy.load(allow_pickle=False)`
reads them back (see tests/fixtures/README.md, "NumPy").

  le_<dtype>.npy, be_<dtype>.npy   every numeric dtype, little- and big-endian
  fortran_f8.npy, fortran_be_i4.npy, fortran_c8.npy   Fortran-order arrays (rank 3 and 2)
  scalar.npy, empty.npy            a 0-d array and a (0, 3) one
  v2.npy, v3.npy                   format versions 2.0 and 3.0 (`write_array(version=)`)
  object.npy, strings.npy          an object array (saved with allow_pickle=True) and a
                                   unicode one: numpy.load(allow_pickle=False) refuses the
                                   first; tensorfile reads neither
  savez.npz                        np.savez: awkward names, both byte orders, Fortran order,
                                   0-d and empty arrays (stored members with zip64 extras)
  savez_compressed.npz             the same arrays, deflated
  object.npz                       np.savez(allow_pickle=True) with an object array among
                                   numeric ones

Each record lists the arrays numpy reads (in `.files` order for an archive) with their dtype
name, shape and the sha256 of their row-major little-endian bytes, and the members numpy
refuses or that hold no numbers.

Run alone (inside an environment with numpy):
  PYTHONPATH=scripts python -m fixturegen.numpy_files tests/fixtures/numpy
"""

import hashlib
import io
import sys
from pathlib import Path

import numpy as np

from .common import AWKWARD_NAMES, pretty_json, row_major_le, sample

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


def record_of(name: str, a: np.ndarray) -> dict:
    return {
        "name": name,
        "dtype": a.dtype.name,
        "shape": [int(d) for d in a.shape],
        "sha256": hashlib.sha256(row_major_le(a)).hexdigest(),
    }


def refused(name: str, why: str) -> dict:
    return {"name": name, "why": why}


def read_npy(path: Path) -> dict:
    """numpy's reading of an .npy file."""
    try:
        a = np.load(path, allow_pickle=False)
    except ValueError as err:
        return {"arrays": [], "unreadable": [refused(path.stem, str(err).splitlines()[0])]}
    if a.dtype.kind not in "biufc":
        return {"arrays": [], "unreadable": [refused(path.stem, f"dtype {a.dtype.str}")]}
    return {"arrays": [record_of(path.stem, a)], "unreadable": []}


def read_npz(path: Path) -> dict:
    """numpy's reading of an .npz archive, member by member, in `.files` order."""
    arrays, unreadable = [], []
    with np.load(path, allow_pickle=False) as z:
        for name in z.files:
            try:
                a = z[name]
            except ValueError as err:
                unreadable.append(refused(name, str(err).splitlines()[0]))
                continue
            if a.dtype.kind not in "biufc":
                unreadable.append(refused(name, f"dtype {a.dtype.str}"))
            else:
                arrays.append(record_of(name, a))
    return {"arrays": arrays, "unreadable": unreadable}


def write_record(path: Path, kind: str, read: dict, **extra) -> None:
    record = {"producer": f"numpy {np.__version__}", "file": path.name, "kind": kind, **extra, **read}
    path.with_name(path.name + ".expected.json").write_text(pretty_json(record) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


def save_npy(path: Path, a: np.ndarray, version=None, allow_pickle=False) -> None:
    if version is None:
        np.save(path, a, allow_pickle=allow_pickle)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, a, version=version, allow_pickle=allow_pickle)
    with open(path, "rb") as f:
        stored_version = list(f.read(8)[6:8])
    write_record(path, "npy", read_npy(path), version=stored_version)


def archive_arrays() -> dict:
    """The arrays of the .npz fixtures: awkward names, both byte orders, Fortran order, 0-d
    and empty arrays."""
    arrays = {}
    # Names a zip member may hold: tensorfile refuses archives whose names leave them.
    names = [n for n in AWKWARD_NAMES if not n.startswith("/")][:6]
    for i, name in enumerate(names):
        dtype = np.dtype(DTYPES[(3 * i + 1) % len(DTYPES)])
        arrays[name] = sample(name, dtype, (2, 3))
    arrays["big_endian_f4"] = sample("big_endian_f4", np.dtype(">f4"), (4, 5))
    arrays["big_endian_c16"] = sample("big_endian_c16", np.dtype(">c16"), (3,))
    arrays["fortran_i2"] = np.asfortranarray(sample("fortran_i2", np.dtype("<i2"), (3, 4, 2)))
    arrays["scalar"] = np.array(3.5, dtype=np.float64)
    arrays["empty"] = np.zeros((0, 4), dtype=np.int32)
    arrays["bools"] = sample("bools", np.dtype("bool"), (17,))
    return arrays


def generate(out: Path) -> None:
    """Writes every fixture and its record into `out`, after removing those already there."""
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.npy"), *out.glob("*.npz"), *out.glob("*.expected.json")]:
        old.unlink()
    for d in DTYPES:
        a = sample(f"npy_{d}", np.dtype(d), (3, 5))
        save_npy(out / f"le_{d}.npy", a.astype(a.dtype.newbyteorder("<")))
        save_npy(out / f"be_{d}.npy", a.astype(a.dtype.newbyteorder(">")))
    save_npy(out / "fortran_f8.npy", np.asfortranarray(sample("fortran_f8", np.dtype("<f8"), (3, 4, 2))))
    save_npy(out / "fortran_be_i4.npy", np.asfortranarray(sample("fortran_be_i4", np.dtype(">i4"), (5, 3))))
    save_npy(out / "fortran_c8.npy", np.asfortranarray(sample("fortran_c8", np.dtype("<c8"), (2, 3))))
    save_npy(out / "scalar.npy", np.array(-1.25, dtype=np.float32))
    save_npy(out / "empty.npy", np.zeros((0, 3), dtype=np.float64))
    save_npy(out / "v2.npy", sample("v2", np.dtype("<u2"), (6,)), version=(2, 0))
    save_npy(out / "v3.npy", sample("v3", np.dtype(">f2"), (2, 2)), version=(3, 0))
    save_npy(out / "object.npy", np.array([{"a": 1}, None, "x"], dtype=object), allow_pickle=True)
    save_npy(out / "strings.npy", np.array(["ab", "cde"]))

    arrays = archive_arrays()
    np.savez(out / "savez.npz", **arrays)
    write_record(out / "savez.npz", "npz", read_npz(out / "savez.npz"))
    np.savez_compressed(out / "savez_compressed.npz", **arrays)
    write_record(out / "savez_compressed.npz", "npz", read_npz(out / "savez_compressed.npz"))
    mixed = {"weights": sample("weights", np.dtype("<f4"), (4, 4)),
             "objects": np.array([1, "two", None], dtype=object),
             "bias": sample("bias", np.dtype("<f8"), (4,))}
    np.savez(out / "object.npz", allow_pickle=True, **mixed)
    write_record(out / "object.npz", "npz", read_npz(out / "object.npz"))
    # np.savez stamps each member with the current time: fixed, so that runs give equal files.
    normalise_dates(out)


def normalise_dates(out: Path) -> None:
    """numpy writes each member's modification time: set every date of every archive to one
    fixed value, in place (sizes and offsets do not change), so that runs give equal files."""
    import zipfile
    for path in sorted(out.glob("*.npz")):
        data = bytearray(path.read_bytes())
        with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
            infos = z.infolist()
            central = z.start_dir
        for info in infos:
            local = info.header_offset
            data[local + 10:local + 14] = FIXED_DOS_TIME
        at = central
        while data[at:at + 4] == b"PK\x01\x02":
            data[at + 12:at + 16] = FIXED_DOS_TIME
            name_len, extra_len, comment_len = (int.from_bytes(data[at + k:at + k + 2], "little") for k in (28, 30, 32))
            at += 46 + name_len + extra_len + comment_len
        path.write_bytes(bytes(data))


# 1980-01-01 00:00:00 as DOS time and date.
FIXED_DOS_TIME = (0).to_bytes(2, "little") + ((0 << 9) | (1 << 5) | 1).to_bytes(2, "little")


if __name__ == "__main__":
    generate(Path(sys.argv[1]))
