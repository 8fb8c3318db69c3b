"""One timed Python operation, run as `python -m benchlib.peers TOOL OP FILE [DATA]` by
`scripts/bench`; prints `{"seconds": ..., "bytes": ..., "tensors": ...}` (the operation
alone: not the interpreter's start nor the imports).

  tensorfile    open | list | read | load-torch[-write] | convert   (the package: pip install
                ./crates/tensorfile-py; convert: DATA is the output, written as zTensor 2)
  safetensors   open | read | load-torch[-write]   (-write: then every byte inverted in place)
  ztensor       open | read                   (pip ztensor==0.1.4, the zTensor 0.1 reference)
  torch-export  read                          (torch.export.load(FILE).state_dict + constants)
  torch-load    read                          (torch.load(FILE, weights_only=True, mmap=True))
  executorch    read                          (deserialize_pte_binary: every constant)
  gguf          list | read | dequantize      (gguf-py's GGUFReader, in the gguf environment;
                                               dequantize: DATA names the tensor, decoded by
                                               gguf.quants.dequantize after its blocks are read)
  ztensor2      open | read | convert         (pip ztensor==2.1.2, in its own environment;
                                               convert: ztensor.convert(FILE, DATA))

`read` touches every byte of every tensor (a sum of 8-byte words where the size allows); of a
quantized tensor, every byte of its stored parts. `list` reads every tensor's name, type and
shape.
"""

import json
import sys
import time

import numpy as np


def touch(array) -> int:
    """Bytes of `array` after reading them all."""
    raw = np.asarray(array).reshape(-1).view(np.uint8)
    n = raw.size - raw.size % 8
    if n:
        raw[:n].view(np.uint64).sum()
    if raw.size > n:
        raw[n:].sum()
    return int(raw.size)


def touch_torch(t) -> int:
    import torch

    flat = t.detach().reshape(-1).contiguous().view(torch.uint8)
    return touch(flat.numpy())


def write_torch(t) -> int:
    """Bytes of `t` after inverting every one in place (a write to every page)."""
    import torch

    flat = t.detach().reshape(-1).view(torch.uint8)
    flat.bitwise_not_()
    return flat.numel()


