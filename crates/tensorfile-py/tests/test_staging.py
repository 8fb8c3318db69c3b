"""Loading through staging buffers (the GPU path), run here with copies into host memory:
every fixture's tensors arrive with the recorded bytes through buffers much smaller than them,
read from the file in windows (buffered and `O_DIRECT`) or packed from memory; the budget
holds; nothing returned is a view of a buffer that is filled again; errors end the pipeline."""

import hashlib

import numpy as np
import pytest

import tensorfile
from tensorfile import _staging
from conftest import FIXTURES, fixture_id, records

SMALL = 2 * 16384  # two buffers of the smallest chunk


def sha256(data) -> str:
    return hashlib.sha256(bytes(data)).hexdigest()


def staged(path, data=None, staging=SMALL, direct="never", transfer=None, names=None):
    """Every tensor (or `names`) as flat bytes, through the staging pipeline into host arrays;
    and the plan's stage count and which stages read direct."""
    with tensorfile.open(path, data=data) as f:
        tensors = [f[n] for n in (names or list(f))]
        outputs = [np.full(t.nbytes, 0xEE, np.uint8) for t in tensors]
        _staging.load(f._file, tensors, outputs, transfer or _staging.HostTransfer(), staging, direct)
        return dict(zip([t.name for t in tensors], outputs))


def dense_record(record):
    return [t for t in record["tensors"] if not t["layout"].startswith("sparse") and t["layout"] != "quantized"]


@pytest.mark.parametrize("direct", ["never", "always"])
@pytest.mark.parametrize("item", records(), ids=fixture_id)
def test_every_fixture_arrives_with_the_recorded_bytes(item, direct):
    path, record = item
    data = path.with_name(record["data_file"]) if record.get("data_file") else None
    with tensorfile.open(path, data=data) as f:
        plain = [t for t in dense_record(record) if f[t["name"]].quantization is None]
    if not plain:
        pytest.skip("no dense tensor")
    got = staged(path, data, direct=direct, names=[t["name"] for t in plain])
    for t in plain:
        assert sha256(got[t["name"]]) == t["sha256"], t["name"]


def test_large_tensors_cross_many_stages_and_windows_read_direct(tmp_path):
    rng = np.random.default_rng(5)
    tensors = {f"t{i}": rng.integers(-128, 127, size=n, dtype=np.int8) for i, n in enumerate([1, 70_001, 3, 0, 40_000, 16384])}
    tensors["f"] = rng.standard_normal((33, 65)).astype(np.float32)
    for fmt in ["safetensors", "zt", "pt", "gguf"]:
        path = tmp_path / f"m.{fmt}"
        tensorfile.save_file(tensors, path)
        for direct in ["never", "always", "auto"]:
            got = staged(path, direct=direct)
            for name, want in tensors.items():
                assert got[name].tobytes() == want.tobytes(), (fmt, direct, name)
        with tensorfile.open(path) as f:
            names = list(f)
            plan = f._file.staging([f[n] for n in names], 16384, "always")
            assert len(plan) >= 150_000 // 16384, fmt
            pieces = [p for k in range(len(plan)) for p in plan.pieces(k)]
            assert all(at + n <= 16384 for _, _, n, at in pieces)
            # The big tensor comes in pieces, in order, each byte once.
            big = [(off, n) for t, off, n, _ in pieces if t == names.index("t1")]
            assert [off for off, _ in big] == list(np.cumsum([0] + [n for _, n in big[:-1]]))
            assert sum(n for _, n in big) == 70_001
            assert all(plan.is_direct(k) for k in range(len(plan)))
            auto = f._file.staging([f[n] for n in f], 16384, "auto")
            assert not any(auto.is_direct(k) for k in range(len(auto))), "a cached file reads buffered"


def test_compressed_tensors_are_decoded_and_packed(tmp_path):
    rng = np.random.default_rng(6)
    tensors = {"a": np.zeros((300, 300), np.float32), "b": rng.standard_normal(5000).astype(np.float16)}
    path = tmp_path / "z.zt"
    tensorfile.save_file(tensors, path, compress="zstd")
    got = staged(path)
    for name, want in tensors.items():
        assert got[name].tobytes() == want.tobytes(), name


