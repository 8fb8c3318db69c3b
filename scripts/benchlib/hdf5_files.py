"""The HDF5 part of the benchmark: reading every dataset of a weights file, tensorfile against
h5py (the same work on both sides: every tensor's bytes read once, summed). `scripts/bench
--only hdf5` runs it alone and replaces its section of BENCHMARKS.md.

Workloads (made once with h5py in the benchmark's cache folder): 96 float32 matrices of
1024x768 in groups `model/layer_N/` (about 300 MB; --quick: 24 of 512x384, about 19 MB),
written twice: contiguous, and chunked (64 rows) with shuffle and gzip level 4.

A row is one process: tensorfile through `crates/tensorfile/examples/bench_op.rs` (`read`: open,
read every entry, sum its bytes) and through the Python package; h5py through this module's
`h5py-read` (open, `ds[()]` of every dataset found by `visititems`, the same sum).
"""

import json
import sys
import time
from pathlib import Path

from . import sections

SECTION = "## HDF5"
H5PY = "h5py"


def make(cache: Path, quick: bool) -> dict:
    """label -> path of the two workloads; made once and reused."""
    import h5py
    import numpy as np

    folder = cache / ("quick" if quick else "full") / "hdf5"
    folder.mkdir(parents=True, exist_ok=True)
    count, (rows, cols) = (24, (512, 384)) if quick else (96, (1024, 768))
    files = {"contiguous": folder / "weights-contiguous.h5", "chunked+gzip": folder / "weights-gzip.h5"}
    for label, path in files.items():
        if path.exists():
            continue
        print(f"making {path}", file=sys.stderr, flush=True)
        partial = path.with_name(path.name + ".partial")
        rng = np.random.default_rng(17)
        with h5py.File(partial, "w") as f:
            for i in range(count):
                data = rng.standard_normal((rows, cols), dtype=np.float32)
                kw = dict(chunks=(64, cols), compression="gzip", compression_opts=4, shuffle=True) \
                    if label != "contiguous" else {}
                f.create_dataset(f"model/layer_{i // 4}/weight_{i % 4}", data=data, **kw)
        partial.rename(path)
    return files


def plan(files: dict, op: Path, python: Path) -> list:
    """(workload, group, label, command, file for warm and cold runs, is_write) rows."""
    rows = []
    for label, path in files.items():
        group = f"read all ({label})"
        rows += [
            ("hdf5", group, "tensorfile (Rust)", [str(op), "tensorfile", "read", str(path)], path, False),
            ("hdf5", group, "tensorfile (Python)",
             [str(python), "-m", "benchlib.peers", "tensorfile", "read", str(path)], path, False),
            ("hdf5", group, H5PY, [str(python), "-m", "benchlib.hdf5_files", "h5py-read", str(path)], path, False),
        ]
    return rows


def h5py_read(path: str) -> tuple:
    """h5py's own way: every dataset read into an array, each summed as the Rust side sums its
    bytes."""
    import h5py

    from .peers import touch

    start = time.perf_counter()
    nbytes = tensors = 0
    with h5py.File(path, "r") as f:
        found = []
        f.visititems(lambda name, obj: found.append(obj) if isinstance(obj, h5py.Dataset) else None)
        for ds in found:
            nbytes += touch(ds[()])
            tensors += 1
    return time.perf_counter() - start, nbytes, tensors


def ms(s) -> str:
    return sections.ms(s)


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    """The section, from its heading to its last line."""
    import h5py

    lines = [
        SECTION, "",
        f"`{command}`{' (quick workloads)' if quick else ''}, {repeat} repetition(s), {elapsed / 60:.1f} minutes.",
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB; other builds may",
        "have run beside it: only the ratios of this run carry over. Each row is its own process, timed",
        "inside it (open and read every dataset, summing its bytes); warm: the file read once before;",
        "cold: dropped from the page cache first. tensorfile returns a contiguous dataset as a view of",
        "the mapped file (the sum reads it there), a chunked one decoded (chunks inflated on all cores).",
        "",
        "| operation | tool | warm ms | cold ms | GB/s warm | peak anon MiB | datasets | h5py / tool (warm) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        peer = next((p for p in results if p["group"] == r["group"] and p["label"] == H5PY), None)
        ratio = f"{peer['warm'] / r['warm']:.2f}x" if peer and r["warm"] and r["label"] != H5PY else "-"
        rate = f"{r['bytes'] / r['warm'] / 1e9:.2f}" if r["bytes"] and r["warm"] else "-"
        lines.append(f"| {r['group']} | {r['label']} | {ms(r['warm'])} | {ms(r['cold'])} | {rate} | "
                     f"{r['peak_anon'] / 2**20:.0f} | {r['tensors']} | {ratio} |")
    sizes = ", ".join(f"{label} `{p.name}` {p.stat().st_size / 1e6:.1f} MB" for label, p in files.items())
    lines += ["", f"Files (made by h5py {h5py.__version__}): {sizes}.", "", "Commands (from `scripts/`):", ""]
    lines += [f"- {r['group']}, {r['label']}: `{r['command']}`" for r in results]
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    """`document` with its HDF5 section replaced by `section` (or added at its end)."""
    from .sections import splice as replace

    return replace(document, section, SECTION)


if __name__ == "__main__":
    if sys.argv[1] != "h5py-read":
        sys.exit(f"unknown op {sys.argv[1]}")
    seconds, nbytes, tensors = h5py_read(sys.argv[2])
    print(json.dumps({"seconds": seconds, "bytes": nbytes, "tensors": tensors}))
