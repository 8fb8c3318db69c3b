"""Small seeds for the hdf5_read fuzz target (fuzz/seeds/hdf5/): every object of every committed
HDF5 fixture, copied by the HDF5 library (`H5Ocopy`, which keeps the object's layout, chunk
index, filters, attributes and link storage) into a file of its own, once with libver
'earliest' and once with 'latest', plus a user-block variant. A mutation of a 2 KiB file that
holds one dataset costs the reader far less than one of the 56-200 KiB fixtures that hold
fifteen, so the fuzzer runs several times more inputs a second while every structure the
fixtures hold (each B-tree and chunk index, heap, filter, datatype, link and attribute
storage) is still in some seed. Files over MAX_BYTES are left out (the fuzz target's max-len
is twice that, room for mutations to grow).

Run alone (inside an environment with h5py):
  PYTHONPATH=scripts python -m fixturegen.hdf5_fuzz_seeds fuzz/seeds/hdf5 tests/fixtures
"""

import hashlib
import shutil
import sys
from pathlib import Path

import h5py

MAX_BYTES = 8192
# The fixture folders whose HDF5 files are split; conformance files are variants of these.
SOURCES = ["hdf5/datasets", "hdf5/files", "hdf5/wild", "keras"]
SUFFIXES = {".h5", ".hdf5", ".nc", ".mat"}


def generate(out: Path, fixtures: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    written, skipped = 0, 0
    seen: set[str] = set()
    for folder in SOURCES:
        for path in sorted((fixtures / folder).glob("*")):
            if path.suffix not in SUFFIXES or not h5py.is_hdf5(path):
                continue
            with h5py.File(path, "r") as source:
                names = sorted(source.keys())
                for name in names:
                    for libver in ("earliest", "latest"):
                        for userblock in (0, 512) if libver == "latest" else (0,):
                            data = copy_one(source, name, libver, userblock, out / "tmp.h5")
                            if data is None or len(data) > MAX_BYTES:
                                skipped += 1
                                continue
                            digest = hashlib.sha256(data).hexdigest()
                            if digest in seen:
                                continue
                            seen.add(digest)
                            stem = f"{path.stem}--{safe(name)}--{libver}" + (f"--ub{userblock}" if userblock else "")
                            (out / f"{stem}.h5").write_bytes(data)
                            written += 1
    (out / "tmp.h5").unlink(missing_ok=True)
    print(f"hdf5 fuzz seeds: {written} files of at most {MAX_BYTES} bytes ({skipped} copies over it or not copyable)")


def copy_one(source: h5py.File, name: str, libver: str, userblock: int, scratch: Path) -> bytes | None:
    """The bytes of a fresh file holding only `name` of `source` (and its attributes), or None
    where the library cannot copy it (an external link, say)."""
    if source.get(name, getlink=True).__class__ is not h5py.HardLink:
        return None
    with h5py.File(scratch, "w", libver=libver, userblock_size=userblock or None) as target:
        try:
            h5py.h5o.copy(source.id, name.encode(), target.id, name.encode())
        except (KeyError, RuntimeError, ValueError):
            return None
    return scratch.read_bytes()


def safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


if __name__ == "__main__":
    generate(Path(sys.argv[1]), Path(sys.argv[2]))
