"""One row of the GPU part (scripts/benchlib/gpu.py), run as its own process:

  python -m benchlib.gpu_rows load TOOL FILE DEVICE [--mode warm|cold] [--check REF.json] [--staging BYTES]
  python -m benchlib.gpu_rows pinned NBYTES DEVICE
  python -m benchlib.gpu_rows make FILE GIB DEVICE        (the checkpoint, bf16, transformer-shaped)
  python -m benchlib.gpu_rows reference FILE DEVICE OUT   (per-tensor checksums of safetensors' CPU load)
  python -m benchlib.gpu_rows tensorize FILE OUT          (the same tensors as tensorizer's own file)
  python -m benchlib.gpu_rows convert FILE OUT [COMPRESS] (tensorfile.convert, or $TENSORFILE_BIN convert)
  python -m benchlib.gpu_rows export-pt2 FILE OUT         (torch.export.save of a module holding them)

`load` prints one JSON line: {"seconds", "bytes", "tensors", "version", "check"} or {"skip": why}.
The clock runs from just before the loader is called to every tensor on DEVICE (CUDA
synchronized); the interpreter's start, the imports and the CUDA context are made before it.
With --check, every tensor's dtype, shape and two checksums of its bytes (computed on DEVICE
after the clock stops) are compared with REF.json: a loader that returns wrong bytes is marked.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# Checksums of a tensor's bytes b_i: sum(b_i) and sum(b_i * (i mod 65521 + 1)), exact in int64
# for any tensor under 2^40 bytes; the second changes when bytes move.
MOD = 65521
CHUNK = 1 << 26


def checksums(t) -> list:
    import torch

    flat = t.detach().reshape(-1).contiguous().view(torch.uint8)
    n = flat.numel()
    s1 = torch.zeros((), dtype=torch.int64, device=flat.device)
    s2 = torch.zeros((), dtype=torch.int64, device=flat.device)
    for start in range(0, n, CHUNK):
        b = flat[start:start + CHUNK].to(torch.int64)
        w = torch.arange(start, start + b.numel(), dtype=torch.int64, device=flat.device) % MOD + 1
        s1 += b.sum()
        s2 += (b * w).sum()
    return [int(s1), int(s2)]


def describe(tensors: dict) -> dict:
    return {name: [str(t.dtype).removeprefix("torch."), list(t.shape), *checksums(t)] for name, t in tensors.items()}


def compare(got: dict, ref_path: str) -> str:
    """'ok', or what differs from the reference."""
    ref = json.loads(Path(ref_path).read_text())
    mine = describe(got)
    missing = sorted(set(ref) - set(mine))
    extra = sorted(set(mine) - set(ref))
    wrong = [n for n in ref if n in mine and mine[n] != ref[n]]
    if not (missing or extra or wrong):
        return "ok"
    parts = [f"{len(x)} {what} (first: {x[0]})" for x, what in ((missing, "missing"), (extra, "unexpected"),
                                                                 (wrong, "different")) if x]
    return "; ".join(parts)


def version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as v

    try:
        return v(dist)
    except PackageNotFoundError:
        return "?"


class Skip(Exception):
    """The loader cannot run here (a CUDA-only loader on the CPU, a package missing)."""


def loader(tool: str, path: str, device: str, mode: str, staging):
    """(distribution name, a function loading every tensor of `path` onto `device` as a dict).
    Imports happen here, before the clock."""
    import torch

    dev = torch.device(device)
    if tool in ("tensorfile", "tensorfile-prepared"):
        import tensorfile

        extra = {} if staging is None else {"staging": staging}
        if tool == "tensorfile-prepared" and dev.type == "cuda":
            # The staging buffers made and registered before the clock, as a server that
            # loads more than one checkpoint, or prepares while it starts, has them.
            tensorfile.prepare_staging(device, staging)
        return "tensorfile", lambda: tensorfile.load_file(path, framework="torch", device=device, **extra)
    if tool == "safetensors":
        from safetensors.torch import load_file

        return "safetensors", lambda: load_file(path, device=device)
    if tool == "fastsafetensors":
        from fastsafetensors import SafeTensorsFileLoader

        # GPUDirect Storage needs the nvidia-fs device; without it the library falls back to
        # its bounce-buffer copier (nogds), which is asked for here so that it does not warn.
        nogds = dev.type == "cpu" or not os.path.exists("/dev/nvidia-fs0")

        def fst():
            loader = SafeTensorsFileLoader(None, device, nogds=nogds)
            loader.add_filenames({0: [path]})
            buffers = loader.copy_files_to_device()
            out = {name: buffers.get_tensor(name) for name in loader.get_keys()}
            fst.keep = (loader, buffers)  # closed after the check: the tensors share their buffer
            return out

        return "fastsafetensors", fst
    if tool == "instanttensor":
        if dev.type != "cuda":
            raise Skip("InstantTensor loads onto CUDA devices only")
        from instanttensor import BackendPolicy, safe_open

        # From the page cache its documentation picks buffered I/O; cold, its default (direct I/O).
        extra = {"backend": BackendPolicy.BUFFERED} if mode == "warm" else {}

        def it():
            with safe_open(path, framework="pt", device=dev.index or 0, **extra) as f:
                return dict(f.tensors())

        return "instanttensor", it
    if tool == "runai":
        from runai_model_streamer import SafetensorsStreamer

        def runai():
            out = {}
            with SafetensorsStreamer() as streamer:
                streamer.stream_file(path, device=device)  # the streamer copies each tensor to it
                for name, tensor in streamer.get_tensors():
                    out[name] = tensor
            return out

        return "runai-model-streamer", runai
    if tool == "tensorizer":
        from tensorizer import TensorDeserializer

        def tz():
            d = TensorDeserializer(path, device=device)  # lazy_load=False: everything read here
            return dict(d.items())

        return "tensorizer", tz
    raise SystemExit(f"unknown tool {tool!r}")


def init_device(device: str):
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        torch.cuda.init()
        torch.zeros(1, device=dev)
        torch.cuda.synchronize(dev)
    return dev


def sync(dev) -> None:
    import torch

    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def run_load(args) -> dict:
    dev = init_device(args.device)
    try:
        dist, load = loader(args.tool, args.file, args.device, args.mode, args.staging)
    except Skip as why:
        return {"skip": str(why)}
    except ImportError as error:
        return {"skip": f"cannot import it: {error}"}
    start = time.perf_counter()
    tensors = load()
    sync(dev)
    seconds = time.perf_counter() - start
    nbytes = sum(t.numel() * t.element_size() for t in tensors.values())
    result = {"seconds": seconds, "bytes": nbytes, "tensors": len(tensors), "version": version(dist)}
    if args.check:
        import torch

        expect = dev if dev.type == "cpu" or dev.index is not None else torch.device("cuda", torch.cuda.current_device())
        elsewhere = sorted({str(t.device) for t in tensors.values() if t.device != expect})
        result["check"] = f"tensors on {elsewhere}, not {expect}" if elsewhere else compare(tensors, args.check)
    return result


def run_pinned(nbytes: int, device: str) -> dict:
    """The ceiling: one pinned host buffer of `nbytes` copied to DEVICE (best of 3, after one
    untimed copy). On the CPU (dry run) a plain memory copy stands in."""
    import torch

    dev = init_device(device)
    cuda = dev.type == "cuda"
    src = torch.empty(nbytes, dtype=torch.uint8, pin_memory=cuda)
    src.fill_(7)
    dst = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    best = None
    for i in range(4):
        start = time.perf_counter()
        dst.copy_(src, non_blocking=cuda)
        sync(dev)
        t = time.perf_counter() - start
        if i:
            best = t if best is None else min(best, t)
    return {"seconds": best, "bytes": nbytes, "tensors": 0, "version": torch.__version__}


def shapes(gib: float) -> list:
    """A transformer's tensors (hidden 2048, MLP 5632, vocabulary 32000), as many layers as make
    about `gib` GiB of bf16 (scripts/bench-load's recipe)."""
    hidden, inter, vocab = 2048, 5632, 32000
    per_layer = 4 * hidden * hidden + 3 * hidden * inter
    layers = max(1, int((gib * 2**30 / 2 - 2 * vocab * hidden) // per_layer))
    out = [("model.embed_tokens.weight", (vocab, hidden))]
    for i in range(layers):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (hidden,))]
        out += [(p + f"self_attn.{x}_proj.weight", (hidden, hidden)) for x in "qkvo"]
        out += [(p + "mlp.gate_proj.weight", (inter, hidden)), (p + "mlp.up_proj.weight", (inter, hidden)),
                (p + "mlp.down_proj.weight", (hidden, inter))]
    return out + [("model.norm.weight", (hidden,)), ("lm_head.weight", (vocab, hidden))]


def make(path: str, gib: float, device: str) -> None:
    """The checkpoint: normal(0, 0.02) bf16 values drawn on DEVICE (fast on a GPU), ones for
    the norms, streamed into a safetensors file."""
    import torch

    from .workloads import write_safetensors_bf16

    dev = init_device(device)
    g = torch.Generator(device=dev).manual_seed(0)

    def values(shape):
        if len(shape) == 1:
            t = torch.ones(shape, dtype=torch.bfloat16)
        else:
            t = (torch.randn(shape, generator=g, device=dev) * 0.02).to(torch.bfloat16)
        return t.view(torch.int16).cpu().numpy().view("uint16")

    tmp = Path(path).with_suffix(".partial")
    write_safetensors_bf16(tmp, [(n, s, (lambda s=s: values(s))) for n, s in shapes(gib)])
    tmp.rename(path)


def reference(path: str, device: str, out: str) -> None:
    from safetensors.torch import load_file

    dev = init_device(device)
    tensors = load_file(path)  # the CPU load every row is compared with
    Path(out).write_text(json.dumps({n: describe({n: t.to(dev)})[n] for n, t in tensors.items()}))


def tensorize(path: str, out: str) -> None:
    from safetensors.torch import load_file
    from tensorizer import TensorSerializer

    serializer = TensorSerializer(out + ".partial")
    serializer.write_state_dict(load_file(path))
    serializer.close()
    os.rename(out + ".partial", out)


def convert(path: str, out: str, compress) -> None:
    """`tensorfile convert` ($TENSORFILE_BIN), else the package's convert (the same writer)."""
    binary = os.environ.get("TENSORFILE_BIN")
    if binary:
        extra = ["--compress", compress] if compress else []
        subprocess.run([binary, "convert", path, out, *extra], check=True, stdout=subprocess.DEVNULL)
    else:
        import tensorfile

        tensorfile.convert(path, out, compress=compress)


def export_pt2(path: str, out: str) -> None:
    """torch.export.save of a module whose parameters are the checkpoint's tensors, under their
    own names (submodules along the dots), as a trained model's `.pt2` holds them."""
    import torch
    from safetensors.torch import load_file

    root = torch.nn.Module()
    tensors = load_file(path)
    for name, t in tensors.items():
        *parents, leaf = name.split(".")
        m = root
        for part in parents:
            if not hasattr(m, part):
                m.add_module(part, torch.nn.Module())
            m = getattr(m, part)
        m.register_parameter(leaf, torch.nn.Parameter(t, requires_grad=False))
    first = next(iter(tensors))

    class Holder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for child_name, child in root.named_children():
                self.add_module(child_name, child)

        def forward(self, x):
            return x + self.get_parameter(first)[0].float().sum()

    ep = torch.export.export(Holder(), (torch.zeros(1),), strict=False)
    tmp = out + ".partial.pt2"
    torch.export.save(ep, tmp)
    os.rename(tmp, out)


def main() -> None:
    what = sys.argv[1]
    rest = sys.argv[2:]
    if what == "load":
        p = argparse.ArgumentParser(prog="gpu_rows load")
        p.add_argument("tool")
        p.add_argument("file")
        p.add_argument("device")
        p.add_argument("--mode", default="warm")
        p.add_argument("--check", default=None)
        p.add_argument("--staging", type=int, default=None)
        print(json.dumps(run_load(p.parse_args(rest))))
    elif what == "pinned":
        print(json.dumps(run_pinned(int(rest[0]), rest[1])))
    elif what == "make":
        make(rest[0], float(rest[1]), rest[2])
    elif what == "reference":
        reference(*rest)
    elif what == "tensorize":
        tensorize(*rest)
    elif what == "convert":
        convert(rest[0], rest[1], rest[2] if len(rest) > 2 else None)
    elif what == "export-pt2":
        export_pt2(*rest)
    else:
        sys.exit(f"unknown operation {what!r}")


if __name__ == "__main__":
    main()
