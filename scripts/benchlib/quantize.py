"""The quantize part of the benchmark (`scripts/bench --only quantize`): `tensorfile convert
--quantize` beside llama.cpp's `llama-quantize` and gguf-py's numpy quantizers.

- Q4_K_M of llama-1b: Llama-3.2-1B's shapes as a bfloat16 GGUF (2.47 GB, `quantwork.py
  llama-bf16`), quantized by `llama-quantize IN OUT Q4_K_M N` and by `tensorfile --threads N
  convert IN OUT --quantize Q4_K_M`, on 1 thread and on every core. Before the timed rows,
  both run once on every core and their outputs are compared byte for byte (the section says
  whether they are identical). Target: at least 1.5x llama-quantize's speed on the same
  threads, and peak anonymous memory bounded by one tensor, not the model.
- gguf-py's types: 4096 x 4096 float32 values (normal, 64 MiB) quantized to each type gguf-py
  0.19 quantizes, by `gguf.quants.quantize` (timed in its process from the rows in memory to
  the blocks made), by our kernels alike (`bench_op tensorfile quantize`: `GgmlType::quantize`
  on one thread, from the rows in memory) and by `tensorfile --threads 1 convert
  rows.safetensors out.gguf --quantize TYPE` (the whole command: reading, quantizing, writing
  and syncing the file). Target: our kernels at least 20x gguf-py.
- ggml's own C, per thread: the same rows quantized without an importance matrix by
  `ggml_quantize_chunk` of the built `libggml-base` (`ggml_quantize.py`, timed around the
  call, fresh output) beside our kernel row, for gguf-py's types and the K-quants and IQ4
  types gguf-py does not quantize. Target: our kernels at least ggml's C on one thread.

llama-quantize is the one `scripts/llama-tools` builds (the part is skipped when it is not
built); gguf-py runs in the gguf environment (tfvenv.GGUF_VENV). Each row its own process,
timed by `timed.py` (wall time and the command's own peak RssAnon), the input read once
before, rows interleaved, median of the repetitions.
"""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from . import sections
from .sections import commands

SECTION = "## Quantizing (convert --quantize)"
GGUFPY_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4", "BF16"]
# Quantized by ggml's C beside our kernels: gguf-py's types and those it does not quantize.
GGML_TYPES = GGUFPY_TYPES + ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"]
GGML = "ggml_quantize_chunk (C), one thread"
KERNEL = "tensorfile kernel, one thread"
SCRIPTS = Path(__file__).resolve().parents[1]
ROOT = SCRIPTS.parent
WRITES = True


