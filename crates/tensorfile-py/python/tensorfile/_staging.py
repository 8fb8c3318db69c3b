"""Loading tensors onto a device through a few staging buffers that the library fills.

The library plans stages over the tensors (`NativeFile.staging`): windows of the file read
straight into a buffer (with `O_DIRECT` when the file is not in the page cache) and packed
stages of tensors already in memory. Its pipeline (`NativeStaging.pipeline`) fills stage after
stage into the buffers, stage `k` into buffer `k % len(buffers)`, on a thread per core: each
thread takes the next 2 MiB part of the next stage, so that every core reads all the time and
nothing runs in the interpreter between two stages. This thread waits for each stage in order
(the GIL released), copies its pieces from its buffer into the output tensors (asynchronously,
on two CUDA streams in turn) and hands a mark of those copies to a releasing thread, which
waits for them and lets the library fill the buffer again. The buffers are registered with
the driver as pinned memory by that thread before their first stage (registering costs about
a quarter of a second per GiB: the first stages need not wait for all of it), and kept for
later loads (`prepare()` registers them ahead of a first load, `release()` lets them go).
Outputs are fresh tensors: nothing handed out is a view of a buffer that is filled again.
"""

import contextlib
import queue
import threading

from . import _native
from ._errors import UsageError

#: Bytes of staging memory a load uses by default (`staging=` on `load_file`).
DEFAULT_STAGING = 256 << 20
#: Bytes per buffer at most: a stage's copies then take well under a millisecond on a GPU.
CHUNK = 32 << 20
_ALIGN = 4096
_MIN_CHUNK = 4 * _ALIGN

_pool_lock = threading.Lock()
_pool = None


