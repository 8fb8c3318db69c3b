"""One checkpoint loaded by every process of a `torch.distributed` process group, each process
reading only a part of it from storage and the group exchanging the rest.

The plan. Every rank opens the file (its index only: small) and splits its tensors, in file
order, into one contiguous run per rank, balanced by bytes: a tensor goes to the rank whose
share of the total holds its middle byte, so that no rank has more than 1/N of the bytes plus
the largest tensor. Every rank computes the same plan without communication; one all-gather of
a digest of it (names, dtypes, shapes, sizes, world size, budget) then checks that they agree,
and every rank raises if any disagrees or could not open the file.

The exchange. Each rank's run is cut into batches of consecutive tensors of at most `BUDGET`
bytes (a larger tensor is a batch of its own). For each batch, in the same order on every rank,
every rank allocates one flat uint8 buffer (on the device with NCCL, on the CPU with gloo); the
owner fills it: on the device through the staging pipeline of `load_file(device=...)` (the file
read straight into pinned buffers and copied in), on the CPU by reading its tensors through the
ordinary load path (remote files fetched ahead, sharded checkpoints, any format) and copying
their bytes in; one `broadcast` from the owner fills the
others' buffers (several, of at most `BUDGET` bytes each, for a batch larger than that). Every
rank's tensors are then views of these buffers, never reused: a tensor keeps its batch's
buffer alive, and nothing else holds it. Beyond the tensors returned, a rank holds at most one
batch of bytes read and not yet copied.

Failures. A rank that fails to read its part keeps taking part in the broadcasts (with bytes
that nobody will use), then the group all-gathers every rank's outcome: every rank raises, the
failing one its own error, the others the same class naming that rank, and no rank returns
tensors made of bytes that were never read.
"""

import hashlib
import json
import os

import numpy as np

from . import _dtypes
from ._errors import Error, FileError, InvalidFileError, RemoteError, TensorNotFoundError, UnsupportedError, UsageError
from ._native import NativeFile, NativeTensor

BUDGET = 256 << 20
"""Bytes of one batch, and of one broadcast."""
ALIGN = 64
"""Where each tensor starts in its batch's buffer: a multiple of this (any dtype can view it)."""

# The status every rank contributes to an all-gather: an outcome, the plan's digest, a message.
_STATUS = 1024
_DIGEST = 32
_CLASSES = [None, Error, FileError, RemoteError, InvalidFileError, UnsupportedError, UsageError, TensorNotFoundError]


