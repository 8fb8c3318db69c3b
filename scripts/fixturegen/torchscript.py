"""TorchScript fixtures (`tests/fixtures/pytorch/torchscript/`): small modules scripted or
traced and written by `torch.jit.save`, each with a record of what
`torch.jit.load(path).state_dict()` gives (names, dtypes, shapes, sha256 of the contiguous
row-major bytes, in the record format of the `torch.save` fixtures), the code files of the
archive, its `constants/` records, and the tensors reachable from the module that the state
dict leaves out (plain tensor attributes, tensors inside other attributes).

The archives are named `.pt` (as TorchScript archives often are; tensorfile tells them from
`torch.save` files by their content, never by name). Archives broken one way each are made from
these by crates/tensorfile/tests/library/torchscript.rs.

Run by `fixturegen.pytorch.generate` (the PyTorch fixtures' folder is made afresh).
"""

import hashlib
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path
from typing import Dict

import torch

from .pytorch import rewrite_zip, tensor_record, write_record

SEED = 20250102


# --- the modules --------------------------------------------------------------------------


class Sub(torch.nn.Module):
    """A linear layer, a buffer, and a tensor attribute that is no buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.register_buffer("buf", torch.arange(4.0))
        self.attr = torch.ones(2)  # a plain attribute: not in the state dict

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + self.attr.sum() + self.buf.sum()


class Nested(torch.nn.Module):
    """A nested submodule, a ModuleList whose two layers share a weight, batch norm (an int64
    buffer of shape [])."""

    def __init__(self) -> None:
        super().__init__()
        self.sub = Sub()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(2)])
        self.layers[1].weight = self.layers[0].weight
        self.bn = torch.nn.BatchNorm1d(2)
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.tensor([0.5, -0.25]))
            self.bn.num_batches_tracked.fill_(9)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.sub(x)
        for layer in self.layers:
            y = layer(y)
        return self.bn(y)


@torch.jit.script
class Holder:
    def __init__(self, t: torch.Tensor) -> None:
        self.t = t


class Containers(torch.nn.Module):
    """A linear layer without bias (an unset parameter), a non-persistent buffer and an unset
    buffer, a Dict[str, Tensor] attribute, an object of a scripted class, Sequential,
    ModuleDict and ParameterList."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 2, bias=False)
        self.register_buffer("transient", torch.linspace(0, 1, 3), persistent=False)
        self.register_buffer("unset", None)
        self.table: Dict[str, torch.Tensor] = {"a": torch.zeros(2)}
        self.holder = Holder(torch.full((2,), 7.0))
        self.seq = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(3, 3))
        self.md = torch.nn.ModuleDict({"x": torch.nn.Linear(1, 1)})
        self.pl = torch.nn.ParameterList([torch.nn.Parameter(torch.linspace(-1, 1, 2))])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x) + self.transient.sum() + self.table["a"].sum() + self.holder.t.sum()
        return y + self.seq(torch.zeros(3)).sum() + self.md["x"](torch.zeros(1)).sum() + self.pl[0].sum()


class Traced(torch.nn.Module):
    """Traced: its tensor attribute and a literal tensor become constants (`constants/`)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.k = torch.arange(2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) + self.k + torch.tensor([3.0, 4.0])


DTYPES = [
    torch.float16,
    torch.bfloat16,
    torch.float64,
    torch.int8,
    torch.int32,
    torch.uint8,
    torch.bool,
    torch.complex64,
]


class DtypesViews(torch.nn.Module):
    """Buffers of several dtypes, a parameter stored transposed, and two parameters that are
    views of one storage at offsets."""

    def __init__(self) -> None:
        super().__init__()
        from .pytorch import dtype_name, dtype_tensor

        for dtype in DTYPES:
            self.register_buffer(f"t_{dtype_name(dtype)}", dtype_tensor(dtype))
        self.weight_t = torch.nn.Parameter(torch.randn(3, 5).t())
        base = torch.randn(10, 4)
        self.first = torch.nn.Parameter(base[:3])
        self.rest = torch.nn.Parameter(base[3:])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight_t + self.first.sum() + self.rest.sum()


# --- records ------------------------------------------------------------------------------


def archive_facts(path: Path) -> dict:
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
    root = names[0].split("/")[0] + "/"
    rel = [n[len(root):] for n in names]
    return {
        "code": [n for n in rel if n.startswith("code/") and n.endswith(".py")],
        "constants": sum(1 for n in rel if n.startswith("constants/")),
    }


def record(path: Path, other_tensors: list) -> None:
    """What `torch.jit.load` gives of `path`: its state dict, in order."""
    loaded = torch.jit.load(str(path))
    tensors = [tensor_record(n, t) for n, t in loaded.state_dict().items()]
    write_record(path, tensors, other_tensors=other_tensors, **archive_facts(path))


def strip_debug(path: Path) -> None:
    """`path` written again by torch's own archive writer without its `.debug_pkl` records
    (source ranges naming the absolute paths of this script and of torch's sources, which
    would make the fixtures depend on where they are made; `torch.jit.load` does not need
    them). The writer lays records out as `torch.jit.save` does, all stored."""
    with zipfile.ZipFile(path) as z:
        root = z.namelist()[0].split("/")[0] + "/"
        records = [(i.filename[len(root):], z.read(i.filename)) for i in z.infolist()]
    writer = torch._C.PyTorchFileWriter(str(path))
    for name, data in records:
        # The writer writes these itself.
        if not name.endswith(".debug_pkl") and name not in ("version", "byteorder", ".data/serialization_id"):
            writer.write_record(name, data, len(data))
    writer.write_end_of_file()


def save(out: Path, name: str, module: torch.jit.ScriptModule, other_tensors: list) -> Path:
    path = out / name
    torch.jit.save(module, str(path))
    strip_debug(path)
    record(path, other_tensors)
    return path


def scripted(cls) -> torch.jit.ScriptModule:
    torch.manual_seed(SEED)
    return torch.jit.script(cls().eval())


# --- entry point --------------------------------------------------------------------------


def generate(out: Path) -> None:
    """The fixtures, written into `out` (made here) by a Python whose string hashing is fixed:
    TorchScript prints a class's `Final` constants in the order of a set of names."""
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        subprocess.run([sys.executable, "-m", "fixturegen.torchscript", str(out)], check=True, env=env)
        return
    warnings.filterwarnings("ignore")
    out.mkdir()
    nested = save(out, "nested.pt", scripted(Nested), ["sub.attr"])
    save(out, "containers.pt", scripted(Containers), ["table.a", "holder.t"])
    torch.manual_seed(SEED)
    traced = torch.jit.trace(Traced().eval(), torch.zeros(2))
    save(out, "traced.pt", traced, [])
    save(out, "dtypes_views.pt", scripted(DtypesViews), [])
    deflated = out / "deflated.pt"
    rewrite_zip(nested, deflated, zipfile.ZIP_DEFLATED)
    record(deflated, ["sub.attr"])
    # The Rust test takes `data/2` away from nested.pt: the storage of `sub.lin.weight`.
    with zipfile.ZipFile(nested) as z:
        root = z.namelist()[0].split("/")[0]
        weight = dict(torch.jit.load(str(nested)).state_dict())["sub.lin.weight"]
        assert hashlib.sha256(z.read(f"{root}/data/2")).hexdigest() == tensor_record("w", weight)["sha256"]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m fixturegen.torchscript OUT")
    generate(Path(sys.argv[1]))
