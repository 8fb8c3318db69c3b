"""Loading tensors onto a device through a few staging buffers that the library fills.

The library plans stages over the tensors (`NativeFile.staging`): windows of the file read
straight into a buffer (with `O_DIRECT` when the file is not in the page cache) and packed
stages of tensors already in memory. A filler thread fills buffer after buffer on all cores
with the GIL released; this thread copies each stage's pieces from its buffer into the
output tensors (asynchronously on a CUDA stream) and records when those copies are done; the
filler waits for that before it fills the buffer again. The buffers are registered with the
driver as pinned memory once and kept for later loads (`release()` lets them go). Outputs are
fresh tensors: nothing handed out is a view of a buffer that is filled again.
"""

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

    pinned = False

    def register(self, buffers: list) -> list:
        import numpy as np

        return [np.asarray(b) for b in buffers]

    def unregister(self, buffers: list) -> None:
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

    def register(self, buffers: list) -> list:
        import warnings

        with warnings.catch_warnings():
            # Read-only to numpy: only the library writes to them, and torch only reads.
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            views = [self.torch.from_numpy(v) for v in super().register(buffers)]
        cudart = self.torch.cuda.cudart()
        self.pinned = True
        for b in buffers:
            address, length = b.span()
            # Portable: pinned for every device's context, not only the current one.
            if int(cudart.cudaHostRegister(address, length, 1)) != 0:
                self.pinned = False
        return views

    def unregister(self, buffers: list) -> None:
        cudart = self.torch.cuda.cudart()
        for b in buffers:
            cudart.cudaHostUnregister(b.span()[0])

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
    """Staging buffers, their views and whether a transfer registered them."""

    def __init__(self, chunk: int, count: int, transfer):
        self.chunk, self.kind = chunk, type(transfer)
        self.buffers = [_native.stage_buffer(chunk) for _ in range(count)]
        self.views = transfer.register(self.buffers)
        self.transfer = transfer

    def fits(self, chunk: int, count: int, transfer) -> bool:
        return self.chunk == chunk and len(self.buffers) == count and self.kind is type(transfer)

    def close(self) -> None:
        self.transfer.unregister(self.buffers)


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
    """The pipeline: a filler thread fills buffers in stage order, this thread copies them out."""
    free = queue.Queue()
    for i in range(len(pool.buffers)):
        free.put((i, None))
    filled = queue.Queue()
    stop = threading.Event()

    def filler():
        try:
            for k in range(stages):
                i, mark = free.get()
                if stop.is_set():
                    return
                transfer.wait(mark)
                plan.fill(k, pool.buffers[i])
                filled.put((k, i, None))
        except BaseException as e:  # handed to the copying thread, which raises it
            filled.put((None, None, e))

    thread = threading.Thread(target=filler, name="tensorfile-stage", daemon=True)
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
        free.put((0, None))
        thread.join()
        transfer.finish()
