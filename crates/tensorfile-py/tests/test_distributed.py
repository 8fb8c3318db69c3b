"""`load_file(..., process_group=pg)`: N processes of a gloo group on loopback (each running
tests/distributed_worker.py) load files of several formats together; every rank must end with
every tensor of a plain load (dtype, shape, bytes), having read from storage only its own run
of tensors (`distributed_plan`), and, from a remote file served by nginx, about 1/N of the bytes
(counted by nginx)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tensorfile

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch has no gloo backend", allow_module_level=True)

WORKER = Path(__file__).with_name("distributed_worker.py")


def run_group(tmp_path: Path, world_size: int, jobs: list) -> list:
    """Run `jobs` on `world_size` worker processes; the results of each rank, in rank order."""
    jobs_path = tmp_path / "jobs.json"
    jobs_path.write_text(json.dumps(jobs), encoding="utf-8")
    store = tmp_path / "store"
    store.unlink(missing_ok=True)
    outs = [tmp_path / f"rank{r}.json" for r in range(world_size)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(r), str(world_size), str(store), str(jobs_path), str(outs[r])],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for r in range(world_size)
    ]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=240)[0].decode(errors="replace"))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for r, p in enumerate(procs):
        assert p.returncode == 0, f"rank {r} exited with {p.returncode}:\n{logs[r][-4000:]}"
    return [json.loads(o.read_text(encoding="utf-8")) for o in outs]


def plain(path) -> dict:
    """name: [dtype, shape, sha256 of the bytes] of a plain `load_file`, as the worker records."""
    from distributed_worker import record

    return {name: record(t) for name, t in tensorfile.load_file(path, framework="torch").items()}


def model() -> dict:
    """Tensors of many dtypes and sizes, odd byte counts between aligned ones, a 0-d one and
    empty ones."""
    g = torch.Generator().manual_seed(19)
    return {
        "embed": torch.randn(64, 48, generator=g).to(torch.bfloat16),
        "odd.bytes": torch.randint(0, 255, (7,), dtype=torch.uint8, generator=g),
        "layer.0.w": torch.randn(40, 33, generator=g),
        "layer.0.b": torch.randn(33, generator=g).to(torch.float16),
        "scale": torch.tensor(0.125),
        "empty": torch.zeros(0, 4, dtype=torch.float16),
        "mask": torch.rand(5, 3, generator=g) > 0.5,
        "layer.1.w": torch.randn(96, 40, generator=g).to(torch.bfloat16),
        "ids": torch.arange(-20, 23, dtype=torch.int64),
        "layer.1.b": torch.randn(40, generator=g, dtype=torch.float64),
        "empty.tail": torch.zeros(3, 0, dtype=torch.int32),
        "head": torch.randn(48, 17, generator=g),
    }


def write_files(root: Path) -> list:
    """The same tensors as safetensors, zTensor 0.1 (zstd), zTensor 2, a sharded safetensors
    checkpoint and a `torch.save` file whose tensors are strided and share storage."""
    tensors = model()
    files = [root / "model.safetensors", root / "model.zt", root / "model2.zt"]
    tensorfile.save_file(tensors, files[0])
    tensorfile.save_file(tensors, files[1], compress="zstd")
    tensorfile.save_file(tensors, files[2], zt_version=2)
    (root / "sharded").mkdir()
    sharded = tensorfile.convert(files[0], root / "sharded" / "model.safetensors", max_shard_size=6000)
    assert len(sharded["files"]) > 2
    files.append(Path(sharded["index"]))
    base = torch.randn(24, 10, generator=torch.Generator().manual_seed(5))
    torch.save({"t": base.t(), "rows": base[3:9], "col": base[:, 2], "own": torch.arange(6.0)}, root / "strided.pt")
    files.append(root / "strided.pt")
    return files


def expected_reads(path: Path, world_size: int) -> list:
    """The names each rank reads: its run of the plan, but for empty tensors (nothing to read)."""
    with tensorfile.open(path) as f:
        sizes = {name: f[name].nbytes for name in f}
    plan = tensorfile.distributed_plan(path, world_size)
    return [[n for n in part["names"] if sizes[n]] for part in plan]


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_every_rank_gets_every_tensor_reading_its_share(tmp_path, world_size):
    files = write_files(tmp_path)
    broken = tmp_path / "broken.zt"
    tensorfile.save_file(model(), broken, compress="zstd")
    last = [e for e in tensorfile.open(broken).entries() if e["nbytes"]][-1]
    data = bytearray(broken.read_bytes())
    data[last["offset"]] ^= 0xFF  # the last tensor's zstd frame is broken: the last rank reads it
    broken.write_bytes(bytes(data))

    from distributed_worker import record

    assert plain(files[0]) == {name: record(t) for name, t in model().items()}
    with tensorfile.open(files[4]) as f:
        assert not f["t"].memory()[0] and f["col"].shape == [24]  # decoded from strides, not mapped

    jobs = [{"path": str(p)} for p in files]
    jobs.append({"path": str(files[0]), "budget": 1000})  # batches and broadcasts of <= 1000 bytes
    jobs.append({"path": str(files[4]), "group": "tail"})  # group ranks are not global ranks
    jobs.append({"paths": [str(files[0])] * (world_size - 1) + [str(files[4])]})
    jobs.append({"paths": [str(tmp_path / "missing.zt")] + [str(files[0])] * (world_size - 1)})
    jobs.append({"path": str(broken)})
    jobs.append({"path": str(files[0]), "framework": "numpy"})
    jobs.append({"path": str(files[0]), "budgets": [1000] + [2000] * (world_size - 1)})
    jobs.append({"path": str(files[1])})  # the group still works after every refusal
    results = run_group(tmp_path, world_size, jobs)

    for k, path in enumerate(files):
        want, reads = plain(path), expected_reads(path, world_size)
        for r in range(world_size):
            got = results[r][k]
            assert got["tensors"] == want, f"{path.name}: rank {r}"
            assert list(got["tensors"]) == list(want)  # file order
            assert got["read"] == reads[r], f"{path.name}: rank {r} read {got['read']}"
            assert got["disjoint"] and got["writable"]
        assert sorted(sum(reads, [])) == sorted(n for n in want if n not in ("empty", "empty.tail"))

    want, reads = plain(files[0]), expected_reads(files[0], world_size)
    for r in range(world_size):
        small = results[r][len(files)]
        assert small["tensors"] == want and small["read"] == reads[r]
    assert results[0][len(files) + 1] == {"skipped": True}
    want_pt, reads_pt = plain(files[4]), expected_reads(files[4], world_size - 1)
    for r in range(1, world_size):
        tail = results[r][len(files) + 1]
        assert tail["tensors"] == want_pt and tail["read"] == reads_pt[r - 1]
    for r in range(world_size):
        mismatch, missing, corrupt, numpy, budgets, after = results[r][len(files) + 2 :]
        assert budgets["error"] == "UsageError" and "BUDGET" in budgets["message"]
        assert budgets["message"].endswith(f"{[[0], list(range(1, world_size))]}")
        assert mismatch["error"] == "UsageError" and "do not see the same file" in mismatch["message"]
        assert mismatch["read"] == []
        assert missing["error"] == "FileError"
        if r != 0:
            assert missing["message"].startswith("rank 0 of the process group failed to open")
        assert corrupt["error"] == "InvalidFileError", corrupt
        if r == world_size - 1:
            assert last["name"] in corrupt["read"] and "bad-compressed-data" in corrupt["message"]
        else:
            assert corrupt["message"].startswith(f"rank {world_size - 1} of the process group failed to read")
        assert numpy["error"] == "UsageError" and "framework='torch'" in numpy["message"]
        assert after["tensors"] == plain(files[1])
    with pytest.raises(tensorfile.InvalidFileError):
        tensorfile.load_file(broken)


def test_the_plan_is_balanced_contiguous_and_deterministic(tmp_path):
    path = tmp_path / "m.safetensors"
    sizes = [1000, 10, 7, 4000, 0, 333, 2048, 1, 1, 900, 5000, 64]
    tensorfile.save_file({f"t{i}": torch.zeros(n, dtype=torch.uint8) for i, n in enumerate(sizes)}, path)
    total, largest = sum(sizes), max(sizes)
    for world_size in range(1, 9):
        plan = tensorfile.distributed_plan(path, world_size)
        assert plan == tensorfile.distributed_plan(path, world_size)
        assert len(plan) == world_size
        assert sum((p["names"] for p in plan), []) == [f"t{i}" for i in range(len(sizes))]
        assert sum(p["bytes"] for p in plan) == total
        for p in plan:
            assert p["bytes"] <= total / world_size + largest
            assert p["bytes"] == sum(sizes[int(n[1:])] for n in p["names"])
    with pytest.raises(tensorfile.UsageError):
        tensorfile.distributed_plan(path, 0)


def test_process_group_needs_torch_tensors(tmp_path):
    path = tmp_path / "m.safetensors"
    tensorfile.save_file({"x": torch.zeros(3)}, path)
    with pytest.raises(tensorfile.UsageError, match="framework='torch'"):
        tensorfile.load_file(path, process_group=object())


@pytest.fixture
def server(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
    from benchlib.server import Nginx, nginx_binary

    if nginx_binary() is None:
        if os.environ.get("TENSORFILE_REQUIRE_SERVERS") == "1":
            pytest.fail("nginx is needed for the remote tests: apt-get install nginx-light")
        pytest.skip("nginx not installed")
    root = tmp_path / "served"
    root.mkdir()
    s = Nginx(root)
    yield s
    s.stop()


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_each_rank_fetches_its_share_of_a_remote_file(tmp_path, server, world_size):
    g = torch.Generator().manual_seed(world_size)
    tensors = {f"block.{k}": torch.randn(1000 + 700 * (k % 5), 64, generator=g) for k in range(16)}
    largest = max(t.numel() * 4 for t in tensors.values())
    jobs, files = [], []
    for name in ("model.safetensors", "model.zt"):
        path = server.root / name
        tensorfile.save_file(tensors, path)
        os.chmod(path, 0o644)
        files.append(path)
        # Each rank its own path to the same file (a link), so that nginx's log tells them apart.
        jobs.append({"paths": [f"http://127.0.0.1:{server.port}/{name}.rank{r}/{name}" for r in range(world_size)]})
        for r in range(world_size):
            (server.root / f"{name}.rank{r}").mkdir()
            os.link(path, server.root / f"{name}.rank{r}" / name)
    opening = []  # what opening each file (reading its index) fetches
    for path in files:
        before = server.sent()
        tensorfile.open(server.url(path)).close()
        opening.append(server.sent() - before)
    results = run_group(tmp_path, world_size, jobs)

    data_bytes = sum(t.numel() * 4 for t in tensors.values())
    for k, path in enumerate(files):
        want = plain(path)
        plan = tensorfile.distributed_plan(path, world_size)
        fetched = [server.sent(f"{path.name}.rank{r}/") for r in range(world_size)]
        planned = [p["bytes"] for p in plan]
        print(f"{path.name}, {world_size} ranks: fetched {fetched}, planned {planned}, opening {opening[k]}")
        for r in range(world_size):
            assert results[r][k]["tensors"] == want
            # Its share and the index; a read ahead may fetch up to 64 KiB more.
            assert plan[r]["bytes"] <= fetched[r] <= plan[r]["bytes"] + opening[k] + 65_536, (r, fetched, plan)
            assert fetched[r] <= data_bytes / world_size + largest + opening[k] + 65_536
        assert sum(fetched) <= data_bytes + world_size * (opening[k] + 65_536)
