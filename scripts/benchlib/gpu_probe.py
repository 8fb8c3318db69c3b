"""What limits `tensorfile.load_file` into a GPU from the page cache: one short run on the GPU
machine after the benchmark (scripts/benchlib/gpu.py), each figure printed and appended to a
JSON-lines file as soon as it is measured.

  python3 -m benchlib.gpu_probe FOLDER OUT.jsonl        (from scripts/; FOLDER gets a 4 GiB checkpoint)
  python3 -m benchlib.gpu_probe compare FOLDER OUT.jsonl OLD_SITE NEW_SITE

1. The page cache's own rate: the whole file read by pread (os.preadv, which releases the GIL)
   on T threads into one reused, already-touched buffer, in pieces of 2 and 16 MiB: the ceiling
   of any loader that reads rather than maps.
2. `tensorfile.load_file` warm onto the GPU with the staging knobs moved from the outside: the
   buffer size (`_staging.CHUNK`), the staging budget and rayon's thread count
   (RAYON_NUM_THREADS), each in its own process as the benchmark's rows are.
3. `compare`: the same warm load from two installs of the package side by side (OLD_SITE and
   NEW_SITE on PYTHONPATH in turn: a change to the Python side of the pipeline, tried on the one
   wheel), with the number of filler threads (`_staging.FILLERS`, where NEW_SITE has it) moved,
   beside the pinned copy and InstantTensor in the same run; every tensor of the first load of
   each install checked against safetensors' CPU load.
"""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

#: cuda:0 on the GPU machine; `cpu` rehearses the probe here.
DEVICE = os.environ.get("PROBE_DEVICE", "cuda:0")


def pread_rate(path: str, threads: int, piece: int, ring: int = 256 << 20) -> dict:
    import numpy as np

    size = os.path.getsize(path)
    buf = np.ones(ring, dtype=np.uint8)  # touched: no page faults in the timed part
    view = memoryview(buf)
    slots = ring // piece
    fd = os.open(path, os.O_RDONLY)
    next_piece = [0]
    lock = threading.Lock()

    def worker():
        while True:
            with lock:
                k = next_piece[0]
                next_piece[0] += 1
            offset = k * piece
            if offset >= size:
                return
            slot = (k % slots) * piece
            os.preadv(fd, [view[slot : slot + min(piece, size - offset)]], offset)

    start = time.perf_counter()
    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    seconds = time.perf_counter() - start
    os.close(fd)
    return {"probe": "pread", "threads": threads, "piece_mib": piece >> 20, "seconds": seconds,
            "gb_s": size / seconds / 1e9}


def load_once(path: str, chunk: int, staging: int, fillers: int = 0, check: str = "") -> dict:
    """One warm load onto DEVICE (run in a child process)."""
    import tensorfile
    from tensorfile import _staging

    from .gpu_rows import init_device, sync

    _staging.CHUNK = chunk
    if fillers:
        _staging.FILLERS = fillers
    dev = init_device(DEVICE)
    start = time.perf_counter()
    tensors = tensorfile.load_file(path, framework="torch", device=DEVICE, staging=staging)
    sync(dev)
    seconds = time.perf_counter() - start
    nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
    row = {"seconds": seconds, "gb_s": nbytes / seconds / 1e9, "fillers": getattr(_staging, "FILLERS", 1)}
    if check:
        from .gpu_rows import compare

        row["check"] = compare(tensors, check)
    return row


def compare_installs(path: Path, here: Path, old: str, new: str, emit) -> None:
    ref = path.with_suffix(".ref.json")
    base = dict(os.environ, PYTHONPATH=old)
    subprocess.run([sys.executable, "-m", "benchlib.gpu_rows", "reference", str(path), DEVICE, str(ref)], cwd=here,
                   env=base, check=True)

    def child(args: list, env: dict) -> dict:
        got = subprocess.run([sys.executable, "-m", *args], cwd=here, env=env, capture_output=True, text=True,
                             timeout=120)
        if got.returncode:
            return {"error": got.stderr[-400:]}
        return json.loads(got.stdout.strip().splitlines()[-1])

    emit({"probe": "pinned", **child(["benchlib.gpu_rows", "pinned", str(path.stat().st_size), DEVICE], base)})
    emit({"probe": "instanttensor", **child(["benchlib.gpu_rows", "load", "instanttensor", str(path), DEVICE], base)})
    rows = [("old", old, 0), ("new", new, 3), ("old", old, 0), ("new", new, 3), ("new", new, 1), ("new", new, 2),
            ("new", new, 4), ("new", new, 6)]
    checked = set()
    for name, site, fillers in rows:
        check = "" if name in checked else str(ref)
        checked.add(name)
        args = ["benchlib.gpu_probe", "load-once", str(path), str(32 << 20), str(256 << 20), str(fillers), check]
        emit({"probe": "load_file", "install": name, **child(args, dict(os.environ, PYTHONPATH=site))})


def main() -> None:
    if sys.argv[1] == "load-once":
        extra = (int(sys.argv[5]), sys.argv[6]) if len(sys.argv) > 6 else ()
        print(json.dumps(load_once(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), *extra)))
        return
    comparing = sys.argv[1] == "compare"
    if comparing:
        sys.argv.pop(1)
    folder, out = Path(sys.argv[1]), Path(sys.argv[2])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "probe-4g.safetensors"
    here = Path(__file__).resolve().parent.parent

    def emit(row: dict) -> None:
        print(json.dumps(row), flush=True)
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")

    if not path.exists():
        subprocess.run([sys.executable, "-m", "benchlib.gpu_rows", "make", str(path), os.environ.get("PROBE_GIB", "4"), DEVICE], cwd=here,
                       check=True)
    subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)
    if comparing:
        compare_installs(path, here, sys.argv[3], sys.argv[4], emit)
        return
    emit({"probe": "cores", "count": os.cpu_count()})
    for threads in (1, 4, 8, 16, 32):
        for piece in (2 << 20, 16 << 20):
            emit(pread_rate(str(path), threads, piece))
    variants = [  # (chunk, staging, rayon threads)
        (32 << 20, 256 << 20, None), (128 << 20, 1 << 30, None), (64 << 20, 512 << 20, None),
        (32 << 20, 256 << 20, 32), (128 << 20, 1 << 30, 32), (8 << 20, 256 << 20, None),
    ]
    for chunk, staging, rayon in variants:
        env = dict(os.environ)
        if rayon:
            env["RAYON_NUM_THREADS"] = str(rayon)
        for rep in range(2):
            got = subprocess.run([sys.executable, "-m", "benchlib.gpu_probe", "load-once", str(path), str(chunk),
                                  str(staging)], cwd=here, env=env, capture_output=True, text=True, timeout=120)
            row = {"probe": "load_file", "chunk_mib": chunk >> 20, "staging_mib": staging >> 20,
                   "rayon": rayon or os.cpu_count(), "rep": rep}
            if got.returncode:
                row["error"] = got.stderr[-400:]
            else:
                row.update(json.loads(got.stdout.strip().splitlines()[-1]))
            emit(row)


if __name__ == "__main__":
    main()
