"""The GPU part of the benchmark: a safetensors checkpoint of about 8 GiB (bf16, transformer
shapes) loaded into one GPU by tensorfile and by the loaders people use, in the same run,
beside a pinned host-to-device copy of the same bytes; our other formats at the same
checkpoint; and cold loads beside the disk's own direct read. `scripts/bench --only gpu` runs
it in the interpreter that runs it (the GPU machine's python3, which holds torch) and replaces
its section of BENCHMARKS.md; where torch sees no CUDA device it says so and stops.

Steps (`--step`, a comma list; default all: about 15 minutes for 8 GiB, about 7 for the 4 GiB
of the one prepared command below):
  warm     the checkpoint made (once) and read into the page cache; per repetition, each its
           own process, interleaved: the pinned copy (the ceiling), tensorfile.load_file (a
           process's first load, and again with the staging buffers registered before the
           clock by `tensorfile.prepare_staging`), safetensors load_file, fastsafetensors (SafeTensorsFileLoader; nogds without
           /dev/nvidia-fs0), InstantTensor (safe_open, buffered I/O as its documentation
           advises from the page cache), the Run:ai streamer (SafetensorsStreamer with the
           device given) and tensorizer (TensorDeserializer, on its own format: the same
           tensors written once by TensorSerializer), each into DEVICE
  formats  the checkpoint converted to .zt (raw; zstd), .pt, .ptd, .gguf (tensorfile convert)
           and .pt2 (torch.export.save), one at a time (made, read into the cache, timed,
           deleted: the disk holds 64 GiB), each loaded by tensorfile.load_file, beside
           tensorfile on the safetensors file
  cold     the caches dropped once (drop_caches, as root), then per row the file dropped
           (posix_fadvise DONTNEED, its residency checked): the disk's direct read (dd
           iflag=direct, one stream and several on disjoint ranges; fio when present), and
           tensorfile, safetensors and InstantTensor (its default: direct I/O) cold into DEVICE
Every loader's result is checked once (first repetition) against safetensors' CPU load: each
tensor's dtype, shape and two checksums of its bytes. Each step stops starting repetitions
when its time would pass --budget, and writes what it has (the state in DIR, --json) after
every repetition.

Peers install by this script: from the registries with pip (--no-deps into a folder of their
own, put on the rows' PYTHONPATH) when the index answers; otherwise from --wheels DIR
(`scripts/gpu-wheels` fills `.whl/`), which also holds tensorfile's own wheel.

Dry run here (no GPU): `scripts/bench --only gpu --device cpu --gib 0.2 --repeat 1 --json
/tmp/gpu.json --out /tmp/B.md` runs every row that can load onto the CPU (InstantTensor cannot).

On the GPU session: one prepared command of at most 8 minutes that builds nothing there (the
device tool's `run`, carry [".whl"]; `--json` comes back under $OUT, rewritten after every
repetition, so a run cut short still returns the rows measured, most important first: the
pinned copy, tensorfile, the peers warm, our formats, cold):

  scripts/gpu-wheels                       # here, first: fills .whl/ (git-ignored, ~18 MiB)
  run (timeout_s 560): set -o pipefail; PYTHONUNBUFFERED=1 timeout 490 python3 scripts/bench --only gpu
      --wheels .whl --gib 4 --repeat 2 --formats zt,gguf,pt,pt2,ptd --budget 370
      --json $OUT/gpu.json --out $OUT/BENCHMARKS.md 2>&1 | tee $OUT/log
  here: scripts/bench --only gpu --from-json gpu.json   # the section into BENCHMARKS.md

Rehearsed here on 2026-11-28 (`--device cpu --gib 0.2 --repeat 1`, the same steps and formats,
the 2-core machine under a load of 12): clean in one go in 6 min 41 s: peers installed from
the registry, the checkpoint made in 9 s, warm 133 s, formats 160 s (.pt2 by torch.export.save
the slowest), cold 62 s; every row's check ok (InstantTensor skipped: CUDA only). Most of it is
process start (each row its own interpreter with torch); on the GPU machine's 16 cores each
row's start is shorter and the CUDA context longer (about 6 s, `gpu_report.estimate`).
Run on an H200 on 2026-11-28 (BENCHMARKS.md): 312 s for the whole command, of the 490 s
allowed; the machine's start took about half a minute more. `benchlib/gpu_probe.py` is the
follow-up run that took what limits the warm row apart (docs/performance.md).

A later call finds the checkpoint and the state made by an earlier one while the machine is
held; on a fresh machine it makes them again (about a minute). `--from-json` renders the
section from the JSON files alone (no measuring) into --out.
"""

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import gpu_report
from .gpu_steps import Run, make_once, rows_command

