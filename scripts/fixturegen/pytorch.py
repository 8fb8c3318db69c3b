"""PyTorch fixtures: `.pt2` archives written by `torch.export.save`, `package_pt2` and
AOTInductor, `torch.save` files and TorchScript archives (`torch.jit.save`, in
`torchscript.py`), from small deterministic models, each with a record of
what torch's own loaders read back (`torch.export.load`, `load_pt2`, `torch.load`).

Two torch versions make them: the environment's torch (2.9 or later: weights configs, one
record per storage) writes `tests/fixtures/pytorch/`, and torch 2.8 (weights as nested
`torch.save` files) writes `tests/fixtures/pytorch/torch28/`; `scripts/fixtures` runs this
module a second time in a torch 2.8 environment for that (`python -m fixturegen.pytorch
torch28 OUT`).

Naming (the contract tensorfile implements): in a single-model archive, each parameter,
buffer and constant by its fully qualified name; in a multi-model archive `<model>/<fqn>`;
in a `torch.save` file, nested dicts, lists and tuples joined with dots (`model.fc.weight`,
`optimizer.state.0.exp_avg`), a bare tensor as `tensor`. A tensor's bytes are the contiguous
row-major bytes of what the loader gives.

The model builders (`build`) are imported by tests/interop/test_pytorch.py too, which
rebuilds a fixture's model in eager torch with the same seed.
"""

import hashlib
import io
import json
import os
import re
import sys
import warnings
import zipfile
from pathlib import Path

import torch


def version(text: str) -> str:
    """`2.15.0+cu132` -> `2.15.0`: the build tag says nothing about the file format."""
    return text.split("+")[0]


PRODUCER = f"torch {version(torch.__version__)}"
MODEL_SEED = 20250101
INPUT_SEED = 5


# --- the models ---------------------------------------------------------------------------


class Plain(torch.nn.Module):
    """Two linear layers; exported with a dynamic batch size."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class BuffersConstants(torch.nn.Module):
    """Batch norm (float and int64 buffers), a non-persistent buffer and a lifted constant."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.linspace(-1, 1, 4))
            self.bn.running_var.copy_(torch.linspace(0.5, 2, 4))
            self.bn.num_batches_tracked.fill_(17)
        self.register_buffer("scale", torch.linspace(1, 2, 4).reshape(1, 4, 1, 1))
        self.register_buffer("shift", torch.full((1, 4, 1, 1), 0.25), persistent=False)
        self.offsets = torch.arange(4.0).reshape(1, 4, 1, 1)  # a plain attribute: a lifted constant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.conv(x)) * self.scale + self.shift + self.offsets


