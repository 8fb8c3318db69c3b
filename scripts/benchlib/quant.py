"""The quantized part of the benchmark: GGUF listing and reading against gguf-py's
`GGUFReader`, ggml dequantization against gguf-py's numpy `gguf.quants.dequantize` (on one
thread and on every core), and zTensor 2 reading and writing against the zTensor 2 crate
(`ztensor =2.1.1`) and pip `ztensor==2.1.2`. `scripts/bench --only quant` runs it alone and
replaces its section of BENCHMARKS.md; the full run includes it.

Workloads (in the benchmark's cache folder): `gguf-llama` and `ggml-types`
(`quantwork.py`, made by gguf-py), their zTensor 2 copy made by `ztensor.convert`, and
`llama-1b` (`workloads.py`'s bf16 safetensors) with its zTensor 2 copy made the same way.
gguf-py and pip ztensor 2.1.2 run in their own environments (tfvenv.GGUF_VENV, ZT2_VENV);
the package's rows in the benchmark's.
"""

import statistics
import subprocess
import sys
from pathlib import Path

from . import quantwork, workloads

SECTION = "## Quantized tensors, GGUF and zTensor 2"
SCRIPTS = Path(__file__).resolve().parents[1]


def make(cache: Path, quick: bool, gguf_python: Path, zt2_python: Path) -> dict:
    """workload -> {format label -> path}; each made once and reused."""
    folder = cache / ("quick" if quick else "full")
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for workload in ("gguf-llama", "ggml-types"):
        gguf = folder / f"{workload}.gguf"
        if not gguf.exists():
            print(f"making {gguf}", file=sys.stderr, flush=True)
            subprocess.run([str(gguf_python), "-m", "benchlib.quantwork", workload, str(gguf),
                            *(["--quick"] if quick else [])], cwd=SCRIPTS, check=True)
        out[workload] = {"gguf": gguf}
    dense = workloads.llama_safetensors(folder, quick)
    out["llama-1b"] = {"safetensors": dense}
    # zTensor 2 copies, made by the reference (it refuses some of ggml-types' types: none made).
    for workload, source in (("gguf-llama", out["gguf-llama"]["gguf"]), ("llama-1b", dense)):
        zt = folder / f"{workload}.v2.zt"
        if not zt.exists():
            print(f"making {zt}", file=sys.stderr, flush=True)
            partial = zt.with_name(zt.name + ".partial")
            subprocess.run([str(zt2_python), "-c", "import sys, ztensor; ztensor.convert(sys.argv[1], sys.argv[2])",
                            str(source), str(partial)], check=True)
            partial.rename(zt)
        out[workload]["zt2"] = zt
    return out


def plan(files: dict, op: Path, python: Path, gguf_python: Path, zt2_python: Path, tmp: Path) -> list:
    """(workload, group, label, command, file for warm and cold runs, is_write)."""
    tmp.mkdir(exist_ok=True)

    def rust(tool, what, *args):
        return [str(op), tool, what, *map(str, args)]

    def py(interpreter, tool, what, *args):
        return [str(interpreter), "-m", "benchlib.peers", tool, what, *map(str, args)]

    rows = []
    w = "gguf-llama"
    gguf = files[w]["gguf"]
    rows += [
        (w, "list .gguf", "tensorfile (Rust)", rust("tensorfile", "list", gguf), gguf, False),
        (w, "list .gguf", "tensorfile (Python)", py(python, "tensorfile", "list", gguf), gguf, False),
        (w, "list .gguf", "gguf-py GGUFReader", py(gguf_python, "gguf", "list", gguf), gguf, False),
        (w, "read .gguf", "tensorfile (Rust)", rust("tensorfile", "read", gguf), gguf, False),
        (w, "read .gguf", "bare memory map (Rust)", rust("mmap", "read", gguf), gguf, False),
        (w, "read .gguf", "tensorfile (Python)", py(python, "tensorfile", "read", gguf), gguf, False),
        (w, "read .gguf", "gguf-py GGUFReader", py(gguf_python, "gguf", "read", gguf), gguf, False),
    ]
    for w in ("gguf-llama", "llama-1b"):
        zt = files[w]["zt2"]
        rows += [
            (w, "read .zt (zTensor 2)", "tensorfile (Rust)", rust("tensorfile", "read", zt), zt, False),
            (w, "read .zt (zTensor 2)", "ztensor 2.1.1 crate", rust("ztensor2", "read", zt), zt, False),
            (w, "read .zt (zTensor 2)", "bare memory map (Rust)", rust("mmap", "read", zt), zt, False),
            (w, "read .zt (zTensor 2, Python)", "tensorfile", py(python, "tensorfile", "read", zt), zt, False),
            (w, "read .zt (zTensor 2, Python)", "ztensor 2.1.2 (pip)", py(zt2_python, "ztensor2", "read", zt), zt, False),
        ]
        # Writing: every writer gets the same source and writes canonical zTensor 2.
        src = files[w]["safetensors"] if w == "llama-1b" else zt
        what = f"write .zt (zTensor 2) from .{src.suffix.lstrip('.')}"
        rows += [
            (w, what, "tensorfile (Rust)", rust("tensorfile", "write-zt2", src, tmp / "q.zt"), src, True),
            (w, what, "ztensor 2.1.1 crate", rust("ztensor2", "write", src, tmp / "q.zt"), src, True),
            (w, f"{what} (Python)", "tensorfile.convert", py(python, "tensorfile", "convert", src, tmp / "q.zt"), src, True),
            (w, f"{what} (Python)", "ztensor.convert (pip)", py(zt2_python, "ztensor2", "convert", src, tmp / "q.zt"),
             src, True),
        ]
    rows += [
        ("gguf-llama", "convert .gguf -> .zt (zTensor 2)", "tensorfile (Rust)",
         rust("tensorfile", "write-zt2", gguf, tmp / "q.zt"), gguf, True),
        ("gguf-llama", "convert .gguf -> .zt (zTensor 2)", "ztensor.convert (pip)",
         py(zt2_python, "ztensor2", "convert", gguf, tmp / "q.zt"), gguf, True),
    ]
    types = files["ggml-types"]["gguf"]
    for kind in quantwork.TYPES:
        name, g = kind.lower(), f"dequantize {kind}"
        rows += [
            ("ggml-types", g, "gguf-py (numpy)", py(gguf_python, "gguf", "dequantize", types, name), None, False),
            ("ggml-types", g, ONE, rust("tensorfile", "dequantize", types, name, 1), None, False),
            ("ggml-types", g, ALL, rust("tensorfile", "dequantize", types, name, 0), None, False),
            ("ggml-types", g, ONE_REUSED, KEEP_FREED + rust("tensorfile", "dequantize", types, name, 1, "reuse"), None, False),
            ("ggml-types", g, ALL_REUSED, KEEP_FREED + rust("tensorfile", "dequantize", types, name, 0, "reuse"), None, False),
        ]
    return rows


