"""Host-to-device loading that streams the mapped file through a few reused pinned buffers.

Copying a mapped tensor straight to a GPU makes the driver stage it through its own small
pinned buffer, synchronously, one tensor at a time; pinning the whole file costs as much as
reading it and holds that memory. Here a few pinned staging buffers (`STAGES` of `CHUNK`
bytes) rotate: while chunk k is copied from the map into staging buffer k % STAGES by the
CPU, the copies of earlier chunks to the device run asynchronously on a CUDA stream; a
buffer is reused once the event recorded after its last copy has completed.
"""

import torch

CHUNK = 64 << 20
STAGES = 4


def to_device(tensors: list, device: torch.device) -> list:
    """Copies of CPU `tensors` on `device` (each contiguous)."""
    if device.type != "cuda" or not torch.cuda.is_available():
        return [t.to(device) for t in tensors]
    outputs = [torch.empty(t.shape, dtype=t.dtype, device=device) for t in tensors]
    copy_into(tensors, outputs, device)
    return outputs


def copy_into(tensors: list, outputs: list, device: torch.device) -> None:
    """Copy CPU `tensors` into the contiguous tensors `outputs`, of the same shapes and
    dtypes, on CUDA `device`, through the rotating pinned buffers."""
    total = sum(t.numel() * t.element_size() for t in tensors)
    if total == 0:
        return
    chunk = min(CHUNK, total)
    stages = [torch.empty(chunk, dtype=torch.uint8, pin_memory=True) for _ in range(min(STAGES, -(-total // chunk)))]
    ready = [None] * len(stages)
    stream = torch.cuda.Stream(device=device)
    k = 0
    with torch.cuda.device(device):
        for src, dst in zip(tensors, outputs):
            nbytes = src.numel() * src.element_size()
            if nbytes == 0:
                continue
            src_bytes = src.reshape(-1).view(torch.uint8)
            dst_bytes = dst.reshape(-1).view(torch.uint8)
            for start in range(0, nbytes, chunk):
                n = min(chunk, nbytes - start)
                i = k % len(stages)
                if ready[i] is not None:
                    ready[i].synchronize()
                stages[i][:n].copy_(src_bytes[start : start + n])
                with torch.cuda.stream(stream):
                    dst_bytes[start : start + n].copy_(stages[i][:n], non_blocking=True)
                    event = torch.cuda.Event()
                    event.record(stream)
                ready[i] = event
                k += 1
        stream.synchronize()
