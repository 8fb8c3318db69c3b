"""The cold-read part of the benchmark: reading every tensor of llama-1b into memory when the
file is not cached, beside the disk's own sequential direct read of the same file (`dd
iflag=direct bs=64M`) and a bare memory map read cold. `scripts/bench --only disk` runs it
alone and replaces its section of BENCHMARKS.md.

Rows, each its own process, interleaved, median; every row starts with the file dropped from
the page cache (`posix_fadvise(DONTNEED)`), and the warm column (read once before) is kept
for comparison. tensorfile's `load` (Rust) and `tensorfile.load_file` (Python) read a file
that is not cached whole with direct I/O first; its `read` maps it.
"""

from pathlib import Path

from . import sections
from .sections import commands

SECTION = "## Cold reads at the disk's rate"
DD = "dd iflag=direct bs=64M (the disk)"


def make(cache: Path, quick: bool) -> dict:
    from . import workloads

    return workloads.llama_only(cache, quick)


def plan(files: dict, op: Path, python: Path) -> list:
    """(workload, group, label, command, file for warm and cold runs, is_write) rows."""
    peers = [str(python), "-m", "benchlib.peers"]
    rows = []
    for name, path in files.items():
        group = f"read {name} into memory"
        rows += [
            ("disk", group, DD, [str(op), "dd", "direct", str(path)], path, False),
            ("disk", group, "tensorfile load (Rust)", [str(op), "tensorfile", "load", str(path)], path, False),
            ("disk", group, "tensorfile read, mapped (Rust)", [str(op), "tensorfile", "read", str(path)], path, False),
            ("disk", group, "bare memory map (Rust)", [str(op), "mmap", "read", str(path)], path, False),
            ("disk", group, "tensorfile.load_file, torch (Python)", [*peers, "tensorfile", "load-torch", str(path)],
             path, False),
            ("disk", group, "safetensors.torch.load_file (Python)", [*peers, "safetensors", "load-torch", str(path)],
             path, False),
        ]
    return rows


def ms(s) -> str:
    return sections.ms(s, decimals=0)


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
        "rows interleaved, median; cold: the file dropped from the page cache first; warm: read once",
        "before. Every row reads every byte of the file's tensors into memory (and touches it).",
        "Target: cold, at least 0.9 of the disk's own sequential direct read (dd).",
        f"File: {sizes} (bf16).", "",
        "| operation | tool | cold ms | cold GB/s | cold, of dd | warm ms | peak anon MiB |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        dd = next((p for p in results if p["group"] == r["group"] and p["label"] == DD), None)
        rate = r["bytes"] / r["cold"] if r["bytes"] and r["cold"] else None
        share = f"{dd['cold'] / r['cold']:.2f}x" if dd and r["cold"] and r["label"] != DD else "-"
        lines.append(f"| {r['group']} | {r['label']} | {ms(r['cold'])} | {'-' if rate is None else f'{rate / 1e9:.2f}'} | "
                     f"{share} | {ms(r['warm'])} | {r['peak_anon'] / 2**20:.0f} |")
    lines += commands(results)
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    """`document` with its section replaced by `section` (or added at its end)."""
    from .sections import splice as replace

    return replace(document, section, SECTION)
