"""The writable-tensors part of the benchmark: loading a checkpoint into torch with
`tensorfile.load_file` (every tensor writable memory of its own: a private copy-on-write map of
the file from 64 KiB, a copy below) beside `safetensors.torch.load_file`, warm, in one run;
then the same followed by a write to every byte of every tensor (what the first steps of
training or an in-place edit cost: the kernel copies each page on its first write). Workloads:
llama-1b (2.5 GB, 146 tensors) and many-small (50,000 tensors of 1-16 KiB). `scripts/bench
--only writable` runs it alone and replaces its section of BENCHMARKS.md.
"""

from pathlib import Path

import numpy as np

from . import sections
from .sections import commands

SECTION = "## Writable tensors into torch"
TARGET = "tensorfile.load_file (torch)"
PEER = "safetensors.torch.load_file"


def make(cache: Path, quick: bool) -> dict:
    from . import workloads

    folder = cache / ("quick" if quick else "full")
    files = workloads.llama_only(cache, quick)
    small = folder / "many-small.safetensors"
    if not small.exists():
        from safetensors.numpy import save_file

        rng = np.random.default_rng(2)
        shapes = workloads.small_shapes(5_000 if quick else 50_000)
        save_file({n: rng.standard_normal(s, dtype=np.float32) for n, s in shapes}, str(small))
    files["many-small.safetensors"] = small
    return files


def plan(files: dict, op: Path, python: Path) -> list:
    """(workload, group, label, command, file for warm runs, is_write) rows."""
    peers = [str(python), "-m", "benchlib.peers"]
    rows = []
    for name, path in files.items():
        for verb, what in (("load-torch", "load into torch, read every byte"),
                           ("load-torch-write", "load into torch, write every byte")):
            rows += [
                (name, what, TARGET, [*peers, "tensorfile", verb, str(path)], path, False),
                (name, what, PEER, [*peers, "safetensors", verb, str(path)], path, False),
            ]
    return rows


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    """The section, from its heading to its last line."""
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sizes = ", ".join(f"`{name}` {p.stat().st_size / 1e9:.2f} GB" for name, p in files.items())
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes, {repeat} repetitions"
        + (" (quick: small workloads; not the numbers to judge by)." if quick else "."),
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB. Each row its own process,",
        "rows interleaved, median; warm: the file read once before; cold: dropped from the page cache",
        "first. Every tensor comes back writable from both; the first group then reads every byte,",
        "the second writes every byte (in place). Ratios: safetensors' time over tensorfile's (above",
        "1: tensorfile is faster). Peak anon: the most anonymous memory of the process, warm or cold.",
        f"Files: {sizes}.", "",
        "| file | operation | tool | warm ms | warm GB/s | warm vs safetensors | cold ms | cold vs safetensors "
        "| peak anon MiB | tensors |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        peer = next((p for p in results if p["workload"] == r["workload"] and p["group"] == r["group"]
                     and p["label"] == PEER), None)
        rate = f"{r['bytes'] / r['warm'] / 1e9:.2f}" if r["bytes"] and r["warm"] else "-"
        lines.append(f"| {r['workload']} | {r['group']} | {r['label']} | {sections.ms(r['warm'])} | {rate} | "
                     f"{ratio(peer, r, 'warm')} | {sections.ms(r['cold'])} | {ratio(peer, r, 'cold')} | "
                     f"{r['peak_anon'] / 2**20:.0f} | {r['tensors']} |")
    lines += commands(results)
    return "\n".join(lines) + "\n"


def ratio(peer, row, mode: str) -> str:
    """safetensors' time over the row's, for tensorfile's rows."""
    if peer is None or row["label"] == PEER or not row[mode] or not peer[mode]:
        return "-"
    return f"{peer[mode] / row[mode]:.2f}x"


def splice(document: str, section: str) -> str:
    return sections.splice(document, section, SECTION)