def test_compressed_tensors_are_decoded_when_their_stage_is_filled_not_before(tmp_path):
    """A compressed file is not decoded whole to plan its stages: each tensor is decoded when
    the first stage holding it is filled (and dropped after its last), so that a tensor broken
    in the file fails that stage, naming it, after the stages before it were filled."""
    rng = np.random.default_rng(8)
    tensors = {"a": rng.standard_normal(20_000).astype(np.float32), "b": rng.standard_normal(9000).astype(np.float32)}
    path = tmp_path / "z.zt"
    tensorfile.save_file(tensors, path, compress="zstd")
    raw = bytearray(path.read_bytes())
    frames = [i for i in range(len(raw) - 3) if raw[i:i + 4] == b"\x28\xb5\x2f\xfd"]
    assert len(frames) == 2
    raw[frames[1] + 40] ^= 0xFF  # inside b's frame
    path.write_bytes(bytes(raw))
    with tensorfile.open(path) as f:
        plan = f._file.staging([f["a"], f["b"]], 16384, "never")
        buffer = tensorfile._native.stage_buffer(16384)
        filled = 0
        with pytest.raises(tensorfile.Error, match="b"):
            for k in range(len(plan)):
                plan.fill(k, buffer)
                filled += 1
        assert filled >= 4  # a's stages (80,000 bytes in buffers of 16,384)


def test_the_budget_makes_at_least_two_buffers_within_it():
    assert _staging.split(_staging.DEFAULT_STAGING) == (32 << 20, 8)
    assert _staging.split(SMALL) == (16384, 2)
    chunk, count = _staging.split(100_000)
    assert chunk % 4096 == 0 and count >= 2 and chunk * count <= 100_000
    for bad in [SMALL - 1, 0, -5, True, 1.5e9, "1GB"]:
        with pytest.raises(tensorfile.UsageError, match="staging"):
            _staging.split(bad)


def test_outputs_are_memory_of_their_own_and_buffers_are_kept(tmp_path):
    _staging.release()
    rng = np.random.default_rng(7)
    first = {"x": rng.integers(0, 255, 100_000, dtype=np.uint8)}
    second = {"x": rng.integers(0, 255, 100_000, dtype=np.uint8)}
    tensorfile.save_file(first, tmp_path / "1.safetensors")
    tensorfile.save_file(second, tmp_path / "2.safetensors")
    a = staged(tmp_path / "1.safetensors")
    spans = [b.span() for b in _staging._pool.buffers]
    b = staged(tmp_path / "2.safetensors")
    # The second load went through the same buffers, and the first load's tensor kept its
    # bytes: it was never a view of them.
    assert [b_.span() for b_ in _staging._pool.buffers] == spans
    assert a["x"].tobytes() == first["x"].tobytes() and b["x"].tobytes() == second["x"].tobytes()
    for out in (a["x"], b["x"]):
        address = out.__array_interface__["data"][0]
        assert all(not (s <= address < s + n) for s, n in spans)
    # Another budget: new buffers; release frees them.
    staged(tmp_path / "1.safetensors", staging=3 * 32768)
    assert (_staging._pool.chunk, len(_staging._pool.buffers)) == (49152, 2)
    _staging.release()
    assert _staging._pool is None


class Failing(_staging.HostTransfer):
    def __init__(self, after):
        self.left = after

    def copy(self, dst, src):
        self.left -= 1
        if self.left < 0:
            raise RuntimeError("the device went away")
        super().copy(dst, src)


def test_a_failed_copy_ends_the_pipeline_and_the_next_load_works(tmp_path):
    x = np.arange(200_000, dtype=np.uint8)
    tensorfile.save_file({"x": x, "y": x[:5]}, tmp_path / "m.safetensors")
    with pytest.raises(RuntimeError, match="went away"):
        staged(tmp_path / "m.safetensors", transfer=Failing(3))
    assert staged(tmp_path / "m.safetensors")["x"].tobytes() == x.tobytes()


def test_a_file_that_fails_to_fill_raises_naming_it(tmp_path):
    x = np.arange(300_000, dtype=np.uint8)
    path = tmp_path / "m.safetensors"
    tensorfile.save_file({"x": x}, path)
    with tensorfile.open(path) as f:
        plan = f._file.staging([f["x"]], 16384, "never")
        buffer = tensorfile._native.stage_buffer(16384)
        with open(path, "r+b") as raw:
            raw.truncate(1000)  # the file shrinks under the plan
        with pytest.raises(tensorfile.Error):
            for k in range(len(plan)):
                plan.fill(k, buffer)


