"""What limits `tensorfile.load_file` into a GPU from the page cache: one short run on the GPU
machine after the benchmark (scripts/benchlib/gpu.py), each figure printed and appended to a
JSON-lines file as soon as it is measured.

  python3 -m benchlib.gpu_probe FOLDER OUT.jsonl        (from scripts/; FOLDER gets a 4 GiB checkpoint)
  python3 -m benchlib.gpu_probe compare FOLDER OUT.jsonl OLD_SITE NEW_SITE

1. The page cache's own rate: the whole file read by pread (os.preadv, which releases the GIL)
   on T threads into one reused, already-touched buffer, in pieces of 2 and 16 MiB: the ceiling
   of any loader that reads rather than maps.
2. Another route from the page cache: the file mapped and the mapping registered with the
   driver (`cudaHostRegister`, read-only), then copied to the device in one piece: the time to
   register (the kernel faulting in and pinning every page) and the copy, against the
   staged load's.
3. `tensorfile.load_file` warm onto the GPU with the staging knobs moved from the outside: the
   buffer size (`_staging.CHUNK`), the staging budget, the pipeline's fill threads (rayon's
   thread count, RAYON_NUM_THREADS) and the buffers prepared before the clock or not, each in
   its own process as the benchmark's rows are.
4. `compare`: the same warm load from two installs of the package side by side (OLD_SITE and
   NEW_SITE on PYTHONPATH in turn: a change to the pipeline, tried on one machine), with the
   fill threads moved, beside the pinned copy and InstantTensor in the same run; every tensor
   of the first load of each install checked against safetensors' CPU load.
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


def mapped_register(path: str) -> dict:
    """The file mapped, the mapping registered with the driver (read-only, portable), and
    copied to DEVICE in one piece; on the CPU (a rehearsal) the copy alone."""
    import mmap
    import warnings

    import numpy as np
    import torch

    from .gpu_rows import init_device, sync

    dev = init_device(DEVICE)
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
    view = np.frombuffer(m, np.uint8)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        src = torch.from_numpy(view)
    out = torch.empty(size, dtype=torch.uint8, device=dev)
    row = {"probe": "mmap+register", "bytes": size}
    start = time.perf_counter()
    if dev.type == "cuda":
        cudart = torch.cuda.cudart()
        code = int(cudart.cudaHostRegister(view.__array_interface__["data"][0], size, 8 | 1))  # ReadOnly | Portable
        row["register_s"] = time.perf_counter() - start
        row["register_code"] = code
    out.copy_(src, non_blocking=True)
    sync(dev)
    row["seconds"] = time.perf_counter() - start
    row["gb_s"] = size / row["seconds"] / 1e9
    if dev.type == "cuda" and row["register_code"] == 0:
        cudart.cudaHostUnregister(view.__array_interface__["data"][0])
    del src, view
    m.close()
    os.close(fd)
    return row


def load_once(path: str, chunk: int, staging: int, prepared: bool = False, check: str = "") -> dict:
    """One warm load onto DEVICE (run in a child process); with `prepared` the staging
    buffers made and registered before the clock."""
    import tensorfile
    from tensorfile import _staging

    from .gpu_rows import init_device, sync

    _staging.CHUNK = chunk
    dev = init_device(DEVICE)
    if prepared and dev.type == "cuda":
        tensorfile.prepare_staging(DEVICE, staging)
    start = time.perf_counter()
    tensors = tensorfile.load_file(path, framework="torch", device=DEVICE, staging=staging)
    sync(dev)
    seconds = time.perf_counter() - start
    nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
    row = {"seconds": seconds, "gb_s": nbytes / seconds / 1e9, "threads": tensorfile.threads(), "prepared": prepared}
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
    # (install, its site, RAYON_NUM_THREADS: the fill threads of a pipeline that has them)
    rows = [("old", old, None), ("new", new, None), ("old", old, None), ("new", new, None), ("new", new, 8),
            ("new", new, 24), ("new", new, 32)]
    checked = set()
    for name, site, threads in rows:
        check = "" if name in checked else str(ref)
        checked.add(name)
        env = dict(os.environ, PYTHONPATH=site)
        if threads:
            env["RAYON_NUM_THREADS"] = str(threads)
        args = ["benchlib.gpu_probe", "load-once", str(path), str(32 << 20), str(256 << 20), "0", check]
        emit({"probe": "load_file", "install": name, **child(args, env)})


def main() -> None:
    if sys.argv[1] == "load-once":
        extra = (sys.argv[5] == "1", sys.argv[6]) if len(sys.argv) > 6 else ()
        print(json.dumps(load_once(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), *extra)))
        return
    if sys.argv[1] == "mapped-register":
        print(json.dumps(mapped_register(sys.argv[2])))
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
    for rep in range(2):
        got = subprocess.run([sys.executable, "-m", "benchlib.gpu_probe", "mapped-register", str(path)], cwd=here,
                             capture_output=True, text=True, timeout=120)
        emit({"rep": rep, **(json.loads(got.stdout.strip().splitlines()[-1]) if got.returncode == 0
                              else {"probe": "mmap+register", "error": got.stderr[-400:]})})
    variants = [  # (chunk, staging, fill threads, prepared)
        (32 << 20, 256 << 20, None, False), (32 << 20, 256 << 20, None, True), (128 << 20, 1 << 30, None, True),
        (64 << 20, 512 << 20, None, True), (32 << 20, 256 << 20, 8, True), (32 << 20, 256 << 20, 32, True),
        (8 << 20, 256 << 20, None, True),
    ]
    for chunk, staging, rayon, prepared in variants:
        env = dict(os.environ)
        if rayon:
            env["RAYON_NUM_THREADS"] = str(rayon)
        for rep in range(2):
            got = subprocess.run([sys.executable, "-m", "benchlib.gpu_probe", "load-once", str(path), str(chunk),
                                  str(staging), "1" if prepared else "0", ""], cwd=here, env=env,
                                 capture_output=True, text=True, timeout=120)
            row = {"probe": "load_file", "chunk_mib": chunk >> 20, "staging_mib": staging >> 20,
                   "rayon": rayon or os.cpu_count(), "prepared": prepared, "rep": rep}
            if got.returncode:
                row["error"] = got.stderr[-400:]
            else:
                row.update(json.loads(got.stdout.strip().splitlines()[-1]))
            emit(row)


if __name__ == "__main__":
    main()