def tools() -> dict:
    done = subprocess.run([sys.executable, str(SCRIPTS / "llama-tools"), "--print"], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def gguf_python() -> Path:
    sys.path.insert(0, str(SCRIPTS))
    import tfvenv

    python = tfvenv.python(tfvenv.GGUF_VENV)
    if not python.exists() and not tfvenv.ensure_side(tfvenv.GGUF_VENV, tfvenv.GGUF_PACKAGES):
        sys.exit(f"no environment at {tfvenv.GGUF_VENV}")
    return python


def binary() -> Path:
    import os

    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "tensorfile"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    return h.hexdigest()


def make(cache: Path, quick: bool) -> dict:
    import numpy as np

    folder = cache / ("quick" if quick else "full")
    folder.mkdir(parents=True, exist_ok=True)
    paths = tools()
    if not paths.get("built"):
        sys.exit("the quantize part needs llama.cpp's tools: run scripts/llama-tools first (10-20 minutes)")
    python = gguf_python()
    llama = folder / "llama-1b.bf16.gguf"
    if not llama.exists():
        subprocess.run([str(python), "-m", "benchlib.quantwork", "llama-bf16", str(llama), *(["--quick"] if quick else [])],
                       cwd=SCRIPTS, check=True)
    rows_npy, rows_st = folder / "quant-rows.npy", folder / "quant-rows.safetensors"
    if not rows_st.exists():
        from safetensors.numpy import save_file

        n = 1024 if quick else 4096
        rows = (np.random.default_rng(11).standard_normal((n, 4096), dtype=np.float32) * 0.02)
        np.save(rows_npy, rows)
        save_file({"rows": rows}, str(rows_st))
    # Once, untimed, on every core: the two tools' files compared byte for byte.
    check = folder / "q4km-check"
    check.mkdir(exist_ok=True)
    theirs, ours = check / "theirs.gguf", check / "ours.gguf"
    subprocess.run([paths["llama_quantize"], str(llama), str(theirs), "Q4_K_M"], check=True, capture_output=True)
    subprocess.run([str(binary()), "convert", str(llama), str(ours), "--quantize", "Q4_K_M"], check=True,
                   capture_output=True)
    identical = sha256(theirs) == sha256(ours)
    theirs.unlink()
    ours.unlink()
    return {"llama": llama, "rows_npy": rows_npy, "rows_st": rows_st, "identical": identical,
            "llama_quantize": Path(paths["llama_quantize"]), "gguf_python": python,
            "libggml_base": Path(paths["libggml_base"])}


def timed(python: Path, nbytes: int, command: list) -> list:
    return [str(python), "-m", "benchlib.timed", "--bytes", str(nbytes), "--", *map(str, command)]


def plan(files: dict, op: Path, python: Path, out: Path) -> list:
    """(workload, group, label, command, file read warm before, is_write) rows."""
    import os

    rows = []
    llama, size = files["llama"], files["llama"].stat().st_size
    for threads in (1, os.cpu_count()):
        group = f"Q4_K_M, {threads} thread{'s' if threads > 1 else ''}"
        rows.append(("q4km", group, "llama-quantize",
                     timed(python, size, [files["llama_quantize"], llama, out / "theirs.gguf", "Q4_K_M", threads]),
                     llama, True))
        rows.append(("q4km", group, "tensorfile convert --quantize",
                     timed(python, size, [binary(), "--threads", threads, "convert", llama, out / "ours.gguf",
                                          "--quantize", "Q4_K_M"]), llama, True))
    nbytes = files["rows_npy"].stat().st_size - 128
    for t in GGUFPY_TYPES:
        rows.append(("ggufpy", t, "gguf-py gguf.quants.quantize",
                     [str(files["gguf_python"]), "-m", "benchlib.ggufpy_quantize", t, str(files["rows_npy"])],
                     files["rows_npy"], False))
        rows.append(("ggufpy", t, "tensorfile, one thread",
                     timed(python, nbytes, [binary(), "--threads", 1, "convert", files["rows_st"], out / f"{t}.gguf",
                                            "--quantize", t]), files["rows_st"], True))
    for t in GGML_TYPES:
        rows.append(("ggufpy", t, KERNEL,
                     [str(op), "tensorfile", "quantize", str(files["rows_st"]), t, "1"], files["rows_st"], False))
        rows.append(("ggml", t, GGML,
                     [str(files["gguf_python"]), "-m", "benchlib.ggml_quantize", str(files["libggml_base"]), t,
                      str(files["rows_npy"])], files["rows_npy"], False))
    return rows


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    by = {(r["group"], r["label"]): r for r in results}
    llama = files["llama"]
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes, {repeat} repetitions"
        + (" (quick: small workloads; not the numbers to judge by)." if quick else "."),
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB. Each row its own process,",
        "the input read once before (warm), the output folder emptied and synced before, rows interleaved, median.",
        f"llama-1b: `{llama.name}`, {llama.stat().st_size / 1e9:.2f} GB (Llama-3.2-1B's shapes, bfloat16, norms F32).",
        "llama-quantize: built from the llama-cpp-python 0.3.36 sdist by scripts/llama-tools (CMake defaults).",
        f"Q4_K_M outputs of the two tools on every core, compared once before the timed rows: "
        f"**{'byte-identical' if files['identical'] else 'DIFFERENT'}**.", "",
        "### Targets", "",
        "| target | this run | met |", "| --- | --- | --- |",
    ]
    q4 = sorted({r["group"] for r in results if r["workload"] == "q4km"}, key=lambda g: int(g.split(", ")[1].split()[0]))
    for g in q4:
        x = by[(g, "llama-quantize")]["warm"] / by[(g, "tensorfile convert --quantize")]["warm"]
        lines.append(f"| {g}: at least 1.5x llama-quantize's speed | {x:.2f}x | {'yes' if x >= 1.5 else '**no**'} |")
    largest = 128256 * 2048 * 4  # the token embedding as float32: the largest tensor quantized
    for g in q4:
        peak = by[(g, "tensorfile convert --quantize")]["peak_anon"]
        lines.append(f"| {g}: peak anonymous memory within one tensor's float32 ({largest / 2**20:.0f} MiB) plus "
                     f"its blocks | {peak / 2**20:.0f} MiB | {'yes' if peak <= largest * 1.5 else '**no**'} |")
    for t in GGUFPY_TYPES:
        x = by[(t, "gguf-py gguf.quants.quantize")]["warm"] / by[(t, "tensorfile kernel, one thread")]["warm"]
        lines.append(f"| {t} on one thread: at least 20x gguf-py | {x:.1f}x | {'yes' if x >= 20 else '**no**'} |")
    for t in GGML_TYPES:
        x = by[(t, GGML)]["warm"] / by[(t, KERNEL)]["warm"]
        lines.append(f"| {t} on one thread, no importance: at least ggml's C | {x:.2f}x | {'yes' if x >= 1 else '**no**'} |")
    lines += ["", "### Q4_K_M of llama-1b", "",
              "| threads | tool | s | GB/s of input | vs llama-quantize | peak anon MiB |", "| --- | --- | --- | --- | --- | --- |"]
    for g in q4:
        base = by[(g, "llama-quantize")]["warm"]
        for label in ("llama-quantize", "tensorfile convert --quantize"):
            r = by[(g, label)]
            lines.append(f"| {g.split(', ')[1]} | {label} | {r['warm']:.2f} | {r['bytes'] / r['warm'] / 1e9:.3f} | "
                         f"{base / r['warm']:.2f}x | {r['peak_anon'] / 2**20:.0f} |")
    lines += ["", "### gguf-py's quantizers, one thread", "",
              f"{files['rows_npy'].stat().st_size / 2**20:.0f} MiB of float32 rows. gguf-py and the kernel row: the quantizing alone, "
              "from the rows in memory; the command: `tensorfile --threads 1 convert ... --quantize TYPE` whole (start, read, "
              "quantize, write, sync).", "",
              "| type | gguf-py ms | kernel ms | kernel MB/s of input | kernel vs gguf-py | command ms | command vs gguf-py |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for t in GGUFPY_TYPES:
        g, k, o = (by[(t, label)] for label in ("gguf-py gguf.quants.quantize", "tensorfile kernel, one thread",
                                                 "tensorfile, one thread"))
        lines.append(f"| {t} | {sections.ms(g['warm'])} | {sections.ms(k['warm'])} | {k['bytes'] / k['warm'] / 1e6:.0f} | "
                     f"{g['warm'] / k['warm']:.1f}x | {sections.ms(o['warm'])} | {g['warm'] / o['warm']:.1f}x |")
    lines += ["", "### ggml's C quantizer, one thread", "",
              "The same rows, no importance matrix: `ggml_quantize_chunk` of the built `libggml-base` (the code "
              "llama-quantize runs) against our kernel (`GgmlType::quantize` on a pool of one thread), each timed "
              "around the quantizing alone, each writing fresh output memory.", "",
              "| type | ggml ms | kernel ms | ggml M floats/s | kernel M floats/s | kernel vs ggml |",
              "| --- | --- | --- | --- | --- | --- |"]
    for t in GGML_TYPES:
        g, k = by[(t, GGML)], by[(t, KERNEL)]
        lines.append(f"| {t} | {sections.ms(g['warm'])} | {sections.ms(k['warm'])} | {g['bytes'] / 4 / g['warm'] / 1e6:.0f} | "
                     f"{k['bytes'] / 4 / k['warm'] / 1e6:.0f} | {g['warm'] / k['warm']:.2f}x |")
    lines += commands(results)
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    from .sections import splice as replace

    return replace(document, section, SECTION)