def test_outputs_of_the_wrong_size_are_refused():
    with tensorfile.open(FIXTURES / "safetensors" / "dtypes.safetensors") as f:
        tensors = [f[n] for n in f]
        outputs = [np.empty(t.nbytes + 1, np.uint8) for t in tensors]
        with pytest.raises(tensorfile.UsageError, match="sizes"):
            _staging.load(f._file, tensors, outputs, _staging.HostTransfer(), SMALL)


def test_load_file_onto_a_gpu_goes_through_the_staging_buffers():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    path = FIXTURES / "safetensors" / "dtypes.safetensors"
    cpu = tensorfile.load_file(path, framework="torch")
    for direct in ["never", "always"]:
        gpu = tensorfile.load_file(path, framework="torch", device="cuda:0", staging=SMALL, direct=direct)
        for name, t in cpu.items():
            assert gpu[name].device.type == "cuda" and torch.equal(gpu[name].cpu().view(torch.uint8), t.view(torch.uint8))
    # Buffers registered ahead, and a part of the file through them.
    tensorfile.prepare_staging("cuda:0", SMALL)
    with tensorfile.open(path) as f:
        names = list(f)[::2]
        part = f.load(names, "torch", "cuda:0", staging=SMALL)
    assert list(part) == names
    for name in names:
        assert part[name].device.type == "cuda" and torch.equal(part[name].cpu().view(torch.uint8), cpu[name].view(torch.uint8))
    tensorfile.release_staging()


class Deferred(_staging.HostTransfer):
    """Copies that run only when their mark is waited for, as a device's copies run some time
    after they are queued: a buffer filled again before its mark was waited for would give
    wrong bytes. Counts the buffers it is asked to pin."""

    def __init__(self, delay=0.0):
        self.pending, self.pins, self.delay = [], [], delay

    def pin(self, buffer) -> bool:
        self.pins.append(buffer.span()[0])
        return True

    def copy(self, dst, src) -> None:
        self.pending.append((dst, src))

    def mark(self):
        mark, self.pending = self.pending, []
        return mark

    def wait(self, mark) -> None:
        import time

        time.sleep(self.delay)
        for dst, src in mark:
            dst[...] = src


def test_a_buffer_is_filled_again_only_after_its_copies_are_done(tmp_path):
    rng = np.random.default_rng(8)
    tensors = {f"t{i}": rng.integers(0, 255, n, dtype=np.uint8) for i, n in enumerate([70_000, 5, 123_457, 16384, 9])}
    for fmt in ["safetensors", "zt"]:
        path = tmp_path / f"m.{fmt}"
        tensorfile.save_file(tensors, path, **({"compress": "zstd"} if fmt == "zt" else {}))
        for delay in [0.0, 0.002]:
            got = staged(path, transfer=Deferred(delay), staging=3 * 16384)
            for name, want in tensors.items():
                assert got[name].tobytes() == want.tobytes(), (fmt, delay, name)


def test_buffers_are_pinned_before_their_first_stage_once_and_ahead_with_prepare(tmp_path):
    _staging.release()
    tensorfile.save_file({"x": np.arange(5_000, dtype=np.uint8)}, tmp_path / "small.safetensors")
    tensorfile.save_file({"x": np.arange(500_000, dtype=np.uint8)}, tmp_path / "big.safetensors")
    budget = SMALL  # two buffers of 16384 bytes
    transfer = Deferred()
    # One stage: only its buffer of the two is pinned.
    staged(tmp_path / "small.safetensors", transfer=transfer, staging=budget)
    assert len(transfer.pins) == 1
    staged(tmp_path / "big.safetensors", transfer=transfer, staging=budget)
    assert sorted(transfer.pins) == sorted(b.span()[0] for b in _staging._pool.buffers)
    # Each once, kept for the next load.
    staged(tmp_path / "big.safetensors", transfer=transfer, staging=budget)
    assert len(transfer.pins) == 2
    # prepare() makes and pins a pool ahead of a load, which then pins nothing.
    _staging.release()
    ahead = Deferred()
    _staging.prepare(ahead, budget)
    assert len(ahead.pins) == 2
    got = staged(tmp_path / "big.safetensors", transfer=ahead, staging=budget)
    assert got["x"].tobytes() == np.arange(500_000, dtype=np.uint8).tobytes() and len(ahead.pins) == 2
    _staging.release()


class PinFails(_staging.HostTransfer):
    def pin(self, buffer) -> bool:
        raise RuntimeError("the driver refused")