class Tied(torch.nn.Module):
    """An embedding whose weight is also the output projection's."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(11, 6)
        self.norm = torch.nn.LayerNorm(6)
        self.head = torch.nn.Linear(6, 11, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.embed(tokens)))


class Views(torch.nn.Module):
    """Parameters and a buffer that are views, at storage offsets, of shared storages."""

    def __init__(self) -> None:
        super().__init__()
        base = torch.randn(10, 4)
        self.first = torch.nn.Parameter(base[:3])
        self.rest = torch.nn.Parameter(base[3:])
        table = torch.randn(5, 6)
        self.register_buffer("window", table[1:4, 2:5])  # not contiguous, offset 8
        self.register_buffer("column", table[:, 1])  # stride 6, offset 1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x @ self.first.t() + (x @ self.rest.t()).sum(-1, keepdim=True)
        return y + self.window.sum() + self.column.sum()


class Subclass(torch.nn.Module):
    """A parameter that is a tensor subclass (torch's test `TwoTensor`): torch.export saves it
    as a `use_pickle` record, a `torch.save` file only torch can rebuild."""

    def __init__(self) -> None:
        super().__init__()
        from torch.testing._internal.two_tensor import TwoTensor

        self.pair = torch.nn.Parameter(TwoTensor(torch.linspace(0, 1, 3), torch.linspace(1, 2, 3)))
        self.bias = torch.nn.Parameter(torch.full((3,), 0.5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.pair + self.bias


class Transposed(torch.nn.Module):
    """Parameters stored transposed or permuted (not row-major)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight_t = torch.nn.Parameter(torch.randn(3, 5).t())
        self.cube = torch.nn.Parameter(torch.randn(2, 3, 4).permute(2, 0, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight_t + self.cube.sum()


# The dtypes every fixture of dtypes holds (torch.export keeps all of them as buffers).
DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.uint8,
    torch.bool,
    torch.complex64,
    torch.float8_e4m3fn,
    torch.float8_e5m2,
]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_tensor(dtype: torch.dtype, shape=(2, 3)) -> torch.Tensor:
    g = torch.Generator().manual_seed(len(dtype_name(dtype)) * 31 + 7)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point or dtype.is_complex:
        return (torch.randn(shape, generator=g, dtype=torch.float32) * 10).to(dtype)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, shape, generator=g, dtype=torch.int64).to(dtype)


class Dtypes(torch.nn.Module):
    """A buffer of every dtype."""

    def __init__(self) -> None:
        super().__init__()
        for dtype in DTYPES:
            self.register_buffer(f"t_{dtype_name(dtype)}", dtype_tensor(dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x
        for dtype in DTYPES:
            t = getattr(self, f"t_{dtype_name(dtype)}")
            if dtype.is_complex:
                t = t.real
            elif not dtype.is_floating_point and dtype != torch.bool:
                t = t.to(torch.int64) % 97  # full-range integers would drown the rest
            out = out + t.to(torch.float32).sum()
        return out


class Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.proj(x))


class Decoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(5, 8)
        self.register_buffer("bias2", torch.linspace(0, 1, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) + self.bias2


def mobilenet() -> torch.nn.Module:
    import torchvision

    model = torchvision.models.mobilenet_v2(width_mult=0.35, num_classes=10)
    # Non-trivial batch norm statistics, so that a wrong buffer shows in the outputs.
    g = torch.Generator().manual_seed(11)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
    return model


MODELS = {
    "plain": (Plain, [(2, 8)]),
    "buffers_constants": (BuffersConstants, [(1, 3, 6, 6)]),
    "tied": (Tied, None),
    "views": (Views, [(2, 4)]),
    "transposed": (Transposed, [(2, 5)]),
    "subclass": (Subclass, [(3,)]),
    "dtypes": (Dtypes, [(2,)]),
    "encoder": (Encoder, [(2, 8)]),
    "decoder": (Decoder, [(2, 5)]),
    "mobilenet_v2": (mobilenet, [(1, 3, 64, 64)]),
}


def build(model: str) -> torch.nn.Module:
    """The fixture model `model` in eval mode, built with the fixed seed."""
    torch.manual_seed(MODEL_SEED)
    return MODELS[model][0]().eval()


def example_inputs(model: str) -> tuple:
    """The inputs a model is exported and checked with."""
    g = torch.Generator().manual_seed(INPUT_SEED)
    if model == "tied":
        return (torch.randint(0, 11, (2, 5), generator=g),)
    return tuple(torch.randn(shape, generator=g) for shape in MODELS[model][1])


def export(model: str) -> torch.export.ExportedProgram:
    module = build(model)
    dynamic = None
    if model == "plain":
        dynamic = {"x": {0: torch.export.Dim("batch", min=1, max=64)}}
    return torch.export.export(module, example_inputs(model), dynamic_shapes=dynamic)


# --- records ------------------------------------------------------------------------------


def tensor_bytes(t: torch.Tensor) -> bytes:
    """The contiguous row-major bytes of `t`."""
    flat = t.detach().cpu().contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def tensor_record(name: str, t: torch.Tensor, source: str | None = None) -> dict:
    record = {
        "name": name,
        "dtype": dtype_name(t.dtype),
        "shape": [int(d) for d in t.shape],
        "layout": "dense",
        "sha256": hashlib.sha256(tensor_bytes(t)).hexdigest(),
    }
    if source is not None:
        record["source"] = source
    return record


def program_records(ep: torch.export.ExportedProgram, prefix: str = "") -> list:
    """Every parameter, buffer and constant of `ep`, as `torch.export.load` gives them."""
    sig = ep.graph_signature
    kinds = {n: "parameter" for n in sig.parameters}
    kinds.update({n: "buffer" for n in sig.buffers})
    kinds.update({n: "constant" for n in sig.lifted_tensor_constants})
    records = []
    for name, t in [*ep.state_dict.items(), *ep.constants.items()]:
        if isinstance(t, torch.Tensor):
            records.append(tensor_record(prefix + name, t, kinds.get(name, "constant")))
    return records


def program_summary(ep: torch.export.ExportedProgram, name: str) -> dict:
    """What `tensorfile info` must show of a model: inputs and outputs, weight counts,
    operator counts, symbolic ranges."""
    sig = ep.graph_signature
    nodes = {n.name: n for n in ep.graph.nodes}

    def value(node_name: str) -> dict:
        meta = nodes[node_name].meta.get("val")
        return {"dtype": dtype_name(meta.dtype), "shape": [str(d) if not isinstance(d, int) else d for d in meta.shape]}

    outputs = [o.arg.name for o in sig.output_specs if o.kind.name == "USER_OUTPUT"]
    operators: dict = {}
    for n in ep.graph.nodes:
        if n.op == "call_function":
            key = f"torch.ops.{n.target}"
            operators[key] = operators.get(key, 0) + 1
    ranges = {str(k): {"min": int(v.lower), "max": int(v.upper)} for k, v in ep.range_constraints.items()}
    return {
        "name": name,
        "inputs": [value(n) for n in sig.user_inputs],
        "outputs": [value(n) for n in outputs],
        "parameters": len(sig.parameters),
        "buffers": len(sig.buffers),
        "constants": len(sig.lifted_tensor_constants),
        "operators": dict(sorted(operators.items())),
        "range_constraints": ranges,
    }


def write_record(path: Path, tensors: list, **extra) -> None:
    from .common import pretty_json

    record = {"producer": PRODUCER, "file": path.name, "tensors": tensors, **extra}
    path.with_name(path.name + ".expected.json").write_text(pretty_json(record) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


def flatten(value, prefix: str = "") -> list:
    """The tensors of a `torch.save` value with tensorfile's dotted names."""
    if isinstance(value, torch.Tensor):
        return [(prefix or "tensor", value)]
    out = []
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return out
    for k, v in items:
        out.extend(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


# --- .pt2 ---------------------------------------------------------------------------------


def save_exported(out: Path, model: str) -> None:
    path = out / f"{model}.pt2"
    torch.export.save(export(model), str(path))
    ep = torch.export.load(str(path))
    write_record(path, program_records(ep), models=[program_summary(ep, "model")])


def save_subclass(out: Path) -> None:
    """The subclass parameter is listed as unreadable, with what its config says of it and
    the global its pickle needs."""
    path = out / "subclass.pt2"
    torch.export.save(export("subclass"), str(path))
    ep = torch.export.load(str(path))
    records = [tensor_record(n, t, "parameter") for n, t in ep.state_dict.items() if type(t) is torch.nn.Parameter]
    unreadable = [
        {"name": n, "dtype": dtype_name(t.dtype), "shape": list(t.shape), "refused_global": "_rebuild_wrapper_subclass"}
        for n, t in ep.state_dict.items()
        if type(t) is not torch.nn.Parameter
    ]
    write_record(path, records, unreadable=unreadable, models=[program_summary(ep, "model")])


def save_multi(out: Path) -> None:
    from torch.export.pt2_archive._package import load_pt2, package_pt2

    path = out / "multi.pt2"
    package_pt2(str(path), exported_programs={"encoder": export("encoder"), "decoder": export("decoder")})
    loaded = load_pt2(str(path))
    records, summaries = [], []
    for name in sorted(loaded.exported_programs):
        ep = loaded.exported_programs[name]
        records.extend(program_records(ep, prefix=f"{name}/"))
        summaries.append(program_summary(ep, name))
    write_record(path, records, models=summaries)


def save_aoti(out: Path) -> None:
    """An AOTInductor CPU package with its weights stored on disk (`pickle_weights`); the
    record reads them back as `load_pt2(load_weights_from_disk=True)` does."""
    path = out / "aoti_cpu.pt2"
    configs = {
        "aot_inductor.package_constants_in_so": False,
        "aot_inductor.package_constants_on_disk_format": "pickle_weights",
    }
    torch._inductor.aoti_compile_and_package(export("plain"), package_path=str(path), inductor_configs=configs)
    records = []
    with zipfile.ZipFile(path) as z:
        root = z.namelist()[0].split("/")[0]
        config = json.loads(z.read(f"{root}/data/aotinductor/model/weights_config.json"))
        for fqn, (record, shape, stride, offset) in config.items():
            saved = torch.load(io.BytesIO(z.read(f"{root}/data/weights/{record}")), weights_only=True)
            records.append(tensor_record(fqn, saved.as_strided(shape, stride, offset), "weight"))
    # The package must run: the compiled model with its on-disk weights equals eager.
    from torch.export.pt2_archive._package import load_pt2

    runner = load_pt2(str(path), load_weights_from_disk=True).aoti_runners["model"]
    inputs = example_inputs("plain")
    torch.testing.assert_close(runner(*inputs), build("plain")(*inputs))
    write_record(path, records)


# --- torch.save ---------------------------------------------------------------------------


def checkpoint() -> dict:
    """A training checkpoint: model, optimizer state after one step, and plain values."""
    model = build("buffers_constants")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model.train()
    model(example_inputs("buffers_constants")[0]).sum().backward()
    optimizer.step()
    return {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": 3,
        "best": 0.125,
        "tags": ["fixture", None, True],
        "extra": (torch.arange(5, dtype=torch.int16), {"nested": torch.ones(2, 2, dtype=torch.float16)}),
    }


def save_torch(out: Path, name: str, value, **save_args) -> None:
    path = out / name
    torch.save(value, path, **save_args)
    loaded = torch.load(path, weights_only=True)
    write_record(path, [tensor_record(n, t) for n, t in flatten(loaded)])


def save_pre_1_0(out: Path) -> None:
    """A `torch.save` file as PyTorch before 1.0 wrote it: the format before 1.6 (not a zip),
    each tensor rebuilt by `torch._utils._rebuild_tensor(storage, storage_offset, size,
    stride)`, which torch's weights-only loader still allows. Today's torch reduces tensors with
    `_rebuild_tensor_v2`; its reducer is swapped for the old one while saving."""
    def old_reduce(self, protocol):
        storage = torch.storage.TypedStorage(
            wrap_storage=self._typed_storage()._untyped_storage, dtype=self.dtype, _internal=True
        )
        return (torch._utils._rebuild_tensor, (storage, self.storage_offset(), tuple(self.size()), self.stride()))

    w = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 4
    value = {"weight": w, "weight_t": w.t(), "row": w[1], "ids": torch.tensor([5, -2, 7], dtype=torch.int64)}
    reduce = torch.Tensor.__reduce_ex__
    torch.Tensor.__reduce_ex__ = old_reduce
    try:
        path = out / "pre_1_0_rebuild_tensor.pt"
        torch.save(value, path, _use_new_zipfile_serialization=False)
    finally:
        torch.Tensor.__reduce_ex__ = reduce
    # Storage keys are memory addresses (decimal text): renumbered, at the same length, so that
    # a second run gives the same file.
    data = path.read_bytes()
    keys = dict.fromkeys(m.group(2) for m in re.finditer(rb"X(.)\x00\x00\x00(\d{6,24})", data, re.S) if m.group(1)[0] == len(m.group(2)))
    for i, key in enumerate(keys):
        data = data.replace(key, str(i).zfill(len(key)).encode())
    path.write_bytes(data)
    assert b"_rebuild_tensor\n" in data and b"_rebuild_tensor_v2" not in data
    loaded = torch.load(path, weights_only=True)
    write_record(path, [tensor_record(n, t) for n, t in flatten(loaded)])


def save_hostile(out: Path) -> None:
    """Files a weights-only reader must refuse, each naming the global it refused."""
    hostile = out / "hostile"
    hostile.mkdir()

    class Shell:
        def __reduce__(self):
            return (os.system, ("echo this must never run",))

    def refused(path: Path, global_name: str) -> None:
        try:
            torch.load(path, weights_only=True)
        except Exception:  # torch refuses it too: the record says which global
            record = {"producer": PRODUCER, "file": path.name, "refused_global": global_name}
            from .common import pretty_json

            path.with_name(path.name + ".expected.json").write_text(pretty_json(record) + "\n")
            print(f"wrote {path}", flush=True)
            return
        raise AssertionError(f"torch.load(weights_only=True) accepted {path}")

    torch.save({"weight": torch.ones(2), "payload": Shell()}, hostile / "os_system.pt")
    refused(hostile / "os_system.pt", f"{os.system.__module__}.system")
    # A whole module pickled (torch.save(model)) rather than its state_dict.
    torch.save(build("plain"), hostile / "whole_module.pt")
    refused(hostile / "whole_module.pt", f"{Plain.__module__}.Plain")


# --- zips written by other tools --------------------------------------------------------


class Unseekable(io.RawIOBase):
    """A file that cannot seek, so that `zipfile` writes data descriptors after entries."""

    def __init__(self, f) -> None:
        self.f = f

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        return self.f.write(b)


def rewrite_zip(source: Path, dest: Path, compression: int, force_zip64: bool = False, stream: bool = False) -> None:
    """`source` re-zipped entry by entry by Python's `zipfile`, as tools that edit archives do."""
    with zipfile.ZipFile(source) as zin, open(dest, "wb") as f:
        with zipfile.ZipFile(Unseekable(f) if stream else f, "w", compression=compression) as zout:
            for info in zin.infolist():
                entry = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
                entry.compress_type = compression
                with zout.open(entry, "w", force_zip64=force_zip64) as w:
                    w.write(zin.read(info.filename))


def save_rewritten(out: Path) -> None:
    """Archives rewritten by `zipfile`: deflated, with zip64 local headers, streamed with data
    descriptors; each recorded as torch's loaders read it."""
    folder = out / "zip"
    folder.mkdir()
    deflated = folder / "deflated.pt2"
    rewrite_zip(out / "views.pt2", deflated, zipfile.ZIP_DEFLATED)
    ep = torch.export.load(str(deflated))
    write_record(deflated, program_records(ep))
    for name, kwargs in [
        ("deflated.pt", {"compression": zipfile.ZIP_DEFLATED}),
        ("zip64_local_headers.pt", {"compression": zipfile.ZIP_STORED, "force_zip64": True}),
        ("streamed.pt", {"compression": zipfile.ZIP_DEFLATED, "stream": True}),
    ]:
        dest = folder / name
        rewrite_zip(out / "checkpoint.pt", dest, **kwargs)
        write_record(dest, [tensor_record(n, t) for n, t in flatten(torch.load(dest, weights_only=True))])


# --- entry points -------------------------------------------------------------------------


def generate(out: Path) -> None:
    warnings.filterwarnings("ignore")
    for model in ["plain", "buffers_constants", "tied", "views", "transposed", "dtypes", "mobilenet_v2"]:
        save_exported(out, model)
    save_subclass(out)
    save_multi(out)
    save_aoti(out)
    save_torch(out, "state_dict.pt", build("views").state_dict())
    save_torch(out, "checkpoint.pt", checkpoint())
    save_torch(out, "dtypes.pt", {dtype_name(d): dtype_tensor(d) for d in DTYPES})
    save_torch(out, "legacy_format.pt", build("transposed").state_dict(), _use_new_zipfile_serialization=False)
    save_torch(out, "bare_tensor.pt", torch.arange(12, dtype=torch.int32).reshape(3, 4)[:, 1:])
    save_pre_1_0(out)
    save_rewritten(out)
    save_hostile(out)
    from . import torchscript

    torchscript.generate(out / "torchscript")


def generate_torch28(out: Path) -> None:
    """The torch 2.8 layout: weights and constants as `torch.save` files in the archive."""
    warnings.filterwarnings("ignore")
    for model in ["plain", "buffers_constants", "tied", "views", "transposed"]:
        save_exported(out, model)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "torch28":
        sys.exit("usage: python -m fixturegen.pytorch torch28 OUT")
    generate_torch28(Path(sys.argv[2]))