def owners(sizes: list, world_size: int) -> list:
    """The rank that reads each tensor of `sizes` (bytes, in file order): the rank whose share
    [r*T/N, (r+1)*T/N) of the T bytes holds the tensor's middle. Ranks come in order, each a
    contiguous run, of at most T/N plus the largest tensor's bytes."""
    total = sum(sizes)
    out, start = [], 0
    for n in sizes:
        out.append(0 if total == 0 else min(world_size - 1, (2 * start + n) * world_size // (2 * total)))
        start += n
    return out


def plan(path, world_size: int, data=None) -> list:
    """How `load_file(path, process_group=pg)` shares the reading among a group of
    `world_size` processes: for each rank, a dict with `names` (the tensors that rank reads
    from storage, a contiguous run in file order) and `bytes` (their bytes as loaded: what the
    rank reads from a file storing them raw; fewer for a compressed one). Every rank computes
    it alone, the same."""
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise UsageError(f"world_size is a number of processes (at least 1), not {world_size!r}")
    _, tensors = _open(path, data)
    ranks = owners([t.nbytes for t in tensors], world_size)
    out = [{"names": [], "bytes": 0} for _ in range(world_size)]
    for t, r in zip(tensors, ranks):
        out[r]["names"].append(t.name)
        out[r]["bytes"] += t.nbytes
    return out


def _open(path, data) -> tuple:
    """The file mapped (each rank reads only its part of it) and its tensors, unread."""
    native = NativeFile.open(os.fspath(path), None if data is None else os.fspath(data))
    return native, [NativeTensor(native, name) for name in native.names()]


class _Batch:
    """Consecutive tensors of one owner, laid out in one buffer of `size` bytes."""

    def __init__(self, owner: int):
        self.owner = owner
        self.items = []  # (index in file order, offset in the buffer)
        self.size = 0


def _batches(tensors: list, ranks: list, budget: int) -> list:
    """The batches of every rank, in rank order then file order; empty tensors need none."""
    out = []
    for i, (t, r) in enumerate(zip(tensors, ranks)):
        if t.nbytes == 0:
            continue
        offset = -(-out[-1].size // ALIGN) * ALIGN if out and out[-1].owner == r else 0
        if not out or out[-1].owner != r or (out[-1].items and offset + t.nbytes > budget):
            out.append(_Batch(r))
            offset = 0
        out[-1].items.append((i, offset))
        out[-1].size = offset + t.nbytes
    return out


def _digest(tensors: list, world_size: int, budget: int, comm: str) -> bytes:
    facts = [world_size, budget, ALIGN, comm, [[t.name, t.dtype, list(t.shape), t.nbytes] for t in tensors]]
    return hashlib.sha256(json.dumps(facts).encode()).digest()


def _status(error, digest: bytes = bytes(_DIGEST)):
    """This rank's status record as a uint8 CPU tensor."""
    import torch

    record = bytearray(_STATUS)
    if error is not None:
        code = next((k for k in range(len(_CLASSES) - 1, 0, -1) if isinstance(error, _CLASSES[k])), 1)
        message = f"{type(error).__name__}: {error}".encode()[: _STATUS - _DIGEST - 3]
        record[0] = code
        record[1 + _DIGEST : 3 + _DIGEST] = len(message).to_bytes(2, "little")
        record[3 + _DIGEST : 3 + _DIGEST + len(message)] = message
    record[1 : 1 + _DIGEST] = digest
    return torch.frombuffer(record, dtype=torch.uint8).clone()


def _gather(record, group, device) -> list:
    """Every rank's status record, as bytes, in rank order."""
    import torch
    import torch.distributed as dist

    mine = record.to(device)
    every = [torch.empty_like(mine) for _ in range(dist.get_world_size(group))]
    dist.all_gather(every, mine, group=group)
    return [bytes(r.cpu().numpy()) for r in every]


def _raise_if_failed(records: list, mine, rank: int, what: str) -> None:
    """Raise on every rank when any rank failed: the failing rank its own error."""
    failed = [k for k, r in enumerate(records) if r[0] != 0]
    if not failed:
        return
    if mine is not None:
        raise mine
    k = failed[0]
    record = records[k]
    length = int.from_bytes(record[1 + _DIGEST : 3 + _DIGEST], "little")
    message = record[3 + _DIGEST : 3 + _DIGEST + length].decode(errors="replace")
    cls = _CLASSES[record[0]] if record[0] < len(_CLASSES) else Error
    raise cls(f"rank {k} of the process group failed to {what}: {message}")


def _comm_device(group, device) -> tuple:
    """Where the exchanged buffers live: the device with NCCL, the CPU otherwise; and the
    error of a NCCL group asked for CPU tensors (raised once every rank has heard of it)."""
    import torch
    import torch.distributed as dist

    backend = str(dist.get_backend(group)).lower()
    if device.type == "cuda" and "nccl" in backend:
        return (device if device.index is not None else torch.device("cuda", torch.cuda.current_device())), None
    if backend == "nccl":
        refused = UsageError(
            f"a NCCL process group exchanges device memory: give device='cuda:N' (not {str(device)!r}), "
            "or use a gloo group for CPU tensors"
        )
        return torch.device("cuda", torch.cuda.current_device()), refused
    return torch.device("cpu"), None


def _global_rank(group, rank: int) -> int:
    import torch.distributed as dist

    if group is None or group is dist.GroupMember.WORLD:
        return rank
    return dist.get_global_rank(group, rank)


def _read(native, tensors: list) -> list:
    """The bytes of `tensors` (of `native`), read through the ordinary load path, each as a flat
    uint8 numpy array: a read-only view of the bytes read (the file's shared map, no private
    map: they are only copied from)."""
    native.load_tensors(tensors)
    return [np.asarray(t.shared()).reshape(-1).view(np.uint8) for t in tensors]


def _fill(buffer, native, tensors: list, batch: _Batch, transfer=None) -> None:
    """Copy the owner's tensors of `batch` into `buffer`. Into a CPU buffer (gloo) the bytes
    are read into tensors of their own and copied, dropped once copied; into a device buffer
    (NCCL) through the staging pipeline that `load_file(device=...)` uses (`transfer`: its
    copy, CUDA's by default; tests give one that copies on the host): the file read straight
    into the kept pinned buffers, a tensor to decode (remote, compressed) decoded when its
    stage is filled. A remote file's bytes are not held past their batch either way."""
    chosen = [NativeTensor(native, tensors[i].name) for i, _ in batch.items]
    if buffer.device.type == "cpu" and transfer is None:
        view = buffer.numpy()
        for (_, offset), src in zip(batch.items, _read(native, chosen)):
            view[offset : offset + src.size] = src
        return
    from . import _staging

    outputs = [buffer[offset : offset + t.nbytes] for (_, offset), t in zip(batch.items, chosen)]
    _staging.load(native, chosen, outputs, transfer or _staging.CudaTransfer(buffer.device))


def load(path, device, data, group) -> dict:
    """`load_file(path, framework="torch", device=device, data=data, process_group=group)`."""
    import torch
    import torch.distributed as dist

    from . import _check_plain

    device = torch.device(device)
    rank, world_size = dist.get_rank(group), dist.get_world_size(group)
    if rank < 0:
        raise UsageError("this process is not a member of process_group")
    comm, error = _comm_device(group, device)
    budget = BUDGET
    native = tensors = dtypes = None
    digest = bytes(_DIGEST)
    try:
        if error is not None:
            raise error
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise UsageError(f"tensorfile._distributed.BUDGET is a positive number of bytes, not {budget!r}")
        native, tensors = _open(path, data)
        for t in tensors:
            _check_plain(t)
        dtypes = [_dtypes.torch_dtype(t.dtype) for t in tensors]
        digest = _digest(tensors, world_size, budget, comm.type)
    except Exception as e:  # noqa: BLE001 (every rank must hear of it, then it is raised)
        error = e
    records = _gather(_status(error, digest), group, comm)
    _raise_if_failed(records, error, rank, f"open {os.fspath(path)!r}")
    digests = [r[1 : 1 + _DIGEST] for r in records]
    if len(set(digests)) > 1:
        ranks = [[k for k, d in enumerate(digests) if d == one] for one in dict.fromkeys(digests)]
        raise UsageError(
            f"the ranks of process_group do not see the same file {os.fspath(path)!r} (tensors, dtypes, shapes "
            f"or sizes differ, or tensorfile._distributed.BUDGET): ranks grouped by what they see: {ranks}"
        )

    ranks = owners([t.nbytes for t in tensors], world_size)
    out = [None] * len(tensors)
    for batch in _batches(tensors, ranks, budget):
        buffer = torch.empty(batch.size, dtype=torch.uint8, device=comm)
        if batch.owner == rank and error is None:
            try:
                _fill(buffer, native, tensors, batch)
            except Exception as e:  # noqa: BLE001 (raised after the exchange, on every rank)
                error = e
        for start in range(0, batch.size, budget):
            dist.broadcast(buffer[start : start + budget], src=_global_rank(group, batch.owner), group=group)
        for i, offset in batch.items:
            t = tensors[i]
            out[i] = buffer[offset : offset + t.nbytes].view(dtypes[i]).reshape(tuple(t.shape))
    records = _gather(_status(error), group, comm)
    _raise_if_failed(records, error, rank, f"read its part of {os.fspath(path)!r}")

    for i, t in enumerate(tensors):
        if out[i] is None:
            out[i] = torch.empty(tuple(t.shape), dtype=dtypes[i], device=comm)
    if comm.type != device.type:
        from ._staging import to_device

        out = to_device(out, device)
    return {t.name: o for t, o in zip(tensors, out)}
