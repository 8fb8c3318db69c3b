"""Loading a quantized GGUF as float tensors (`scripts/bench --only dequantize`): llama-1b's
shapes quantized to Q4_K_M (by `tensorfile convert --quantize Q4_K_M` of the quantize part's
bfloat16 GGUF, byte for byte what llama-quantize writes), every tensor loaded as float32:

- `tensorfile.load_file(path, dequantize="float32")` into numpy, on every core;
- gguf-py's `GGUFReader` then `gguf.quants.dequantize` of each tensor (what llama.cpp's Python
  tools do), one thread;
- transformers' GGUF loading (`load_gguf_checkpoint(path, return_tensors=True)`, the loader
  behind `from_pretrained(..., gguf_file=...)`, given the model's skeleton on the meta device,
  made before the clock), where transformers installs.

Each row its own process, timed inside it from the open to every tensor in memory as float32
(the imports not counted), warm.

  python -m benchlib.dequantize_load tensorfile|gguf-py|transformers FILE
"""

import json
import subprocess
import sys
import time
from pathlib import Path

from . import sections
from .sections import commands

SECTION = "## Loading a quantized GGUF as float32"
TENSORFILE = 'tensorfile.load_file(dequantize="float32")'
GGUFPY = "gguf-py GGUFReader + gguf.quants.dequantize"
TRANSFORMERS = "transformers load_gguf_checkpoint"


def run(tool: str, path: str) -> tuple:
    import numpy as np

    if tool == "tensorfile":
        import tensorfile

        start = time.perf_counter()
        tensors = tensorfile.load_file(path, dequantize="float32")
        seconds = time.perf_counter() - start
        return seconds, sum(t.nbytes for t in tensors.values()), len(tensors)
    if tool == "gguf-py":
        import gguf

        start = time.perf_counter()
        reader = gguf.GGUFReader(path)
        tensors = {}
        for t in reader.tensors:
            values = gguf.quants.dequantize(t.data, t.tensor_type)
            tensors[t.name] = np.ascontiguousarray(values, dtype=np.float32)
        seconds = time.perf_counter() - start
        return seconds, sum(t.nbytes for t in tensors.values()), len(tensors)
    if tool == "transformers":
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM
        from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

        # The model's skeleton (on the meta device, no memory), which transformers' loader
        # names the tensors by: made before the clock.
        p = Path(path)
        config = AutoConfig.from_pretrained(str(p.parent), gguf_file=p.name)
        with torch.device("meta"):
            skeleton = AutoModelForCausalLM.from_config(config)
        start = time.perf_counter()
        loaded = load_gguf_checkpoint(path, return_tensors=True, model_to_load=skeleton)
        tensors = loaded["tensors"]
        seconds = time.perf_counter() - start
        return seconds, sum(t.numel() * t.element_size() for t in tensors.values()), len(tensors)
    raise SystemExit(f"unknown tool {tool}")


def make(cache: Path, quick: bool) -> dict:
    from . import quantize

    folder = cache / ("quick" if quick else "full")
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "llama-1b.bf16.gguf"
    if not source.exists():  # made by gguf-py, as the quantize part makes it
        subprocess.run([str(quantize.gguf_python()), "-m", "benchlib.quantwork", "llama-bf16", str(source),
                        *(["--quick"] if quick else [])], cwd=Path(__file__).resolve().parents[1], check=True)
    out = folder / "llama-1b.Q4_K_M.gguf"
    if not out.exists():
        print(f"making {out}", file=sys.stderr, flush=True)
        tmp = out.with_suffix(".tmp.gguf")
        subprocess.run([str(quantize.binary()), "convert", str(source), str(tmp), "--quantize", "Q4_K_M"],
                       check=True, capture_output=True)
        tmp.rename(out)
    return {"llama-1b.Q4_K_M.gguf": out}


def has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def plan(files: dict, op: Path, python: Path) -> list:
    """(workload, group, label, command, file for warm/cold runs, is_write) rows."""
    path = files["llama-1b.Q4_K_M.gguf"]
    me = [str(python), "-m", "benchlib.dequantize_load"]
    group = "every tensor as float32, warm"
    rows = [("llama-1b.Q4_K_M.gguf", group, TENSORFILE, [*me, "tensorfile", str(path)], path, False)]
    if has("gguf"):
        rows.append(("llama-1b.Q4_K_M.gguf", group, GGUFPY, [*me, "gguf-py", str(path)], path, False))
    if has("transformers") and has("gguf") and has("torch"):
        rows.append(("llama-1b.Q4_K_M.gguf", group, TRANSFORMERS, [*me, "transformers", str(path)], path, False))
    return rows


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes, {repeat} repetition{'s' if repeat > 1 else ''}"
        + (" (quick: small workloads; not the numbers to judge by)." if quick else "."),
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB. Each row its own process,",
        "rows interleaved, median, warm; timed inside the process from the open to every tensor in memory as",
        "float32 (imports not counted). File: llama-1b's shapes as Q4_K_M (`tensorfile convert --quantize",
        "Q4_K_M` of the quantize part's bfloat16 GGUF). GB/s: float32 bytes made a second.",
        "", "| file | operation | tool | warm ms | GB/s of float32 | tensors | tool / gguf-py |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    base = next((r for r in results if r["label"] == GGUFPY), None)
    for r in results:
        made = r.get("bytes") or 0
        rate = f"{made / r['warm'] / 1e9:.2f}" if r["warm"] and made else "-"
        vs = f"{base['warm'] / r['warm']:.1f}x" if base and r["warm"] and r is not base else "-"
        lines.append(f"| {r['workload']} | {r['group']} | {r['label']} | {sections.ms(r['warm'])} | {rate} | "
                     f"{r.get('tensors', '-')} | {vs} |")
    lines += commands(results)
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    return sections.splice(document, section, SECTION)


def main() -> None:
    tool, path = sys.argv[1:3]
    seconds, nbytes, tensors = run(tool, path)
    print(json.dumps({"seconds": seconds, "bytes": nbytes, "tensors": tensors}))


if __name__ == "__main__":
    main()
