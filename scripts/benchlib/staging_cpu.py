"""The staging pipeline on the CPU (`scripts/bench --only staging`): what the GPU path does up
to the device copy, measured on a machine without one. `tensorfile` loads every tensor of
llama-1b through the library's staging buffers (`_staging.load`: the plan's windows read into
8 buffers of 32 MiB by the library's pipeline, a thread per core) with a transfer that copies nothing
(the device copy left out: what is measured is the file into the staging buffers); `pread`
reads the same file into the same number of buffers of the same size with plain `preadv` on
as many threads as there are cores, each taking the next 32 MiB of the file: the floor the
pipeline is held to (at least 0.9 of its rate, issue 41). Both warm (the file read before),
the buffers made and touched before the clock (the pipeline keeps its pool between loads: the
first load is untimed).

  python -m benchlib.staging_cpu tensorfile|pread FILE
"""

import json
import os
import sys
import threading
import time
from pathlib import Path

from . import sections
from .sections import commands

SECTION = "## Staging buffers on the CPU (the GPU path without the device)"
TENSORFILE = "tensorfile staging pipeline (no device copy)"
PREAD = "plain preadv, one thread per core"
CHUNK = 32 << 20
BUFFERS = 8


def run_tensorfile(path: str) -> tuple:
    import numpy as np

    import tensorfile
    from tensorfile import _staging

    class NoDevice(_staging.HostTransfer):
        """Copies nothing: the pipeline up to the device copy."""

        def copy(self, dst, src) -> None:
            pass

    with tensorfile.open(path) as f:
        tensors = [f[n] for n in f]
        outputs = [np.empty(t.nbytes, np.uint8) for t in tensors]
        transfer = NoDevice()
        # The first load makes and keeps the pool; the second is timed.
        _staging.load(f._file, tensors, outputs, transfer, CHUNK * BUFFERS, "never")
        start = time.perf_counter()
        _staging.load(f._file, tensors, outputs, transfer, CHUNK * BUFFERS, "never")
        seconds = time.perf_counter() - start
        return seconds, sum(t.nbytes for t in tensors), len(tensors)


def run_pread(path: str) -> tuple:
    import numpy as np

    threads = os.cpu_count() or 1
    buffers = [np.ones(CHUNK, np.uint8) for _ in range(BUFFERS)]
    size = os.path.getsize(path)
    pieces = iter(range(0, size, CHUNK))
    lock = threading.Lock()
    fd = os.open(path, os.O_RDONLY)
    errors = []

    def reader(n: int) -> None:
        mine = buffers[n % BUFFERS :: threads] or [buffers[n % BUFFERS]]
        k = 0
        try:
            while True:
                with lock:
                    offset = next(pieces, None)
                if offset is None:
                    return
                view = memoryview(mine[k % len(mine)])[: min(CHUNK, size - offset)]
                k += 1
                done = 0
                while done < len(view):
                    got = os.preadv(fd, [view[done:]], offset + done)
                    if got == 0:
                        raise OSError(f"{path}: short read at {offset + done}")
                    done += got
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    try:
        workers = [threading.Thread(target=reader, args=(n,)) for n in range(threads)]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        seconds = time.perf_counter() - start
    finally:
        os.close(fd)
    if errors:
        raise errors[0]
    return seconds, size, 0


def make(cache: Path, quick: bool) -> dict:
    from . import workloads

    return {"llama-1b.safetensors": workloads.llama_only(cache, quick)["llama-1b.safetensors"]}


def plan(files: dict, op: Path, python: Path) -> list:
    """(workload, group, label, command, file for warm/cold runs, is_write) rows."""
    st = files["llama-1b.safetensors"]
    me = [str(python), "-m", "benchlib.staging_cpu"]
    group = "file into 8 staging buffers of 32 MiB, warm"
    return [
        ("llama-1b.safetensors", group, TENSORFILE, [*me, "tensorfile", str(st)], st, False),
        ("llama-1b.safetensors", group, PREAD, [*me, "pread", str(st)], st, False),
    ]


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes, {repeat} repetition{'s' if repeat > 1 else ''}"
        + (" (quick: small workloads; not the numbers to judge by)." if quick else "."),
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB. Each row its own process,",
        "rows interleaved, median, warm (the file read before), timed inside the process from the first read to",
        "the last byte in a buffer. The pipeline's row goes through `_staging.load` with a transfer that copies",
        "nothing (the GPU path up to the device copy); its pool of buffers made by a first, untimed load.",
        "Target (issue 41): the pipeline at least 0.9 of plain `preadv` into the same buffers.",
        "", "| file | operation | tool | warm ms | GB/s | of preadv |", "| --- | --- | --- | --- | --- | --- |",
    ]
    floor = next((r for r in results if r["label"] == PREAD), None)
    for r in results:
        size = r.get("bytes") or files[r["workload"]].stat().st_size
        rate = f"{size / r['warm'] / 1e9:.2f}" if r["warm"] else "-"
        of = f"{floor['warm'] / r['warm']:.2f}" if floor and r["warm"] and r is not floor else "-"
        lines.append(f"| {r['workload']} | {r['group']} | {r['label']} | {sections.ms(r['warm'])} | {rate} | {of} |")
    lines += commands(results)
    return "\n".join(lines) + "\n"


def splice(document: str, section: str) -> str:
    return sections.splice(document, section, SECTION)


def main() -> None:
    tool, path = sys.argv[1:3]
    seconds, nbytes, tensors = (run_tensorfile if tool == "tensorfile" else run_pread)(path)
    print(json.dumps({"seconds": seconds, "bytes": nbytes, "tensors": tensors}))


if __name__ == "__main__":
    main()
