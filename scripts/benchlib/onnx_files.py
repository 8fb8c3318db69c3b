"""The ONNX part of the benchmark: reading every initializer of a model, tensorfile against
`onnx.load` + `onnx.numpy_helper.to_array` (the same work on both sides: every tensor's bytes
read once, summed). `scripts/bench --only onnx` runs it alone and replaces its section of
BENCHMARKS.md.

Workload (in the benchmark's cache folder, made once with onnx): `onnx-mlp`, a stack of
float32 linear layers (MatMul + Add) of about 400 MB of weights (40 MB with --quick), saved
twice by `onnx.save_model`: inline (`raw_data` in the protobuf) and with every weight in one
external data file (`save_as_external_data=True`).

A row is one process: tensorfile through `crates/tensorfile/examples/bench_op.rs` (`read`:
open, read every entry, sum its bytes); onnx through this module's `onnx-read` (`onnx.load`,
which loads external data, then `numpy_helper.to_array` of each initializer and the same sum).
"""

import json
import sys
import time
from pathlib import Path

SECTION = "## ONNX"
LAYERS = 24
WIDTH = 2048


def make(cache: Path, quick: bool) -> dict:
    """{"inline": path, "external": path}; made once and reused."""
    folder = cache / ("quick" if quick else "full") / "onnx"
    inline, external = folder / "mlp-inline.onnx", folder / "mlp-external" / "model.onnx"
    if inline.exists() and external.exists():
        return {"inline": inline, "external": external}
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    width = WIDTH // 4 if quick else WIDTH
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(LAYERS):
        w = rng.standard_normal((width, width), dtype=np.float32)
        b = rng.standard_normal(width, dtype=np.float32)
        inits += [numpy_helper.from_array(w, f"layers.{i}.weight"), numpy_helper.from_array(b, f"layers.{i}.bias")]
        nodes += [helper.make_node("MatMul", [x, f"layers.{i}.weight"], [f"h{i}"]),
                  helper.make_node("Add", [f"h{i}", f"layers.{i}.bias"], [f"y{i}"])]
        x = f"y{i}"
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", width])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["n", width])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    folder.mkdir(parents=True, exist_ok=True)
    print(f"making {inline}", file=sys.stderr, flush=True)
    onnx.save_model(model, str(inline))
    external.parent.mkdir(exist_ok=True)
    print(f"making {external}", file=sys.stderr, flush=True)
    onnx.save_model(model, str(external), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.data", size_threshold=0)
    return {"inline": inline, "external": external}


def plan(files: dict, op: Path, python: Path) -> list:
    """(workload, group, label, command, file for warm and cold runs, is_write)."""
    rows = []
    for form, path in files.items():
        data = path.with_name("model.data") if form == "external" else path
        rows.append(("onnx-mlp", f"read all ({form})", "tensorfile", [str(op), "tensorfile", "read", str(path)],
                     data, False))
        rows.append(("onnx-mlp", f"read all ({form})", "onnx + numpy_helper",
                     [str(python), "-m", "benchlib.onnx_files", "onnx-read", str(path)], data, False))
    return rows


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    lines = [
        SECTION,
        "",
        f"`{command}`{' (quick workloads)' if quick else ''}, {repeat} repetition(s), {elapsed / 60:.1f} minutes.",
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB; other builds may",
        "have run beside it: only the ratios of this run carry over. Each row is its own process, timed",
        "inside it (open and read every initializer, summing its bytes); warm: the file read once before;",
        "cold: dropped from the page cache first.",
        "",
        "| operation | tool | warm ms | cold ms | GB/s warm | peak anon MiB | tensors | onnx / tensorfile (warm) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    by_group = {}
    for r in results:
        by_group.setdefault(r["group"], {})[r["label"]] = r
    for group, rows in by_group.items():
        ours, peer = rows.get("tensorfile"), rows.get("onnx + numpy_helper")
        for label, r in rows.items():
            rate = f"{r['bytes'] / r['warm'] / 1e9:.2f}" if r["bytes"] and r["warm"] else "-"
            ratio = f"{peer['warm'] / ours['warm']:.1f}x" if label == "tensorfile" and ours and peer else ""
            cold = f"{r['cold'] * 1e3:.1f}" if r["cold"] is not None else "-"
            lines.append(f"| {group} | {label} | {r['warm'] * 1e3:.1f} | {cold} | {rate} | "
                         f"{r['peak_anon'] / 2**20:.0f} | {r['tensors']} | {ratio} |")
    sizes = ", ".join(f"{form} `{p.name}` {p.stat().st_size / 1e6:.1f} MB" for form, p in files.items())
    lines += ["", f"Files: {sizes} (external: plus `model.data`).", "", "Commands (from `scripts/`):", ""]
    lines += [f"- {r['group']}, {r['label']}: `{r['command']}`" for r in results]
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    """`document` with its ONNX section replaced by `section` (or added at its end)."""
    from .sections import splice as replace

    return replace(document, section, SECTION)


def onnx_read(path: str) -> tuple[float, int, int]:
    """onnx's own way: load the model (and its external data), then every initializer as an
    array, each summed as the Rust side sums its bytes."""
    import onnx
    from onnx import numpy_helper

    from .peers import touch

    start = time.perf_counter()
    model = onnx.load(path)
    nbytes = tensors = 0
    for t in model.graph.initializer:
        nbytes += touch(numpy_helper.to_array(t))
        tensors += 1
    return time.perf_counter() - start, nbytes, tensors


if __name__ == "__main__":
    if sys.argv[1] != "onnx-read":
        sys.exit(f"unknown op {sys.argv[1]}")
    seconds, nbytes, tensors = onnx_read(sys.argv[2])
    print(json.dumps({"seconds": seconds, "bytes": nbytes, "tensors": tensors}))
