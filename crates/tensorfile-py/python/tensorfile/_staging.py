"""Loading tensors onto a device through a few staging buffers that the library fills.

The library plans stages over the tensors (`NativeFile.staging`): windows of the file read
straight into a buffer (with `O_DIRECT` when the file is not in the page cache) and packed
stages of tensors already in memory. A few filler threads each take a free buffer and the next
stage and fill it on all cores with the GIL released, so that while one waits (for the copies
out of its buffer, for the interpreter, for rayon's threads to wake) another's fill runs; this
thread copies each filled stage's pieces from its buffer into the output tensors
(asynchronously on a CUDA stream) and records when those copies are done; a filler waits for
that before it fills the buffer again. The buffers are registered with the driver as pinned
memory, each by the filler that first takes it (registering costs about a quarter of a second
per GiB: the first fills need not wait for all of it), and kept for later loads (`release()`
lets them go). Outputs are fresh tensors: nothing handed out is a view of a buffer that is
filled again.
"""

import itertools
import os
import queue
import threading

from . import _native
from ._errors import UsageError

#: Bytes of staging memory a load uses by default (`staging=` on `load_file`).
DEFAULT_STAGING = 256 << 20
#: Bytes per buffer at most: a stage's copies then take well under a millisecond on a GPU.
CHUNK = 32 << 20
#: Filler threads. One alone leaves the cores idle between its fills: on an H200 machine's 16
#: cores a 32 MiB fill takes about 0.7 ms, and what comes between two fills about as long. A
#: warm 4.27 GB load there took 0.265-0.276 s with one filler, 0.234 s with four, 0.240 s
#: with six (docs/performance.md, "Into one GPU").
FILLERS = 4
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

    def mark(self):
        return None

    def wait(self, mark) -> None:
        pass

    def finish(self) -> None:
        pass


class CudaTransfer(HostTransfer):
    """Copies out of pinned buffers into tensors on a CUDA device, asynchronously on a stream
    of its own; a mark is an event recorded after a stage's copies."""

    def __init__(self, device):
        import torch

        self.torch = torch
        self.device = device
        self.stream = torch.cuda.Stream(device=device)

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
        with self.torch.cuda.stream(self.stream):
            dst.copy_(src, non_blocking=True)

    def mark(self):
        event = self.torch.cuda.Event()
        event.record(self.stream)
        return event

    def wait(self, mark) -> None:
        if mark is not None:
            mark.synchronize()

    def finish(self) -> None:
        self.stream.synchronize()


class _Pool:
    """Staging buffers, their views, and which of them a transfer has pinned (each is pinned
    when a filler first takes it, by `ready`)."""

    def __init__(self, chunk: int, count: int, transfer):
        self.chunk, self.kind = chunk, type(transfer)
        self.buffers = [_native.stage_buffer(chunk) for _ in range(count)]
        self.views = transfer.views(self.buffers)
        self.transfer = transfer
        self.tried = [False] * count  # each index is written by the one filler holding it
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


def _take_pool(chunk: int, count: int, transfer):
    """The kept pool when it fits and no other load holds it, else a new one (kept when none
    is); and whether the caller holds the lock on the kept one."""
    global _pool
    if not _pool_lock.acquire(blocking=False):
        return _Pool(chunk, count, transfer), False
    if _pool is not None and not _pool.fits(chunk, count, transfer):
        _pool.close()
        _pool = None
    if _pool is None:
        try:
            _pool = _Pool(chunk, count, transfer)
        except BaseException:
            _pool_lock.release()
            raise
    return _pool, True


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
    pool, kept = _take_pool(chunk, count, transfer)
    try:
        _run(plan, stages, pool, flat, transfer)
    finally:
        if kept:
            _pool_lock.release()
        else:
            pool.close()


def _run(plan, stages: int, pool, flat: list, transfer) -> None:
    """The pipeline: filler threads fill free buffers with the next stages, in any order of
    completion; this thread copies each filled one out and hands it back with its mark."""
    free = queue.Queue()
    for i in range(len(pool.buffers)):
        free.put((i, None))
    filled = queue.Queue()
    stop = threading.Event()
    next_stage = itertools.count()  # next() on it is atomic: each stage goes to one filler

    def filler():
        try:
            while True:
                i, mark = free.get()
                if stop.is_set():
                    return
                k = next(next_stage)
                if k >= stages:
                    free.put((i, mark))  # for the other fillers, which then end too
                    return
                transfer.wait(mark)
                pool.ready(i)
                plan.fill(k, pool.buffers[i], alone)
                filled.put((k, i, None))
        except BaseException as e:  # handed to the copying thread, which raises it
            filled.put((None, None, e))

    fillers = max(1, min(FILLERS, len(pool.buffers) - 1, stages))
    # With a filler for every core, each fills its stage by itself (no fork-join of all the
    # cores per stage, which on few cores cost more than the reads); with more cores than
    # fillers, each fill runs on all of them.
    alone = fillers >= (os.cpu_count() or 1)
    threads = [threading.Thread(target=filler, name=f"tensorfile-stage-{n}", daemon=True) for n in range(fillers)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(stages):
            k, i, error = filled.get()
            if error is not None:
                raise error
            view = pool.views[i]
            for tensor, offset, length, at in plan.pieces(k):
                transfer.copy(flat[tensor][offset : offset + length], view[at : at + length])
            free.put((i, transfer.mark()))
    finally:
        stop.set()
        for _ in threads:
            free.put((0, None))
        for thread in threads:
            thread.join()
        transfer.finish()
