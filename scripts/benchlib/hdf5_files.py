"""The HDF5 part of the benchmark: reading every dataset of a realistic weights file with
tensorfile (`tensorfile verify --deep`, which decodes every tensor) and with h5py (`ds[()]` for each),
one run each, and their ratio. `scripts/bench --only hdf5` runs it alone and prints its section.

Workloads (made with h5py in the benchmark's cache folder, once): 96 float32 matrices of
1024x768 (about 300 MB; --quick: 24 of 512x384, about 19 MB) written contiguous, and the same
chunked (64 rows) with gzip level 4 and shuffle.
"""

import subprocess
import sys
import time
from pathlib import Path

SECTION = "## HDF5"

READ_ALL = """
import sys, h5py
def visit(name, obj):
    if isinstance(obj, h5py.Dataset):
        obj[()]
with h5py.File(sys.argv[1], "r") as f:
    f.visititems(visit)
"""


def make(cache: Path, quick: bool, python: Path) -> dict:
    """label -> path of the two workloads, made with h5py in `python`'s environment."""
    folder = cache / ("quick" if quick else "full")
    folder.mkdir(parents=True, exist_ok=True)
    count, shape = (24, (512, 384)) if quick else (96, (1024, 768))
    files = {"contiguous": folder / "weights-contiguous.h5", "chunked+gzip": folder / "weights-gzip.h5"}
    script = """
import sys, h5py, numpy as np
path, chunked, count, rows, cols = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rng = np.random.default_rng(17)
with h5py.File(path, "w") as f:
    for i in range(count):
        data = rng.standard_normal((rows, cols), dtype=np.float32)
        kw = dict(chunks=(64, cols), compression="gzip", compression_opts=4, shuffle=True) if chunked else {}
        f.create_dataset(f"model/layer_{i // 4}/weight_{i % 4}", data=data, **kw)
"""
    for label, path in files.items():
        if not path.exists():
            print(f"making {path}", file=sys.stderr, flush=True)
            partial = path.with_name(path.name + ".partial")
            subprocess.run([str(python), "-c", script, str(partial), "1" if "gzip" in label else "0", str(count),
                            str(shape[0]), str(shape[1])], check=True)
            partial.rename(path)
    return files


def timed(command: list) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def run(cache: Path, quick: bool, binary: Path, python: Path) -> str:
    """Measure both workloads; the markdown section."""
    files = make(cache, quick, python)
    rows = []
    for label, path in files.items():
        # One untimed read of each so that both readers find the file in the page cache.
        timed([str(binary), "verify", "--deep", str(path)])
        ours = timed([str(binary), "verify", "--deep", str(path)])
        theirs = timed([str(python), "-c", READ_ALL, str(path)])
        size = path.stat().st_size / 1e6
        rows.append(f"| {label} | {size:.0f} MB | {ours:.3f} s | {theirs:.3f} s | {theirs / ours:.2f}x |")
    return "\n".join([
        SECTION,
        "",
        f"Reading every dataset of an HDF5 weights file, warm page cache, one run each{' (--quick)' if quick else ''}:",
        "`tensorfile verify --deep` (decodes every tensor) against h5py reading `ds[()]` of every dataset (both as",
        "processes, start-up included: h5py's import is about 0.25 s of its time). Ratio: h5py's time over",
        "tensorfile's (above 1: tensorfile is faster). A contiguous dataset reads as a view of the mapped file,",
        "which verify checks without touching its bytes; h5py copies them into arrays: that row compares",
        "mapping against copying, not decoding speeds.",
        "",
        "| file | size | tensorfile | h5py | ratio |",
        "| --- | --- | --- | --- | --- |",
        *rows,
        "",
    ])
