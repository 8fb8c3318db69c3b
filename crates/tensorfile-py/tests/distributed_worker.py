"""One rank of tests/test_distributed.py: joins a gloo group on loopback, runs every job of a
JSON list with `load_file(..., process_group=...)`, and writes what each job gave as JSON.

    python distributed_worker.py RANK WORLD_SIZE STORE JOBS OUT

A job is `{"path": p}` or `{"paths": [one per rank]}`, with optional `budget` (bytes of a
batch) or `budgets` (one per rank), `framework`, and `group`: "world" (default) or "tail", a group of ranks 1..N-1 made
with `new_group` (rank 0 sits that job out). Its result: `tensors` (name: [dtype, shape,
sha256 of the bytes]), `read` (the tensors this rank read from storage, in order), `disjoint`
(no two tensors share memory), `writable` (each tensor takes a write); or `error`, `message`.
"""

import hashlib
import json
import os
import sys

import torch
import torch.distributed as dist

import tensorfile
import tensorfile._distributed as td


def record(t: torch.Tensor) -> list:
    flat = t.detach().reshape(-1).view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)
    return [str(t.dtype).removeprefix("torch."), list(t.shape), hashlib.sha256(flat.numpy().tobytes()).hexdigest()]


def disjoint(tensors: list) -> bool:
    spans = sorted((t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in tensors if t.numel())
    return all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def main() -> None:
    rank, world_size, store, jobs, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world_size)
    tail = dist.new_group(list(range(1, world_size)))  # every rank takes part in making it
    read = []
    real_read = td._read

    def spy(native, tensors):  # records what the real path reads, then reads it
        read.extend(t.name for t in tensors)
        return real_read(native, tensors)

    td._read = spy
    default_budget = td.BUDGET
    results = []
    for job in json.loads(open(jobs, encoding="utf-8").read()):
        read.clear()
        td.BUDGET = job["budgets"][rank] if "budgets" in job else job.get("budget", default_budget)
        group = dist.group.WORLD if job.get("group", "world") == "world" else tail
        if group is tail and rank == 0:
            results.append({"skipped": True})
            continue
        path = job["paths"][rank] if "paths" in job else job["path"]
        try:
            loaded = tensorfile.load_file(path, framework=job.get("framework", "torch"), process_group=group)
        except tensorfile.Error as e:
            results.append({"error": type(e).__name__, "message": str(e), "read": list(read)})
            continue
        tensors = list(loaded.values())
        before = [record(t) for t in tensors]
        for t in tensors:
            if t.numel():
                t.reshape(-1)[0] = t.reshape(-1)[-1]  # raises on memory torch may not write
        results.append(
            {
                "tensors": dict(zip(loaded, before)),
                "read": list(read),
                "disjoint": disjoint(tensors),
                "writable": True,
            }
        )
    with open(out, "w", encoding="utf-8") as f:
        json.dump(results, f)
    dist.barrier()
    dist.destroy_process_group()
    # torch's gloo threads are sometimes still joinable when the interpreter tears down, and
    # C++ then aborts the process ("terminate called without an active exception", rank 0,
    # about 1 run in 4, with or without the barrier): the results are written, so leave
    # without the interpreter's teardown.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
