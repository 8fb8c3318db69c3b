"""The statistics part of the benchmark: `tensorfile stats` (the CLI, and the Python package's
`tensorfile.stats`) on llama-1b's safetensors file (bf16) against the same statistics computed
by torch on its tensors, beside the machine's memory bandwidth measured in the same run.
`scripts/bench --only stats` runs it alone and replaces its section of BENCHMARKS.md.

Every tool computes, per tensor, in float64: min, max, mean, population std and largest
magnitude of the finite values, and the counts of zeros, NaNs, +inf and -inf. torch's row
loads the file with `safetensors.torch.load_file` (memory-mapped), then per tensor converts
it to float64 once and uses `torch.aminmax`, `torch.std_mean`, `isnan` and comparisons (on
all of torch's threads). The bandwidth rows: numpy summing a 1 GiB float64 array held in
memory, one slice per core on threads (read bandwidth), and copying it (`np.copyto`, per
core: bytes read plus bytes written).

Also run as `python -m benchlib.stats cli|python|torch FILE [BIN]` and
`python -m benchlib.stats bandwidth` (each prints the JSON line `scripts/bench` reads).
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import sections
from .sections import commands

SECTION = "## Statistics (tensorfile stats)"
TORCH = "torch (float64 per tensor)"
READ_BW = "memory read (numpy sum, all cores)"
COPY_BW = "memory copy (numpy copyto, all cores)"


def make(cache: Path, quick: bool) -> dict:
    from . import workloads

    return workloads.llama_only(cache, quick)


def plan(files: dict, op: Path, python: Path) -> list:
    """(workload, group, label, command, file for warm and cold runs, is_write) rows."""
    binary = op.parent.parent / "tensorfile"
    me = [str(python), "-m", "benchlib.stats"]
    rows = []
    for name, path in files.items():
        group = f"stats {name}"
        rows += [
            ("stats", group, "tensorfile stats (CLI)", [*me, "cli", str(path), str(binary)], path, False),
            ("stats", group, "tensorfile.stats (Python)", [*me, "python", str(path)], path, False),
            ("stats", group, TORCH, [*me, "torch", str(path)], path, False),
        ]
    rows += [
        ("stats", "memory bandwidth", READ_BW, [*me, "bandwidth", "read"], None, False),
        ("stats", "memory bandwidth", COPY_BW, [*me, "bandwidth", "copy"], None, False),
    ]
    return rows


def run_cli(path: str, binary: str) -> tuple:
    """The CLI as a user runs it, its JSON thrown away (the process start is counted)."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run([binary, "stats", path, "--json"], stdout=sink, check=True)
    seconds = time.perf_counter() - start
    return seconds, Path(path).stat().st_size, count_tensors(path)


def count_tensors(path: str) -> int:
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    return len([k for k in header if k != "__metadata__"])


def run_python(path: str) -> tuple:
    import tensorfile

    start = time.perf_counter()
    records = tensorfile.stats(path)
    seconds = time.perf_counter() - start
    assert all(r["summarised"] for r in records)
    return seconds, Path(path).stat().st_size, len(records)


def torch_stats(t) -> dict:
    """What `tensorfile stats` reports of one tensor, by torch in float64."""
    import torch

    d = t.to(torch.float64)
    nan = int(torch.isnan(d).sum())
    posinf = int((d == float("inf")).sum())
    neginf = int((d == float("-inf")).sum())
    finite = d if nan + posinf + neginf == 0 else d[torch.isfinite(d)]
    out = {"numel": d.numel(), "zeros": int((d == 0).sum()), "nan": nan, "posinf": posinf, "neginf": neginf}
    if finite.numel():
        lo, hi = torch.aminmax(finite)
        std, mean = torch.std_mean(finite, correction=0)
        out.update(min=float(lo), max=float(hi), mean=float(mean), std=float(std),
                   absmax=max(-float(lo), float(hi)))
    return out