def split(staging: int) -> tuple:
    """`(chunk, count)`: `count` (at least two) buffers of `chunk` bytes within `staging`."""
    if not isinstance(staging, int) or isinstance(staging, bool) or staging < 2 * _MIN_CHUNK:
        raise UsageError(f"staging is a number of bytes of at least {2 * _MIN_CHUNK}, not {staging!r}")
    chunk = min(CHUNK, staging // 2) // _ALIGN * _ALIGN
    return chunk, staging // chunk


class HostTransfer:
    """Copies out of the buffers into numpy arrays in memory, synchronously: the pipeline
    without a device (how it is tested where there is no GPU, and no torch)."""

    def views(self, buffers: list) -> list:
        """What `copy` copies from: one view of each buffer."""
        import numpy as np

        return [np.asarray(b) for b in buffers]

    def pin(self, buffer) -> bool:
        """Register `buffer` with the driver; whether it is pinned now."""
        return False

    def unpin(self, buffer) -> None:
        pass

    def flat(self, output):
        """The output's bytes, flat (a view: copies into it land in the output)."""
        import numpy as np

        return output.reshape(-1).view(np.uint8)

    def copy(self, dst, src) -> None:
        dst[...] = src

    def pack(self, dst, src) -> None:
        """Copy `src` (a flat uint8 piece of what `flat` gave, in host memory) into `dst`, a
        writable numpy view of a staging buffer."""
        dst[...] = src

    def mark(self):
        return None

    def wait(self, mark) -> None:
        pass

    def finish(self) -> None:
        pass


class CudaTransfer(HostTransfer):
    """Copies out of pinned buffers into tensors on a CUDA device, asynchronously, each stage's
    on the next of a few streams of its own (so that one stage's copies need not queue behind
    the last's); a mark is an event recorded after a stage's copies."""

    STREAMS = 2

    def __init__(self, device):
        import torch

        self.torch = torch
        self.device = device
        self.streams = [torch.cuda.Stream(device=device) for _ in range(self.STREAMS)]
        self.stage = 0

    def views(self, buffers: list) -> list:
        import warnings

        with warnings.catch_warnings():
            # Read-only to numpy: only the library writes to them, and torch only reads.
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            return [self.torch.from_numpy(v) for v in super().views(buffers)]

    def pin(self, buffer) -> bool:
        address, length = buffer.span()
        # Portable: pinned for every device's context, not only the current one. A buffer the
        # driver will not pin still works: its copies are then synchronous.
        return int(self.torch.cuda.cudart().cudaHostRegister(address, length, 1)) == 0

    def unpin(self, buffer) -> None:
        self.torch.cuda.cudart().cudaHostUnregister(buffer.span()[0])

    def flat(self, output):
        return output.reshape(-1).view(self.torch.uint8)

    def copy(self, dst, src) -> None:
        with self.torch.cuda.stream(self.streams[self.stage % len(self.streams)]):
            dst.copy_(src, non_blocking=True)

    def pack(self, dst, src) -> None:
        # torch's copy of a large tensor runs on its threads (numpy's on this one).
        self.torch.from_numpy(dst).copy_(src)

    def mark(self):
        """The mark of this stage's copies; the next stage's go on the next stream."""
        event = self.torch.cuda.Event()
        event.record(self.streams[self.stage % len(self.streams)])
        self.stage += 1
        return event

    def wait(self, mark) -> None:
        if mark is not None:
            mark.synchronize()

    def finish(self) -> None:
        for stream in self.streams:
            stream.synchronize()


class _Pool:
    """Staging buffers, their views, and which of them a transfer has pinned (each is pinned
    by `ready`, before the first stage that goes into it, or all ahead by `prepare`)."""

    def __init__(self, chunk: int, count: int, transfer):
        self.chunk, self.kind = chunk, type(transfer)
        self.buffers = [_native.stage_buffer(chunk) for _ in range(count)]
        self.views = transfer.views(self.buffers)
        self.transfer = transfer
        self.tried = [False] * count  # written by whoever holds the pool: one thread of a load
        self.pinned = [False] * count

    def ready(self, i: int) -> None:
        if not self.tried[i]:
            self.tried[i] = True
            self.pinned[i] = self.transfer.pin(self.buffers[i])

    def fits(self, chunk: int, count: int, transfer) -> bool:
        return self.chunk == chunk and len(self.buffers) == count and self.kind is type(transfer)

    def close(self) -> None:
        for buffer, pinned in zip(self.buffers, self.pinned):
            if pinned:
                self.transfer.unpin(buffer)


def _kept(chunk: int, count: int, transfer):
    """The kept pool, made anew where it does not fit (the caller holds `_pool_lock`)."""
    global _pool
    if _pool is not None and not _pool.fits(chunk, count, transfer):
        _pool.close()
        _pool = None
    if _pool is None:
        _pool = _Pool(chunk, count, transfer)
    return _pool


@contextlib.contextmanager
def _pool_for(chunk: int, count: int, transfer):
    """The kept pool while it fits and no other load holds it (made anew where it does not
    fit), else a pool of the load's own, closed after it."""
    if not _pool_lock.acquire(blocking=False):
        pool = _Pool(chunk, count, transfer)
        try:
            yield pool
        finally:
            pool.close()
        return
    try:
        yield _kept(chunk, count, transfer)
    finally:
        _pool_lock.release()


def prepare(transfer, staging: int = DEFAULT_STAGING) -> None:
    """Make the kept pool for loads of `staging` bytes through `transfer` now, every buffer
    registered: a first load then finds it ready (waiting for a load that holds it)."""
    chunk, count = split(staging)
    with _pool_lock:
        pool = _kept(chunk, count, transfer)
        for i in range(count):
            pool.ready(i)


def release() -> None:
    """Let the kept staging buffers go (unregistered from the driver, then freed)."""
    global _pool
    with _pool_lock:
        if _pool is not None:
            _pool.close()
            _pool = None


def load(native_file, tensors: list, outputs: list, transfer, staging: int = DEFAULT_STAGING, direct: str = "auto"):
    """Copy the bytes of `tensors` (native tensors of `native_file`, dense) into `outputs`
    (contiguous tensors of the same sizes in bytes, where `transfer` copies to) through
    staging buffers within `staging` bytes."""
    chunk, count = split(staging)
    flat = [transfer.flat(o) for o in outputs]
    if len(flat) != len(tensors) or any(f.shape[0] != t.nbytes for f, t in zip(flat, tensors)):
        raise UsageError("the outputs are not the sizes of the tensors")
    plan = native_file.staging(tensors, chunk, direct)
    stages = len(plan)
    if stages == 0:
        return
    with _pool_for(chunk, count, transfer) as pool:
        _run(plan, stages, pool, flat, transfer)


_END = object()


def _run(plan, stages: int, pool, flat: list, transfer) -> None:
    """The pipeline: the library's threads fill the stages into the pool's buffers in order;
    this thread copies each one out as it is filled, and a releasing thread registers each
    buffer before its first stage and lets it be filled again once its copies are done."""
    pipeline = plan.pipeline(pool.buffers)
    marks = queue.Queue()
    stopping = threading.Event()
    failure = []

    def releaser():
        try:
            for i in range(min(stages, len(pool.buffers))):
                if stopping.is_set():
                    return
                pool.ready(i)
                pipeline.release()
            while (mark := marks.get()) is not _END:
                transfer.wait(mark)
                pipeline.release()
        except BaseException as e:  # raised by the copying thread, which it stops
            failure.append(e)
            pipeline.stop()

    thread = threading.Thread(target=releaser, name="tensorfile-stage-release", daemon=True)
    thread.start()
    try:
        for k in range(stages):
            try:
                i = pipeline.wait(k)
            except Exception:
                if failure:  # the pipeline was stopped because the releasing thread failed
                    raise failure[0] from None
                raise
            view = pool.views[i]
            for tensor, offset, length, at in plan.pieces(k):
                transfer.copy(flat[tensor][offset : offset + length], view[at : at + length])
            marks.put(transfer.mark())
    finally:
        stopping.set()
        pipeline.stop()
        marks.put(_END)
        thread.join()
        transfer.finish()
    if failure:
        raise failure[0]


def to_device(tensors: list, device) -> list:
    """Copies of CPU torch `tensors` (each contiguous) on `device`: through the staging
    buffers onto a CUDA device, by torch's `to` elsewhere."""
    import torch

    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return [t.to(device) for t in tensors]
    outputs = [torch.empty(t.shape, dtype=t.dtype, device=device) for t in tensors]
    copy_from_host(tensors, outputs, CudaTransfer(device))
    return outputs


def copy_from_host(sources: list, outputs: list, transfer, staging: int = DEFAULT_STAGING) -> None:
    """Copy host memory `sources` (contiguous arrays or CPU tensors) into `outputs` of the same
    sizes in bytes, through the kept staging buffers: consecutive pieces packed into a buffer
    on this thread while the copies of the buffers before it run (asynchronously on a
    device); a buffer filled again once its copies are done. What `load` does for tensors of
    a file, for tensors already in memory (decoded, dequantized, exchanged)."""
    chunk, count = split(staging)
    flat_in = [transfer.flat(s) for s in sources]
    flat_out = [transfer.flat(o) for o in outputs]
    if any(i.shape[0] != o.shape[0] for i, o in zip(flat_in, flat_out)) or len(flat_in) != len(flat_out):
        raise UsageError("the outputs are not the sizes of the sources")
    stages = list(_packed(flat_in, chunk))
    if not stages:
        return
    with _pool_for(chunk, count, transfer) as pool:
        _copy_stages(stages, pool, flat_in, flat_out, transfer)


def _copy_stages(stages: list, pool, flat_in: list, flat_out: list, transfer) -> None:
    """`copy_from_host`'s stages through `pool`: each packed here, then copied out, a buffer
    packed again once the copies out of it are done."""
    import numpy as np

    marks = [None] * len(pool.buffers)
    try:
        for k, pieces in enumerate(stages):
            i = k % len(pool.buffers)
            if marks[i] is not None:
                transfer.wait(marks[i])
            pool.ready(i)
            held = pool.buffers[i].hold()
            try:
                writable = np.asarray(held)
                for n, offset, length, at in pieces:
                    transfer.pack(writable[at : at + length], flat_in[n][offset : offset + length])
            finally:
                held.release()
            view = pool.views[i]
            for n, offset, length, at in pieces:
                transfer.copy(flat_out[n][offset : offset + length], view[at : at + length])
            marks[i] = transfer.mark()
        for k in range(len(stages), len(stages) + len(marks)):
            if marks[k % len(marks)] is not None:
                transfer.wait(marks[k % len(marks)])
    finally:
        transfer.finish()


def _packed(flat: list, chunk: int):
    """The stages that carry `flat` (sizes in bytes, in order) through buffers of `chunk`
    bytes: lists of `(source, offset, length, at)`, pieces packed one after another."""
    stage, used = [], 0
    for n, source in enumerate(flat):
        size, done = source.shape[0], 0
        while done < size:
            if used == chunk:
                yield stage
                stage, used = [], 0
            length = min(chunk - used, size - done)
            stage.append((n, done, length, used))
            used += length
            done += length
    if stage:
        yield stage