PEERS = ["fastsafetensors==0.5.*", "instanttensor==0.2.*", "runai-model-streamer==0.17.*", "tensorizer==2.12.*"]
# What the peers import beyond torch and numpy. Installed (without their own dependencies)
# where the interpreter lacks them; the GPU machines' image lacks the first seven (its
# package list), which `scripts/gpu-wheels` therefore downloads.
PEER_DEPS = ["boto3", "botocore", "s3transfer", "jmespath", "redis", "hiredis", "libnacl",
             "humanize", "psutil", "protobuf", "python-dateutil", "six", "urllib3"]
IMAGE_LACKS = PEER_DEPS[:7]
WARM_TOOLS = ["tensorfile", "safetensors", "fastsafetensors", "instanttensor", "runai", "tensorizer"]
COLD_TOOLS = ["tensorfile", "safetensors", "instanttensor"]
FORMATS = ["zt", "zt-zstd", "pt", "pt2", "ptd", "gguf"]
STEPS = ["warm", "formats", "cold"]


def parse(extra: list) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="scripts/bench --only gpu", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--step", default="all", help="warm,formats,cold (a comma list) or all")
    p.add_argument("--device", default="cuda:0")
    p.add_argument("--gib", type=float, default=8.0, help="checkpoint size (default 8)")
    p.add_argument("--staging", type=int, default=None, help="passed to tensorfile.load_file(staging=)")
    p.add_argument("--json", type=Path, default=None, help="also write every number here")
    p.add_argument("--wheels", type=Path, default=None, help="a folder of wheels (scripts/gpu-wheels)")
    p.add_argument("--dir", type=Path, default=None, help="data folder (default: CACHE/gpu)")
    p.add_argument("--formats", default=",".join(FORMATS))
    p.add_argument("--budget", type=float, default=540.0, help="seconds a call may take (default 540)")
    p.add_argument("--from-json", type=Path, nargs="+", default=None)
    return p.parse_args(extra)


def main(bench, extra: list) -> int:
    """`scripts/bench --only gpu`: `bench` its parsed arguments, `extra` the rest."""
    args = parse(extra)
    command = " ".join(["scripts/bench", *sys.argv[1:]])
    if args.from_json:
        state = gpu_report.merge([json.loads(p.read_text()) for p in args.from_json])
        return publish(state, bench.out, command)
    try:
        import torch
    except ImportError:
        print("the gpu part needs torch in the interpreter that runs scripts/bench", file=sys.stderr)
        return 1
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"torch {torch.__version__} sees no CUDA device here: the gpu part is skipped (it needs one;"
              " `--device cpu --gib 0.2` runs its rows on the CPU as a dry run)")
        return 0
    started = time.time()
    folder = (args.dir or bench.cache / "gpu").expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(peers(args.wheels)),
                                                                    os.environ.get("PYTHONPATH")])),
               RUNAI_STREAMER_LOG_LEVEL="WARNING", PYTHONUNBUFFERED="1")
    steps = STEPS if args.step == "all" else args.step.split(",")
    repeat = bench.repeat or 3
    state_path = folder / "gpu-state.json"
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    ck = checkpoint(folder, args.gib, args.device, env)
    if state.get("checkpoint", {}).get("recipe") != ck["recipe"] or state.get("machine", {}).get("device") != args.device:
        state.clear()
    state.update(checkpoint=ck, machine=machine(torch, args.device), repeat=repeat)
    run = Run(args, env, ck, repeat, started, state, state_path)
    print(f"estimate: {gpu_report.estimate(steps, ck['tensor_bytes'], repeat, args.device, args.formats)}")
    for step in steps:
        getattr(run, step)()
    return publish(state, bench.out, command)


def publish(state: dict, out: Path, command: str) -> int:
    section = gpu_report.render(state, command)
    document = out.read_text() if out.exists() else "# Benchmarks\n"
    out.write_text(gpu_report.splice(document, section))
    print(section)
    return 0


