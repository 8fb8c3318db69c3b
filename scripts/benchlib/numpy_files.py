"""The NumPy part of the benchmark: reading `.npy` and `.npz` files with tensorfile (the Rust
library through `bench_op`, the Python package through `peers.py`) against
`numpy.load(mmap_mode="r")`, every byte of every array touched on both sides (the same sum
of 8-byte words). `scripts/bench --only numpy` runs it alone and replaces its section of
BENCHMARKS.md.

Workloads (made by numpy into the benchmark's cache folder, once):
  weights.npy             one float32 array of 256 MiB (--quick: 32 MiB), `np.save`
  weights_fortran.npy     the same array in Fortran order (tensorfile transposes it)
  layers.npz              `np.savez` of 56 arrays of Llama-like shapes (8 layers), 268 MB
                          in all (--quick: 28 arrays, 34 MB), stored members
  layers_compressed.npz   the same arrays, `np.savez_compressed` (deflated members)

Also run as `python -m benchlib.numpy_files read FILE` (numpy's row: prints the JSON line
`scripts/bench` reads) and `python -m benchlib.numpy_files make FOLDER [--quick]`.
"""

import json
import sys
import time
from pathlib import Path

from . import sections
from .sections import commands

SECTION = "## NumPy (.npy, .npz)"
SCRIPTS = Path(__file__).resolve().parents[1]


def arrays(quick: bool) -> dict:
    """Llama-like layers: name -> (shape), float32 and float16, deterministic."""
    import numpy as np

    hidden, inter = (512, 1408) if quick else (1024, 2816)
    rng = np.random.default_rng(17)
    out = {}
    for layer in range(4 if quick else 8):
        p = f"layers.{layer}"
        for name, shape in ((f"{p}.attn.q", (hidden, hidden)), (f"{p}.attn.k", (hidden // 4, hidden)),
                            (f"{p}.attn.v", (hidden // 4, hidden)), (f"{p}.attn.o", (hidden, hidden)),
                            (f"{p}.mlp.up", (inter, hidden)), (f"{p}.mlp.down", (hidden, inter)),
                            (f"{p}.norm", (hidden,))):
            out[name] = rng.standard_normal(shape, dtype=np.float32)
    return out


def make_files(folder: Path, quick: bool) -> None:
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    rows = 2048 if quick else 16384
    big = np.random.default_rng(5).standard_normal((rows, 4096), dtype=np.float32)
    np.save(folder / "weights.npy", big)
    np.save(folder / "weights_fortran.npy", np.asfortranarray(big))
    layers = arrays(quick)
    np.savez(folder / "layers.npz", **layers)
    np.savez_compressed(folder / "layers_compressed.npz", **layers)


def make(cache: Path, quick: bool) -> dict:
    """label -> path of each workload file, made once (by a numpy in this interpreter)."""
    folder = cache / ("quick" if quick else "full") / "numpy"
    names = ["weights.npy", "weights_fortran.npy", "layers.npz", "layers_compressed.npz"]
    if not all((folder / n).exists() for n in names):
        print(f"making {folder}", file=sys.stderr, flush=True)
        partial = folder.with_name(folder.name + ".partial")
        make_files(partial, quick)
        partial.rename(folder)
    return {n: folder / n for n in names}


def plan(files: dict, op: Path, python: Path) -> list:
    """(workload, group, label, command, file for warm and cold runs, is_write) rows."""
    rows = []
    for name, path in files.items():
        group = f"read {name}"
        rows += [
            ("numpy", group, "tensorfile (Rust)", [str(op), "tensorfile", "read", str(path)], path, False),
            ("numpy", group, "tensorfile (Python)",
             [str(python), "-m", "benchlib.peers", "tensorfile", "read", str(path)], path, False),
            ("numpy", group, NUMPY, [str(python), "-m", "benchlib.numpy_files", "read", str(path)], path, False),
        ]
    return rows


NUMPY = "numpy.load(mmap_mode='r')"


def read(path: str) -> tuple:
    """numpy's row: load (memory-mapped where numpy can: an .npy; an .npz's members are read
    into memory by numpy itself), then touch every byte of every array."""
    import numpy as np

    from .peers import touch

    start = time.perf_counter()
    loaded = np.load(path, mmap_mode="r", allow_pickle=False)
    if isinstance(loaded, np.lib.npyio.NpzFile):
        with loaded:
            got = [loaded[name] for name in loaded.files]
    else:
        got = [loaded]
    total = sum(touch(np.ascontiguousarray(a)) for a in got)
    return time.perf_counter() - start, total, len(got)


def ms(s) -> str:
    return sections.ms(s)


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    """The section, from its heading to its last line."""
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sizes = ", ".join(f"`{p.name}` {p.stat().st_size / 1e6:.1f} MB" for p in files.values())
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes, {repeat} repetitions"
        + (" (quick: small workloads; not the numbers to judge by)." if quick else "."),
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB; other builds may",
        "have run beside it: only the ratios of this run carry over. Rows as above (warm, cold, median,",
        "own process). Every row touches every byte of every array (a sum of 8-byte words);",
        "tensorfile returns row-major little-endian data (a Fortran-order array transposed), numpy",
        "its own arrays (a Fortran-order one as it is; `np.ascontiguousarray` before the sum copies it).",
        f"Files (made by numpy {files_numpy_version()}): {sizes}.", "",
        "| operation | tool | warm ms | cold ms | GB/s warm | peak anon MiB | arrays | numpy / tool (warm) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        peer = next((p for p in results if p["group"] == r["group"] and p["label"] == NUMPY), None)
        ratio = f"{peer['warm'] / r['warm']:.2f}x" if peer and r["warm"] and r["label"] != NUMPY else "-"
        rate = f"{r['bytes'] / r['warm'] / 1e9:.2f}" if r["bytes"] and r["warm"] else "-"
        lines.append(f"| {r['group']} | {r['label']} | {ms(r['warm'])} | {ms(r['cold'])} | {rate} | "
                     f"{r['peak_anon'] / 2**20:.0f} | {r['tensors']} | {ratio} |")
    lines += commands(results)
    return "\n".join(lines) + "\n"


def files_numpy_version() -> str:
    import numpy as np

    return np.__version__


def splice(document: str, section: str) -> str:
    """`document` with its NumPy section replaced by `section` (or added at its end)."""
    from .sections import splice as replace

    return replace(document, section, SECTION)


def main() -> None:
    what = sys.argv[1]
    if what == "read":
        seconds, nbytes, count = read(sys.argv[2])
        print(json.dumps({"seconds": seconds, "bytes": nbytes, "tensors": count}))
    elif what == "make":
        make_files(Path(sys.argv[2]), "--quick" in sys.argv[3:])
    else:
        sys.exit(f"unknown operation {what!r}")


if __name__ == "__main__":
    main()
