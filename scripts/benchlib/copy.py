"""The copy-limit part of the benchmark: conversions that copy tensor bytes unchanged (between
safetensors, zTensor, `.ptd`, GGUF and `.pt`), each beside coreutils `cp` of its source file
followed by a sync of the copy: the same bytes written with the same durability as the
conversion's atomic write (its temporary file synced, then renamed). `scripts/bench --only
copy` runs it alone and replaces its section of BENCHMARKS.md.

Every row is its own process (`examples/bench_op.rs`: `cp sync`, `tensorfile convert` and
`convert-unchecked`), timed inside it, the source read once before (warm), the output folder
emptied and synced before; rows interleaved, median of the repetitions. The `.zt` source is
written with CRC-32C checksums (the default), so converting from it checks them unless
unchecked.
"""

import os
import subprocess
from pathlib import Path

from . import sections
from .sections import commands

SECTION = "## Conversion at the copy limit"
CP = "cp + sync of the source"

# (source, output extension, op): `convert` checks and writes checksums as the CLI does by
# default; `convert-unchecked` does neither.
CONVERSIONS = [
    ("safetensors", "zt", "convert"),
    ("safetensors", "zt", "convert-unchecked"),
    ("zt", "safetensors", "convert"),
    ("zt", "safetensors", "convert-unchecked"),
    ("safetensors", "ptd", "convert"),
    ("ptd", "safetensors", "convert"),
    ("safetensors", "gguf", "convert"),
    ("safetensors", "pt", "convert"),
]


def make(cache: Path, quick: bool) -> dict:
    from . import workloads

    folder = cache / ("quick" if quick else "full")
    folder.mkdir(parents=True, exist_ok=True)
    source = workloads.llama_safetensors(folder, quick)
    files = {"safetensors": source}
    target = Path(os.environ.get("CARGO_TARGET_DIR", Path(__file__).resolve().parents[2] / "target"))
    binary = target / "release" / "tensorfile"
    for fmt in ("zt", "ptd"):
        out = folder / f"llama-1b.checked.{fmt}"
        if not out.exists():
            subprocess.run([str(binary), "convert", str(source), str(out)], check=True, stdout=subprocess.DEVNULL)
        files[fmt] = out
    return files


# Rows write into the benchmark's output folder: `plan` is given it.
WRITES = True


def plan(files: dict, op: Path, python: Path, out: Path) -> list:
    """(workload, group, label, command, file read warm before, is_write) rows, writing into
    `out`."""
    rows = []
    for fmt in sorted({src for src, _, _ in CONVERSIONS}):
        rows.append(("copy", f"from .{fmt}", CP, [str(op), "cp", "sync", str(files[fmt]), str(out / f"cp.{fmt}")],
                     files[fmt], True))
    for src, dst, what in CONVERSIONS:
        label = f".{src} -> .{dst}" + (" (no checksums)" if what == "convert-unchecked" else "")
        rows.append(("copy", f"from .{src}", label,
                     [str(op), "tensorfile", what, str(files[src]), str(out / f"c.{dst}")], files[src], True))
    return rows


def ms(s) -> str:
    return sections.ms(s, decimals=0)


def ratios(results) -> list:
    """(row, its time over cp's of its source) for each conversion."""
    out = []
    for r in results:
        cp = next(p for p in results if p["group"] == r["group"] and p["label"] == CP)
        if r["label"] != CP:
            out.append((r, r["warm"] / cp["warm"]))
    return out


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    """The section, from its heading to its last line."""
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sizes = ", ".join(f"`{p.name}` {p.stat().st_size / 1e9:.2f} GB" for p in files.values())
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes, {repeat} repetitions"
        + (" (quick: small workloads; not the numbers to judge by)." if quick else "."),
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB. Each row its own process,",
        "the source read once before (warm), the output folder emptied and synced before, rows interleaved,",
        "median. `cp + sync`: coreutils `cp` (copy_file_range) then an fsync of the copy, the durability of",
        "the conversion's atomic write. Target: every conversion within 1.1x of `cp + sync` of its source.",
        f"Files: {sizes} (llama-1b, bf16; the `.zt` with CRC-32C checksums).", "",
        "| source | operation | ms | GB/s | of cp + sync | within 1.1x | peak anon MiB |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    times = dict((id(r), x) for r, x in ratios(results))
    for r in results:
        x = times.get(id(r))
        rate = r["bytes"] / r["warm"] / 1e9 if r["bytes"] and r["warm"] else None
        lines.append(f"| {r['group']} | {r['label']} | {ms(r['warm'])} | {'-' if rate is None else f'{rate:.2f}'} | "
                     f"{'-' if x is None else f'{x:.2f}x'} | {'-' if x is None else ('yes' if x <= 1.1 else '**no**')} | "
                     f"{r['peak_anon'] / 2**20:.0f} |")
    lines += commands(results)
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    """`document` with its section replaced by `section` (or added at its end)."""
    from .sections import splice as replace

    return replace(document, section, SECTION)