ONE, ALL = "tensorfile, one thread", "tensorfile, all cores"
ONE_REUSED, ALL_REUSED = f"{ONE}, memory reused", f"{ALL}, memory reused"
# glibc keeping what is freed (up to 32 MiB blocks from its heap, never trimmed): a second
# decoding of a tensor under 32 MiB as float32 writes into the pages the first one faulted in.
KEEP_FREED = ["env", "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967295"]


def find(results, workload, group, label):
    return next((r for r in results if (r["workload"], r["group"], r["label"]) == (workload, group, label)), None)


def speedup(results, workload, group, ours, peer):
    a, b = find(results, workload, group, ours), find(results, workload, group, peer)
    return b["warm"] / a["warm"] if a and b and a["warm"] and b["warm"] else None


def targets(results) -> list:
    """(target, measured, ok)."""
    out = []

    def add(text, value, goal):
        if value is not None:
            out.append((text, f"{value:.2f}x", value >= goal))

    add("gguf-llama: list .gguf (Python) at least as fast as gguf-py's GGUFReader",
        speedup(results, "gguf-llama", "list .gguf", "tensorfile (Python)", "gguf-py GGUFReader"), 1.0)
    add("gguf-llama: read .gguf (Python) at least as fast as gguf-py's GGUFReader",
        speedup(results, "gguf-llama", "read .gguf", "tensorfile (Python)", "gguf-py GGUFReader"), 1.0)
    for w in ("gguf-llama", "llama-1b"):
        add(f"{w}: read .zt (zTensor 2) at least as fast as the ztensor 2.1.1 crate",
            speedup(results, w, "read .zt (zTensor 2)", "tensorfile (Rust)", "ztensor 2.1.1 crate"), 1.0)
        add(f"{w}: read .zt (zTensor 2, Python) at least as fast as pip ztensor 2.1.2",
            speedup(results, w, "read .zt (zTensor 2, Python)", "tensorfile", "ztensor 2.1.2 (pip)"), 1.0)
        write = next((r["group"] for r in results if r["workload"] == w and r["group"].startswith("write .zt")), None)
        if write:
            add(f"{w}: {write} at least as fast as the ztensor 2.1.1 crate",
                speedup(results, w, write, "tensorfile (Rust)", "ztensor 2.1.1 crate"), 1.0)
            add(f"{w}: {write} (Python) at least as fast as pip ztensor 2.1.2",
                speedup(results, w, f"{write} (Python)", "tensorfile.convert", "ztensor.convert (pip)"), 1.0)
    for kind in quantwork.TYPES:
        add(f"dequantize {kind} on one thread, at least 20x gguf-py (numpy)",
            speedup(results, "ggml-types", f"dequantize {kind}", ONE, "gguf-py (numpy)"), 20.0)
    scaling = [(speedup(results, "ggml-types", f"dequantize {k}", ALL, ONE), k) for k in quantwork.TYPES]
    scaling = [(s, k) for s, k in scaling if s is not None]
    if scaling:
        worst = min(scaling)
        out.append((f"dequantize on all cores, at least 1.7x one thread, every type (lowest: {worst[1]}; "
                    f"median {statistics.median(s for s, _ in scaling):.2f}x)", f"{worst[0]:.2f}x", worst[0] >= 1.7))
    return out


