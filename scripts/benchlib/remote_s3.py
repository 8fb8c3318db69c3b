"""The remote part of the benchmark: all of a 1 GiB safetensors object read into memory from
an S3 endpoint, by the Python package's `tensorfile.load_file("s3://...")` beside the Run:ai
Model Streamer (`runai_model_streamer.SafetensorsStreamer`), the Rust library (bench_op) and
`curl` fetching the same object into /dev/null. `scripts/bench --only remote` runs it alone
and replaces its section of BENCHMARKS.md.

The S3 endpoint is nginx on loopback (scripts/benchlib/server.py) serving a folder that holds
a bucket folder, which answers path-style S3 GETs (`/BUCKET/KEY`, with `Range`) and HEADs as
S3 does and ignores their signatures: the S3 servers that check them (moto, s3s-fs) served
about 25 MB/s here and would be what is measured. The object: the first tensors of llama-1b
(scripts/benchlib/workloads.py) up to 1 GiB (--quick: 128 MiB), bf16, made once into
~/.cache/tensorfile/bench/{full,quick}/s3/.

The Run:ai streamer (pip runai-model-streamer and runai-model-streamer-s3, tfvenv.RUNAI_DIR)
is installed by this part into a folder of its own, put on the path of the tools'
environment's python for its row (it needs torch, which that environment has). Without it
(no network, as on a machine that only receives the tree) its row is left out, with a
message, and the others run; its wheels would have to travel with the tree.

Every row is its own process, timed inside it (from before the object's first request to
every byte in memory; not the process start nor the imports), counting the bytes it got.
The clients are pointed at the endpoint with the usual variables (`s3_environment`).

Also run as `python -m benchlib.remote_s3 tensorfile|runai ENDPOINT URL [RUNAI_DIR]` (each
prints the JSON line `scripts/bench` reads).
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

SECTION = "## Remote objects (S3) beside the Run:ai streamer"
BUCKET = "bench-bucket"
KEY = "llama-1gib.safetensors"
TENSORFILE = "tensorfile.load_file (Python, torch CPU)"
RUNAI = "Run:ai streamer 0.17 SafetensorsStreamer (Python, torch CPU)"
RUST = "tensorfile (Rust, bench_op read: each tensor summed, then dropped)"
CURL = "curl into /dev/null"
CURL_MEM = "curl into memory (a file in /dev/shm)"


def s3_environment(endpoint: str) -> dict:
    """What points object_store (tensorfile) and the AWS SDK (the Run:ai streamer) at a
    path-style endpoint over plain HTTP, with dummy credentials and no instance metadata."""
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench-secret",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        "RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING": "0",
        "RUNAI_STREAMER_LOG_LEVEL": "WARNING",
    }


def object_bytes(quick: bool) -> int:
    return (128 if quick else 1024) << 20


def make(cache: Path, quick: bool) -> dict:
    """The served folder and the object in it (made once), the Run:ai streamer installed;
    exits with a message when it cannot be."""
    import numpy as np

    from . import workloads

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import tfvenv

    runai = tfvenv.RUNAI_DIR if tfvenv.ensure_target(tfvenv.RUNAI_DIR, tfvenv.RUNAI_PACKAGES) else None
    if runai is None:
        print(f"remote part: no Run:ai streamer in {tfvenv.RUNAI_DIR} and it could not be installed (no network?"
              " its wheels would have to travel with the tree): its row is left out", file=sys.stderr, flush=True)
    root = cache / ("quick" if quick else "full") / "s3"
    path = root / BUCKET / KEY
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        rng, total, picked = np.random.default_rng(0), 0, []
        for name, shape in workloads.llama_shapes(quick=False):
            n = int(np.prod(shape)) * 2
            if total + n > object_bytes(quick):
                break
            picked.append((name, shape, (lambda s=shape: workloads.bf16_normal(rng, s))))
            total += n
        tmp = path.with_suffix(".tmp")
        workloads.write_safetensors_bf16(tmp, picked)
        tmp.rename(path)
    os.chmod(path, 0o644)
    with open(path, "rb") as f:  # in the page cache: the server sends from memory
        while f.read(64 << 20):
            pass
    return {"root": root, "object": path, "runai": runai}


# The endpoint, started by `plan` and stopped when the process exits.
_SERVER = None
_ENDPOINT = "ENDPOINT"


def plan(files: dict, op: Path, python: Path) -> list:
    """(workload, group, label, command, None, is_write) rows; starts the endpoint, which
    `render` stops. No cold rows: the endpoint sends from the page cache."""
    global _SERVER, _ENDPOINT
    import atexit

    from .server import Nginx

    _SERVER = Nginx(files["root"])
    atexit.register(_SERVER.stop)
    endpoint = _ENDPOINT = f"http://127.0.0.1:{_SERVER.port}"
    url = f"s3://{BUCKET}/{KEY}"
    env = ["env", *(f"{k}={v}" for k, v in s3_environment(endpoint).items())]
    me = [str(python), "-m", "benchlib.remote_s3"]
    group = f"read all of {KEY}"
    rows = [("remote", group, TENSORFILE, [*me, "tensorfile", endpoint, url], None, False)]
    if files["runai"] is not None:
        rows.append(("remote", group, RUNAI, [*me, "runai", endpoint, url, str(files["runai"])], None, False))
    return rows + [
        ("remote", group, RUST, [*env, str(op), "tensorfile", "read", url], None, False),
        ("remote", group, CURL, [str(op), "curl", "read", f"{endpoint}/{BUCKET}/{KEY}"], None, False),
        ("remote", group, CURL_MEM, [str(op), "curl", "read-mem", f"{endpoint}/{BUCKET}/{KEY}"], None, False),
    ]


def run_tensorfile(url: str) -> tuple:
    import tensorfile
    import torch  # noqa: F401  (imported before the clock starts)

    start = time.perf_counter()
    tensors = tensorfile.load_file(url, framework="torch")
    seconds = time.perf_counter() - start
    return seconds, sum(t.numel() * t.element_size() for t in tensors.values()), len(tensors)


def run_runai(url: str) -> tuple:
    import torch  # noqa: F401
    from runai_model_streamer import SafetensorsStreamer

    start = time.perf_counter()
    tensors = {}
    with SafetensorsStreamer() as streamer:
        streamer.stream_file(url, device="cpu")
        for name, tensor in streamer.get_tensors():
            tensors[name] = tensor  # owned (the default): each stays valid while held
    seconds = time.perf_counter() - start
    return seconds, sum(t.numel() * t.element_size() for t in tensors.values()), len(tensors)


def header_bytes(path: Path) -> int:
    with open(path, "rb") as f:
        return 8 + int.from_bytes(f.read(8), "little")


def secs(s) -> str:
    return "-" if s is None else f"{s:.2f}"


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    """The section, from its heading to its last line."""
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    size = files["object"].stat().st_size
    tensor_bytes = size - header_bytes(files["object"])
    by = {r["label"]: r for r in results}
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes, {repeat} repetitions"
        + (" (quick: a 128 MiB object; not the numbers to judge by)." if quick else "."),
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB; the endpoint",
        "(nginx, 2 workers) runs on the same cores as the client. Each row its own process, median, timed",
        "inside it (not the process start nor imports), from before the first request to every byte",
        "of every tensor in memory, the bytes counted. The endpoint: nginx on loopback serving a folder",
        "as a path-style S3 bucket (GET with `Range`, HEAD; signatures ignored), the object in the page",
        f"cache. Object: `s3://{BUCKET}/{KEY}`, {size / 2**30:.2f} GiB, the first "
        f"{results[0]['tensors'] if results else '?'} tensors of llama-1b (bf16).", "",
        "| tool | s | GB/s | tensor bytes | tensors | peak anon MiB | Run:ai / tool | of curl |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    runai, curl = by.get(RUNAI), by.get(CURL)
    if runai is None:
        lines[-3:-3] = ["The Run:ai streamer could not be installed on this machine: its row is left out."]
    for r in results:
        rate = r["bytes"] / r["warm"] if r["warm"] else None
        ratio = f"{runai['warm'] / r['warm']:.1f}x" if runai and r["label"] != RUNAI else "-"
        share = f"{(r['bytes'] / r['warm']) / (curl['bytes'] / curl['warm']):.2f}" if curl and r is not curl else "-"
        lines.append(f"| {r['label']} | {secs(r['warm'])} | {'-' if rate is None else f'{rate / 1e9:.2f}'} | "
                     f"{r['bytes']:,} | {r['tensors'] or '-'} | {r['peak_anon'] / 2**20:.0f} | {ratio} | {share} |")
    lines += [
        "", f"Tensor bytes: the object less its header ({tensor_bytes:,}); curl's rows count the whole "
        f"object ({size:,}). Of curl: bytes per second over those of curl into /dev/null, which keeps "
        "nothing (no memory to fault in, no copy out of the socket's buffers but the kernel's).",
        "", "Each row's process, as run (from `scripts/`; ENDPOINT the nginx, the rows with `env` given the",
        "variables of `remote_s3.s3_environment`, which the Python rows set themselves):", "",
    ]
    for r in results:
        words = r["command"].replace(_ENDPOINT, "ENDPOINT").split()
        shown = " ".join(c for c in words if "=" not in c)
        lines.append(f"- {r['label']}: `{shown}`")
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    """`document` with its remote section replaced by `section` (or added at its end)."""
    from .sections import splice as replace

    return replace(document, section, SECTION)


def main() -> None:
    what, endpoint, url = sys.argv[1], sys.argv[2], sys.argv[3]
    os.environ.update(s3_environment(endpoint))
    if what == "tensorfile":
        seconds, nbytes, count = run_tensorfile(url)
    elif what == "runai":
        sys.path.insert(0, sys.argv[4])
        seconds, nbytes, count = run_runai(url)
    else:
        sys.exit(f"unknown tool {what!r}")
    print(json.dumps({"seconds": seconds, "bytes": nbytes, "tensors": count}))


if __name__ == "__main__":
    main()