def test_a_failure_to_pin_or_to_read_ends_the_load_and_the_next_works(tmp_path):
    x = np.arange(300_000, dtype=np.uint8)
    path = tmp_path / "m.safetensors"
    tensorfile.save_file({"x": x}, path)
    _staging.release()
    with pytest.raises(RuntimeError, match="refused"):
        staged(path, transfer=PinFails())
    _staging.release()
    # The file shrinks under the plan: the stage past its end fails, naming no wrong bytes.
    with tensorfile.open(path) as f:
        tensors = [f["x"]]
        with open(path, "r+b") as raw:
            raw.truncate(100_000)
        with pytest.raises(tensorfile.Error):
            _staging.load(f._file, tensors, [np.empty(x.nbytes, np.uint8)], _staging.HostTransfer(), SMALL, "never")
    tensorfile.save_file({"x": x}, path)
    assert staged(path)["x"].tobytes() == x.tobytes()


def test_the_pipeline_is_refused_a_buffer_another_holds_and_stops(tmp_path):
    tensorfile.save_file({"x": np.arange(100_000, dtype=np.uint8)}, tmp_path / "m.safetensors")
    with tensorfile.open(tmp_path / "m.safetensors") as f:
        plan = f._file.staging([f[n] for n in f], 16384, "never")
        assert len(plan) > 2
        buffers = [tensorfile._native.stage_buffer(16384)]
        pipeline = plan.pipeline(buffers, threads=2)
        with pytest.raises(tensorfile.UsageError, match="two at once"):
            plan.pipeline(buffers)
        with pytest.raises(tensorfile.UsageError, match="two at once"):
            plan.fill(0, buffers[0])
        with pytest.raises(tensorfile.UsageError, match="two at once"):
            buffers[0].hold()
        pipeline.release()
        assert pipeline.wait(0) == 0
        pipeline.stop()
        with pytest.raises(tensorfile.UsageError, match="stopped"):
            pipeline.wait(1)
        del pipeline
        plan.fill(0, buffers[0])  # let go once stopped and dropped
        # Held by Python to pack tensors in memory: a pipeline is refused until it is let go,
        # and its writable view is refused after.
        held = buffers[0].hold()
        np.asarray(held)[:3] = 7
        with pytest.raises(tensorfile.UsageError, match="two at once"):
            plan.pipeline(buffers)
        held.release()
        with pytest.raises(tensorfile.UsageError, match="let go"):
            np.asarray(held)
        plan.pipeline(buffers).stop()