def ms(s) -> str:
    return "-" if s is None else (f"{s * 1e3:.1f}" if s < 10 else f"{s:.1f} s")


def dequantize_table(results) -> list:
    """A line per type: the times, the rates (M elements/s, GB/s of float32 written) and the
    ratios; "reused": the decoding into memory used before (the kernels alone)."""
    lines = ["| type | bits/element | gguf-py ms | 1 thread ms | all cores ms | 1 thread M elements/s | "
             "1 thread GB/s | all cores GB/s | 1 thread vs gguf-py | all cores vs 1 | reused: 1 thread GB/s | "
             "reused: all cores GB/s | reused: 1 thread vs gguf-py |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for kind in quantwork.TYPES:
        g = f"dequantize {kind}"
        peer, one, every, one_r, every_r = (find(results, "ggml-types", g, label)
                                            for label in ("gguf-py (numpy)", ONE, ALL, ONE_REUSED, ALL_REUSED))
        if not (peer and one and every and one_r and every_r):
            continue

        def rate(r):
            return f"{r['bytes'] / r['warm'] / 1e9:.2f}"

        lines.append(f"| {kind} | {quantwork.bits_per_element(kind):.4g} | {ms(peer['warm'])} | {ms(one['warm'])} | "
                     f"{ms(every['warm'])} | {one['bytes'] / 4 / one['warm'] / 1e6:.0f} | {rate(one)} | {rate(every)} | "
                     f"{peer['warm'] / one['warm']:.1f}x | {one['warm'] / every['warm']:.2f}x | {rate(one_r)} | "
                     f"{rate(every_r)} | {peer['warm'] / one_r['warm']:.1f}x |")
    return lines


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    """The section, from its heading to its last line."""
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes, {repeat} repetitions"
        + (" (quick: small workloads; not the numbers the targets are judged on)." if quick else "."),
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB; other builds may",
        "have run beside it: only the ratios of this run carry over. Rows as above (warm, cold, median,",
        "own process). `gguf-llama`: Llama-3.2-1B's shapes in a Q4_K_M-like mix (Q4_K, Q6_K, F32 norms);",
        "`ggml-types`: one tensor per ggml type, dequantized to float32 (only the decoding timed,",
        "the blocks read before; GB/s of float32 written; \"reused\": decoded a second time in the",
        "process, into the memory the first decoding faulted in, which shows the kernels without",
        "the page faults of fresh memory); `llama-1b`: the bf16 workload above.",
        "zTensor 2 files are made by pip ztensor 2.1.2 (`ztensor.convert`); every writer writes",
        "canonical zTensor 2 (64 KiB placement, an XXH3 digest per part) and syncs it.",
        "",
        "### Targets",
        "",
        "| target | this run | met |",
        "| --- | --- | --- |",
    ]
    for text, value, ok in targets(results):
        lines.append(f"| {text} | {value} | {'yes' if ok else '**no**'} |")
    lines += ["", "### Dequantization (ggml-types)", "",
              f"Each tensor: {files['ggml-types']['gguf'].stat().st_size / 1e6:.1f} MB of blocks in all "
              f"(`{files['ggml-types']['gguf'].name}`).", ""]
    lines += dequantize_table(results)
    for workload in ("gguf-llama", "llama-1b"):
        sizes = ", ".join(f"`{v.name}` {v.stat().st_size / 1e6:.1f} MB" for v in files[workload].values())
        lines += ["", f"### {workload}", "", f"Files: {sizes}.", "",
                  "| operation | tool | warm ms | cold ms | GB/s warm | peak anon MiB | tensors |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in results:
            if r["workload"] != workload:
                continue
            # Writing rows: the source file's bytes.
            nbytes = r["file_bytes"] if r["group"].startswith(("write", "convert")) else r["bytes"]
            rate = f"{nbytes / r['warm'] / 1e9:.2f}" if nbytes and r["warm"] else "-"
            lines.append(f"| {r['group']} | {r['label']} | {ms(r['warm'])} | {ms(r['cold'])} | {rate} | "
                         f"{r['peak_anon'] / 2**20:.0f} | {r['tensors']} |")
    lines += ["", "### Commands", "", "Each row's process, as run (from `scripts/`):", ""]
    for r in results:
        lines.append(f"- {r['workload']}, {r['group']}, {r['label']}: `{r['command']}`")
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    """`document` with its quantized section replaced by `section` (or added before its
    command list, or at its end)."""
    lines = document.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip("\n") == SECTION), None)
    if start is None:
        at = next((i for i, line in enumerate(lines) if line.rstrip("\n") == "## Commands"), len(lines))
        before = "".join(lines[:at])
        return before + ("" if before.endswith("\n\n") or not before else "\n") + section + "\n" + "".join(lines[at:])
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    after = "".join(lines[end:])
    return "".join(lines[:start]) + section + ("\n" + after if after else "")