def run(tool: str, op: str, path: str, data: str | None):
    if tool == "tensorfile":
        import tensorfile

        if op == "open":
            start = time.perf_counter()
            with tensorfile.open(path, data=data) as f:
                n = len(f.keys())
            return time.perf_counter() - start, 0, n
        if op == "list":
            start = time.perf_counter()
            with tensorfile.open(path) as f:
                listed = [(name, t.dtype, t.shape, t.quantization) for name in f for t in [f[name]]]
            return time.perf_counter() - start, 0, len(listed)
        if op == "read":
            start = time.perf_counter()
            with tensorfile.open(path, data=data) as f:
                arrays = [a for name in f for t in [f[name]]
                          for a in (t.parts().values() if t.quantization is not None else [t.numpy(raw=True)])]
            total = sum(touch(a) for a in arrays)
            return time.perf_counter() - start, total, len(arrays)
        if op in ("load-np-off", "load-np-checksums", "load-np-full"):
            verify = {"load-np-off": False, "load-np-checksums": "checksums", "load-np-full": True}[op]
            start = time.perf_counter()
            arrays = tensorfile.load_file(path, verify=verify)
            total = sum(touch(a) for a in arrays.values())
            return time.perf_counter() - start, total, len(arrays)
        if op in ("load-torch", "load-torch-write"):
            import torch  # noqa: F401 (imported before the clock starts, as safetensors' is)

            start = time.perf_counter()
            tensors = tensorfile.load_file(path, framework="torch")
            total = sum((write_torch if op == "load-torch-write" else touch_torch)(t) for t in tensors.values())
            return time.perf_counter() - start, total, len(tensors)
    if tool == "safetensors":
        from safetensors import safe_open

        if op == "open":
            start = time.perf_counter()
            with safe_open(path, framework="np") as f:
                n = len(f.keys())
            return time.perf_counter() - start, 0, n
        if op == "read":
            import torch  # safetensors' numpy side has no bfloat16
            from safetensors.torch import load_file

            start = time.perf_counter()
            tensors = load_file(path)
            total = sum(touch_torch(t) for t in tensors.values())
            return time.perf_counter() - start, total, len(tensors)
        if op in ("load-torch", "load-torch-write"):
            from safetensors.torch import load_file

            start = time.perf_counter()
            tensors = load_file(path)
            total = sum((write_torch if op == "load-torch-write" else touch_torch)(t) for t in tensors.values())
            return time.perf_counter() - start, total, len(tensors)
    if tool == "ztensor":
        import ztensor

        start = time.perf_counter()
        with ztensor.Reader(path) as r:
            names = r.get_tensor_names()
            if op == "open":
                return time.perf_counter() - start, 0, len(names)
            total = 0
            for name in names:
                # (its `to="torch"` crashes the interpreter on bfloat16: numpy, via ml_dtypes)
                total += touch(r.read_tensor(name))
        return time.perf_counter() - start, total, len(names)
    if tool == "torch-export":
        import torch

        start = time.perf_counter()
        ep = torch.export.load(path)
        tensors = [*ep.state_dict.values(), *[c for c in ep.constants.values() if isinstance(c, torch.Tensor)]]
        total = sum(touch_torch(t) for t in tensors)
        return time.perf_counter() - start, total, len(tensors)
    if tool == "torch-load":
        import torch

        start = time.perf_counter()
        value = torch.load(path, weights_only=True, mmap=True)
        tensors = [v for v in value.values() if isinstance(v, torch.Tensor)]
        total = sum(touch_torch(t) for t in tensors)
        return time.perf_counter() - start, total, len(tensors)
    if tool == "executorch":
        from executorch.exir._serialize._program import deserialize_pte_binary

        start = time.perf_counter()
        with open(path, "rb") as f:
            blob = f.read()
        program = deserialize_pte_binary(blob)
        program = getattr(program, "program", program)
        buffers = [bytes(b.storage) for b in program.constant_buffer]
        total = sum(touch(np.frombuffer(b, np.uint8)) for b in buffers)
        return time.perf_counter() - start, total, len(buffers)
    if tool == "tensorfile" and op == "convert":
        import tensorfile

        start = time.perf_counter()
        done = tensorfile.convert(path, data, zt_version=2, verify=False)
        return time.perf_counter() - start, 0, done["tensors"]
    if tool == "gguf":
        return gguf_op(op, path, data)
    if tool == "ztensor2":
        return ztensor2_op(op, path, data)
    raise SystemExit(f"unknown {tool} {op}")


def gguf_op(op: str, path: str, name: str | None):
    import gguf

    if op == "list":
        start = time.perf_counter()
        listed = [(t.name, t.tensor_type, tuple(t.shape)) for t in gguf.GGUFReader(path).tensors]
        return time.perf_counter() - start, 0, len(listed)
    if op == "read":
        start = time.perf_counter()
        tensors = gguf.GGUFReader(path).tensors
        total = sum(touch(t.data) for t in tensors)
        return time.perf_counter() - start, total, len(tensors)
    if op == "dequantize":
        t = next(t for t in gguf.GGUFReader(path).tensors if t.name == name)
        touch(t.data)
        gguf.quants.dequantize(t.data[:1], t.tensor_type)  # a codebook is built on first use
        start = time.perf_counter()
        values = gguf.quants.dequantize(t.data, t.tensor_type)
        return time.perf_counter() - start, values.nbytes, 1
    raise SystemExit(f"unknown gguf {op}")


def ztensor2_op(op: str, path: str, out: str | None):
    import ztensor

    if op == "convert":
        start = time.perf_counter()
        ztensor.convert(path, out)
        return time.perf_counter() - start, 0, len(ztensor.index(out))
    start = time.perf_counter()
    with ztensor.open(path) as src:
        if op == "open":
            listed = [(t.name, t.shape, t.layout) for t in src.values()]
            return time.perf_counter() - start, 0, len(listed)
        if op != "read":
            raise SystemExit(f"unknown ztensor2 {op}")
        total, n = 0, 0
        for t in src.values():
            parts = t.parts
            for part in parts:
                total += touch(np.frombuffer(memoryview(t if len(parts) == 1 else t[part]), np.uint8))
            n += 1
    return time.perf_counter() - start, total, n


def main() -> None:
    tool, op, path = sys.argv[1:4]
    data = sys.argv[4] if len(sys.argv) > 4 else None
    seconds, nbytes, tensors = run(tool, op, path, data)
    print(json.dumps({"seconds": seconds, "bytes": nbytes, "tensors": tensors}))


if __name__ == "__main__":
    main()
