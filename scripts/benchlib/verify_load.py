"""The verify-on-load part of the benchmark (`scripts/bench --only verify`): what checking
costs when loading. `tensorfile.load_file` into numpy, every byte read, of llama-1b as `.zt`
(crc32c per tensor, as `convert` writes it) with the stored checksums checked (the default) and
without (`verify=False`); of llama-1b as `.safetensors` with its sha256 in a `.sha256` file
beside it, checked beside the load (`verify=True`) and not (`verify=False`); and `sha256sum`
of the same file. Warm (read once before) and cold (dropped from the page cache) where the
bench may drop it.
"""

import hashlib
from pathlib import Path

from . import sections
from .sections import commands

SECTION = "## Verify on load"
OFF = "load_file(verify=False)"
CHECKSUMS = "load_file() (stored checksums)"
FULL = "load_file(verify=True) (sha256 beside it)"
SHA256SUM = "sha256sum"


def make(cache: Path, quick: bool) -> dict:
    from . import workloads

    files = workloads.llama_only(cache, quick)
    st = files["llama-1b.safetensors"]
    zt = st.with_suffix(".crc32c.zt")
    if not zt.exists():
        import tensorfile

        tensorfile.convert(str(st), str(zt), checksum="crc32c")
    sidecar = Path(str(st) + ".sha256")
    if not sidecar.exists() or sidecar.stat().st_mtime < st.stat().st_mtime:
        digest = hashlib.sha256()
        with open(st, "rb") as f:
            for block in iter(lambda: f.read(8 << 20), b""):
                digest.update(block)
        sidecar.write_text(f"{digest.hexdigest()}  {st.name}\n")
    return {"llama-1b.zt": zt, "llama-1b.safetensors": st}


def plan(files: dict, op: Path, python: Path) -> list:
    """(workload, group, label, command, file for warm/cold runs, is_write) rows."""
    peers = [str(python), "-m", "benchlib.peers", "tensorfile"]
    zt, st = files["llama-1b.zt"], files["llama-1b.safetensors"]
    return [
        ("llama-1b.zt", "load into numpy, crc32c per tensor", OFF, [*peers, "load-np-off", str(zt)], zt, False),
        ("llama-1b.zt", "load into numpy, crc32c per tensor", CHECKSUMS, [*peers, "load-np-checksums", str(zt)], zt,
         False),
        ("llama-1b.safetensors", "load into numpy, sha256 beside it", OFF, [*peers, "load-np-off", str(st)], st, False),
        ("llama-1b.safetensors", "load into numpy, sha256 beside it", FULL, [*peers, "load-np-full", str(st)], st,
         False),
        ("llama-1b.safetensors", "load into numpy, sha256 beside it", SHA256SUM,
         [str(python), "-m", "benchlib.timed", "--", "sha256sum", str(st)], st, False),
    ]


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes, {repeat} repetition{'s' if repeat > 1 else ''}"
        + (" (quick: small workloads; not the numbers to judge by)." if quick else "."),
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB. Each row its own process,",
        "rows interleaved, median; warm: read once before; cold: dropped from the page cache first. `vs off`:",
        "the unchecked load's time over the row's (1.0: checking costs nothing; the target is at least 0.8).",
        "", "| file | operation | tool | warm ms | warm GB/s | warm vs off | cold ms | cold vs off |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in results:
        off = next((p for p in results if p["workload"] == r["workload"] and p["label"] == OFF), None)
        size = files[r["workload"]].stat().st_size
        rate = f"{size / r['warm'] / 1e9:.2f}" if r["warm"] else "-"

        def vs(mode: str) -> str:
            if off is None or r["label"] == OFF or not r[mode] or not off[mode]:
                return "-"
            return f"{off[mode] / r[mode]:.2f}x"

        lines.append(f"| {r['workload']} | {r['group']} | {r['label']} | {sections.ms(r['warm'])} | {rate} | "
                     f"{vs('warm')} | {sections.ms(r['cold'])} | {vs('cold')} |")
    lines += commands(results)
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    return sections.splice(document, section, SECTION)