def test_tensors_in_memory_go_through_the_same_buffers_packed():
    """What `Tensor.torch(device=...)`, `load_file` of decoded or dequantized tensors and the
    NCCL exchange copy from host memory: packed into the kept buffers, each filled again only
    after its copies are done."""
    _staging.release()
    rng = np.random.default_rng(9)
    sources = [rng.integers(0, 255, n, dtype=np.uint8) for n in [0, 7, 40_000, 16384, 3, 100_001]]
    transfer = Deferred(0.001)
    outputs = [np.full(s.size, 0xEE, np.uint8) for s in sources]
    _staging.copy_from_host(sources, outputs, transfer, SMALL)
    assert all(o.tobytes() == s.tobytes() for o, s in zip(outputs, sources))
    assert len(transfer.pins) == 2 and _staging._pool is not None
    # Small ones share a stage: the stages are the bytes over the chunk, not one per tensor.
    stages = list(_staging._packed([s.reshape(-1) for s in sources], 16384))
    assert len(stages) == -(-sum(s.size for s in sources) // 16384)
    with pytest.raises(tensorfile.UsageError, match="sizes"):
        _staging.copy_from_host(sources, [np.empty(1, np.uint8)] * len(sources), transfer, SMALL)
    _staging.release()


class TorchOnHost(_staging.CudaTransfer):
    """The CUDA transfer's torch side (torch views of the buffers, uint8 views of any dtype,
    numpy sources) with the device copies done on the host: what runs on a GPU but the copy."""

    def __init__(self):
        import torch

        self.torch, self.stage = torch, 0

    # The host's: nothing registered, copies done when made.
    pin, mark, wait, finish = (_staging.HostTransfer.pin, _staging.HostTransfer.mark, _staging.HostTransfer.wait,
                               _staging.HostTransfer.finish)

    def copy(self, dst, src) -> None:
        dst.copy_(src)


def test_the_cuda_transfers_torch_side_carries_every_dtype_through_both_paths(tmp_path):
    torch = pytest.importorskip("torch")
    path = FIXTURES / "safetensors" / "dtypes.safetensors"
    want = tensorfile.load_file(path, framework="torch")
    got = tensorfile._load_staged(path, "cpu", None, SMALL, "never", transfer=TorchOnHost())
    assert got.keys() == want.keys()
    for name, t in want.items():
        assert got[name].dtype == t.dtype and torch.equal(got[name].view(torch.uint8), t.view(torch.uint8)), name
    outputs = [torch.empty_like(t) for t in want.values()]
    _staging.copy_from_host(list(want.values()), outputs, TorchOnHost(), SMALL)
    for o, t in zip(outputs, want.values()):
        assert torch.equal(o.view(torch.uint8), t.view(torch.uint8))
    _staging.release()


def test_the_nccl_owner_fills_its_batch_through_the_same_pipeline(tmp_path):
    """A rank's part of a distributed load into device memory (NCCL) goes through the staging
    pipeline as `load_file(device=...)` does: here with the device copy done on the host, into
    a batch buffer laid out as the exchange lays it out."""
    torch = pytest.importorskip("torch")
    from tensorfile import _distributed

    rng = np.random.default_rng(10)
    tensors = {f"t{i}": rng.standard_normal(n).astype(np.float32) for i, n in enumerate([5, 30_000, 1, 4096, 12_345])}
    for fmt, extra in [("safetensors", {}), ("zt", {"compress": "zstd"})]:
        path = tmp_path / f"m.{fmt}"
        tensorfile.save_file(tensors, path, **extra)
        native, listed = _distributed._open(path, None)
        ranks = _distributed.owners([t.nbytes for t in listed], 2)
        for batch in _distributed._batches(listed, ranks, 64 << 10):
            buffer = torch.full((batch.size,), 0xEE, dtype=torch.uint8)
            _distributed._fill(buffer, native, listed, batch, transfer=TorchOnHost())
            for i, offset in batch.items:
                want = tensors[listed[i].name].tobytes()
                assert bytes(buffer[offset : offset + len(want)].numpy()) == want, (fmt, listed[i].name)
    _staging.release()


def test_open_load_takes_a_part_of_a_file_through_the_same_pipeline(tmp_path, monkeypatch):
    """`File.load(names, device=...)`: a part of a checkpoint, by name in the order asked,
    through the staging pipeline onto a GPU as `load_file` goes (here a GPU stood in for by
    the CUDA transfer with its copies on the host), the host path elsewhere."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(11)
    tensors = {f"layer{i}": rng.standard_normal((64, 100 + i)).astype(np.float32) for i in range(6)}
    path = tmp_path / "m.safetensors"
    tensorfile.save_file(tensors, path)
    wanted = ["layer4", "layer1", "layer5"]
    with tensorfile.open(path) as f:
        on_host = f.load(wanted, "torch")
        as_numpy = f.load(wanted)
        with pytest.raises(tensorfile.TensorNotFoundError):
            f.load(["layer1", "nope"])
    assert list(on_host) == wanted and list(as_numpy) == wanted
    staged_through = []

    class Counted(TorchOnHost):
        def copy(self, dst, src) -> None:
            staged_through.append(src.numel())
            super().copy(dst, src)

    monkeypatch.setattr(tensorfile, "_is_cuda", lambda device: True)
    monkeypatch.setattr(_staging, "CudaTransfer", lambda device: Counted())
    with tensorfile.open(path) as f:
        staged = f.load(wanted, "torch", "cpu", staging=SMALL)
    whole = tensorfile.load_file(path, framework="torch", staging=SMALL)
    assert list(staged) == wanted and staged_through, "the pipeline carried the tensors"
    for name in wanted:
        assert np.array_equal(staged[name].numpy(), tensors[name]) and np.array_equal(on_host[name].numpy(), tensors[name])
        assert np.array_equal(as_numpy[name], tensors[name])
    assert sum(staged_through) == sum(tensors[n].nbytes for n in wanted) + sum(t.nbytes for t in tensors.values())
    assert all(np.array_equal(whole[n].numpy(), t) for n, t in tensors.items())
    _staging.release()


def test_prepare_staging_is_for_a_cuda_device():
    torch = pytest.importorskip("torch")
    with pytest.raises(tensorfile.UsageError, match="CUDA device"):
        tensorfile.prepare_staging("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(tensorfile.UsageError, match="CUDA device"):
            tensorfile.prepare_staging("cuda:0")