def index_answers() -> bool:
    if os.environ.get("PIP_NO_INDEX"):
        return False
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


def installed(dist: str) -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        version(dist)
        return True
    except PackageNotFoundError:
        return False


def peers(wheels) -> Path:
    """The folder the peers (and tensorfile's wheel, if `wheels` has one) are installed into,
    once per set; the rows get it on their PYTHONPATH."""
    online = index_answers()
    given = sorted(p.name for p in wheels.glob("*.whl")) if wheels else []
    ours = [wheels / n for n in given if n.startswith("tensorfile-")]
    if online:
        specs = PEERS + [d for d in PEER_DEPS if not installed(d)]
        sets = [["--retries", "1", "--timeout", "20", *specs]]
        if ours:
            sets.append(["--no-index", *map(str, ours)])
    elif given:
        specs = given
        sets = [["--no-index", *(str(wheels / n) for n in given)]]
    else:
        print("gpu part: no package index answers and no --wheels: the peers' rows will be skipped",
              file=sys.stderr)
        return Path(tempfile.gettempdir()) / "tensorfile-gpu-none"
    site = Path(tempfile.gettempdir()) / "tensorfile-gpu-site"
    marker = site / ".installed"
    wanted = " ".join(specs + [p.name for p in ours])
    if marker.exists() and marker.read_text() == wanted:
        return site
    shutil.rmtree(site, ignore_errors=True)
    for words in sets:
        print(f"pip install --target {site} {' '.join(Path(w).name for w in words)}", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                        "--no-compile", "--target", str(site), *words], check=True)
    marker.write_text(wanted)
    return site


def checkpoint(folder: Path, gib: float, device: str, env: dict) -> dict:
    """The safetensors checkpoint and its reference checksums, made once per size."""
    recipe = f"gib={gib} v1"
    path = folder / f"checkpoint-{gib:g}g.safetensors"
    for old in folder.glob("checkpoint-*"):
        if not old.name.startswith(path.stem):
            old.unlink()
    need = gib * 2**30 * 3.2
    if not path.exists() and shutil.disk_usage(folder).free < need:
        sys.exit(f"{folder} has {shutil.disk_usage(folder).free / 2**30:.1f} GiB free; "
                 f"the gpu part needs about {need / 2**30:.0f}")
    made = make_once(path, rows_command("make", path, gib, device), env)
    if "error" in made:
        sys.exit(f"could not make {path}: {made['error']}")
    if made["seconds"]:
        print(f"made {path.name} in {made['seconds']:.0f} s", flush=True)
    ref = path.with_suffix(".ref.json")
    if not ref.exists() or ref.stat().st_mtime < path.stat().st_mtime:
        ref.unlink(missing_ok=True)
        r = make_once(ref, rows_command("reference", path, device, ref), env)
        if "error" in r:
            sys.exit(f"could not checksum {path}: {r['error']}")
    with open(path, "rb") as f:
        header = 8 + int.from_bytes(f.read(8), "little")
    size = path.stat().st_size
    return {"path": str(path), "ref": str(ref), "file_bytes": size, "tensor_bytes": size - header,
            "tensors": len(json.loads(ref.read_text())), "recipe": recipe, "gib": gib,
            "filesystem": filesystem(path)}


def filesystem(path: Path) -> str:
    best = ("", "?")
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and str(path.resolve()).startswith(parts[1]) and len(parts[1]) >= len(best[0]):
            best = (parts[1], f"{parts[2]} on {parts[0]}")
    return best[1]


def machine(torch, device: str) -> dict:
    cpu = next((x.split(":", 1)[1].strip() for x in Path("/proc/cpuinfo").read_text().splitlines()
                if x.startswith("model name")), platform.processor())
    mem = next(int(x.split()[1]) for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal"))
    out = {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": round(mem / 2**20, 1), "kernel": platform.release(),
           "python": platform.python_version(), "torch": torch.__version__, "device": device,
           "boot_id": Path("/proc/sys/kernel/random/boot_id").read_text().strip()}
    if device.startswith("cuda"):
        out["gpu"] = torch.cuda.get_device_name(torch.device(device))
        q = "name,driver_version,pcie.link.gen.max,pcie.link.width.max,memory.total"
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True)
        out["nvidia_smi"] = r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else None
    return out