def run_torch(path: str) -> tuple:
    from safetensors.torch import load_file

    start = time.perf_counter()
    tensors = load_file(path)
    records = {name: torch_stats(t) for name, t in tensors.items()}
    seconds = time.perf_counter() - start
    return seconds, Path(path).stat().st_size, len(records)


def bandwidth(kind: str) -> tuple:
    """The best of a few passes over a 1 GiB float64 array in memory, one slice per core on
    threads (numpy releases the GIL): `read` sums it, `copy` copies it (bytes moved: read and
    written)."""
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    cores = os.cpu_count() or 1
    src = np.ones(1 << 27, dtype=np.float64)
    dst = np.empty_like(src) if kind == "copy" else None
    bounds = np.linspace(0, src.size, cores + 1).astype(int)
    parts = list(zip(bounds[:-1], bounds[1:]))

    def work(part):
        a, b = part
        if dst is None:
            return float(src[a:b].sum())
        np.copyto(dst[a:b], src[a:b])
        return 0.0

    best = None
    with ThreadPoolExecutor(cores) as pool:
        list(pool.map(work, parts))
        for _ in range(5):
            start = time.perf_counter()
            list(pool.map(work, parts))
            t = time.perf_counter() - start
            best = t if best is None else min(best, t)
    moved = src.nbytes * (2 if kind == "copy" else 1)
    return best, moved, 0


def ms(s) -> str:
    return sections.ms(s, decimals=0)


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    """The section, from its heading to its last line."""
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sizes = ", ".join(f"`{name}` {p.stat().st_size / 1e9:.2f} GB" for name, p in files.items())
    read_bw = next((r["bytes"] / r["warm"] for r in results if r["label"] == READ_BW), None)
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes, {repeat} repetitions"
        + (" (quick: small workloads; not the numbers to judge by)." if quick else "."),
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB; other builds may",
        "have run beside it: only the ratios of this run carry over. Each row its own process, warm (file",
        "read once before) and cold (page cache dropped), median; the CLI's row includes its process",
        "start. Every tool computes per tensor in float64: min, max, mean, std (population), absmax",
        "of the finite values and counts of zeros, NaN, +inf, -inf. torch: `safetensors.torch.load_file`,",
        "then per tensor `.to(float64)`, `torch.aminmax`, `torch.std_mean`, `isnan` and comparisons.",
        f"File: {sizes} (bf16).", "",
        "| operation | tool | warm ms | cold ms | GB/s warm | of read bandwidth | peak anon MiB | torch / tool (warm) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        peer = next((p for p in results if p["group"] == r["group"] and p["label"] == TORCH), None)
        ratio = f"{peer['warm'] / r['warm']:.1f}x" if peer and r["warm"] and r["label"] != TORCH else "-"
        rate = r["bytes"] / r["warm"] if r["bytes"] and r["warm"] else None
        share = f"{rate / read_bw:.0%}" if rate and read_bw and r["group"] != "memory bandwidth" else "-"
        lines.append(f"| {r['group']} | {r['label']} | {ms(r['warm'])} | {ms(r['cold'])} | "
                     f"{'-' if rate is None else f'{rate / 1e9:.2f}'} | {share} | {r['peak_anon'] / 2**20:.0f} | {ratio} |")
    lines += commands(results)
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    """`document` with its statistics section replaced by `section` (or added at its end)."""
    from .sections import splice as replace

    return replace(document, section, SECTION)


def main() -> None:
    what = sys.argv[1]
    if what == "cli":
        seconds, nbytes, count = run_cli(sys.argv[2], sys.argv[3])
    elif what == "python":
        seconds, nbytes, count = run_python(sys.argv[2])
    elif what == "torch":
        seconds, nbytes, count = run_torch(sys.argv[2])
    elif what == "bandwidth":
        seconds, nbytes, count = bandwidth(sys.argv[2])
    else:
        sys.exit(f"unknown operation {what!r}")
    print(json.dumps({"seconds": seconds, "bytes": nbytes, "tensors": count}))


if __name__ == "__main__":
    main()
