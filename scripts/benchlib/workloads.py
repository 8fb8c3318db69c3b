"""The benchmark's workloads, made here (nothing downloaded) into a cache folder outside the
repository and reused while their recipe stays the same:

  llama-1b    Llama-3.2-1B's tensor shapes in bf16 (about 2.5 GB; --quick: 2 layers and a
              32,000-word vocabulary, about 0.3 GB), normal(0, 0.02) values
  many-small  50,000 tensors of 1-16 KiB (--quick: 5,000)
  mobilenet   torchvision mobilenet_v2 exported as .pt2 (torch.export), .pte and .pte + .ptd
              (executorch, constants in the program / external); --quick uses the committed
              width-0.35 fixtures instead

Each of the first two is written as safetensors (pip safetensors) and converted by tensorfile
into .zt (raw and zstd), .pt and .ptd; llama-1b also as .pt2 (torch.export.save of a module
holding the weights).
"""

import json
import shutil
import sys
import subprocess
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def llama_shapes(quick: bool) -> list:
    hidden, inter, kv, vocab, layers = 2048, 8192, 512, 128256, 16
    if quick:
        vocab, layers = 32000, 2
    shapes = [("model.embed_tokens.weight", (vocab, hidden))]
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes += [
            (p + "input_layernorm.weight", (hidden,)),
            (p + "self_attn.q_proj.weight", (hidden, hidden)),
            (p + "self_attn.k_proj.weight", (kv, hidden)),
            (p + "self_attn.v_proj.weight", (kv, hidden)),
            (p + "self_attn.o_proj.weight", (hidden, hidden)),
            (p + "post_attention_layernorm.weight", (hidden,)),
            (p + "mlp.gate_proj.weight", (inter, hidden)),
            (p + "mlp.up_proj.weight", (inter, hidden)),
            (p + "mlp.down_proj.weight", (hidden, inter)),
        ]
    shapes.append(("model.norm.weight", (hidden,)))
    return shapes


def bf16_normal(rng, shape) -> np.ndarray:
    """normal(0, 0.02) as bfloat16 (the high half of each float32)."""
    values = (rng.standard_normal(shape, dtype=np.float32) * 0.02).view(np.uint32)
    return (values >> 16).astype(np.uint16)


def write_safetensors_bf16(path: Path, tensors) -> None:
    """A safetensors file of bf16 tensors given as uint16 arrays, streamed by hand (the
    format is a JSON header and the bytes in order), so that 2.5 GB never sit in memory."""
    header, offset = {}, 0
    items = list(tensors)
    for name, shape, _ in items:
        n = int(np.prod(shape)) * 2
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for _, shape, make in items:
            f.write(make().tobytes())


def small_shapes(count: int) -> list:
    rng = np.random.default_rng(1)
    out = []
    for i in range(count):
        nbytes = int(rng.integers(1024, 16 * 1024 + 1)) // 4 * 4
        out.append((f"block.{i // 100}.param.{i % 100}", (nbytes // 4,)))
    return out


def derived(tensorfile_bin: Path, source: Path, formats: list) -> dict:
    files = {"safetensors": source}
    for fmt in formats:
        out = source.with_name(f"{source.stem}{'.zstd' if fmt == 'zt-zstd' else ''}.{fmt.split('-')[0]}")
        if not out.exists():
            extra = ["--compress", "zstd", "--checksum", "none"] if fmt == "zt-zstd" else (
                ["--checksum", "none"] if fmt == "zt" else [])
            subprocess.run([str(tensorfile_bin), "convert", str(source), str(out), *extra], check=True,
                           stdout=subprocess.DEVNULL)
        files[fmt] = out
    return files


def llama_safetensors(folder: Path, quick: bool) -> Path:
    """llama-1b as safetensors in `folder`, made if it is not there."""
    llama = folder / "llama-1b.safetensors"
    if not llama.exists():
        rng = np.random.default_rng(0)
        shapes = llama_shapes(quick)
        tmp = llama.with_suffix(".tmp")
        write_safetensors_bf16(tmp, [(n, s, (lambda s=s: bf16_normal(rng, s))) for n, s in shapes])
        tmp.rename(llama)
    return llama


def llama_only(cache: Path, quick: bool) -> dict:
    """{"llama-1b.safetensors": its path}, made in the cache if it is not there: the file of
    the parts that measure one workload."""
    folder = cache / ("quick" if quick else "full")
    folder.mkdir(parents=True, exist_ok=True)
    return {"llama-1b.safetensors": llama_safetensors(folder, quick)}


def make(cache: Path, tensorfile_bin: Path, quick: bool) -> dict:
    """workload -> {format label -> path}."""
    tag = "quick" if quick else "full"
    folder = cache / tag
    folder.mkdir(parents=True, exist_ok=True)
    out = {}

    llama = llama_safetensors(folder, quick)
    out["llama-1b"] = derived(tensorfile_bin, llama, ["zt", "zt-zstd", "pt", "ptd"])
    pt2 = folder / "llama-1b.pt2"
    if not pt2.exists():
        export_weights_pt2(llama, pt2)
    out["llama-1b"]["pt2"] = pt2

    small = folder / "many-small.safetensors"
    if not small.exists():
        from safetensors.numpy import save_file

        rng = np.random.default_rng(2)
        shapes = small_shapes(5_000 if quick else 50_000)
        save_file({n: rng.standard_normal(s, dtype=np.float32) for n, s in shapes}, str(small))
    out["many-small"] = derived(tensorfile_bin, small, ["zt", "pt", "ptd"])

    if quick:
        fixtures = ROOT / "tests" / "fixtures"
        out["mobilenet"] = {
            "pt2": fixtures / "pytorch" / "mobilenet_v2.pt2",
            "pte": fixtures / "executorch" / "mobilenet_v2.pte",
        }
    else:
        out["mobilenet"] = mobilenet(folder)
    return out


def export_weights_pt2(source: Path, dest: Path) -> None:
    """torch.export.save of a module whose parameters are the checkpoint's tensors."""
    import torch
    from safetensors.torch import load_file

    weights = load_file(str(source))

    class Holder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for i, (name, t) in enumerate(weights.items()):
                self.register_parameter(f"p{i}", torch.nn.Parameter(t, requires_grad=False))
            self.names = list(weights)

        def forward(self, x):
            return x + self.p0[0, 0].float()

    module = Holder()
    ep = torch.export.export(module, (torch.zeros(1),), strict=False)
    tmp = dest.with_name(dest.stem + ".partial.pt2")
    torch.export.save(ep, str(tmp))
    tmp.rename(dest)


def mobilenet(folder: Path) -> dict:
    files = {"pt2": folder / "mobilenet.pt2", "pte": folder / "mobilenet.pte",
             "pte+ptd": folder / "mobilenet_external.pte"}
    if all(p.exists() for p in files.values()) and (folder / "mobilenet_external.ptd").exists():
        return files
    import torch

    try:
        import torchvision
        from executorch.exir import ExecutorchBackendConfig, to_edge
    except ImportError as e:
        # Made once by the environment scripts/fixtures sets up in full; without it the
        # run goes on and says that mobilenet was not measured.
        print(f"bench: mobilenet not made ({e}): its rows are left out of this run", file=sys.stderr)
        return {}

    torch.manual_seed(0)
    model = torchvision.models.mobilenet_v2().eval()
    x = (torch.randn(1, 3, 224, 224),)
    ep = torch.export.export(model, x)
    torch.export.save(ep, str(files["pt2"]))
    files["pte"].write_bytes(to_edge(ep).to_executorch().buffer)
    program = to_edge(torch.export.export(model, x)).to_executorch(ExecutorchBackendConfig(external_constants=True))
    files["pte+ptd"].write_bytes(program.buffer)
    data_dir = folder / "mobilenet_data"
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir()
    program.write_tensor_data_to_file(str(data_dir))
    ptd = next(data_dir.glob("*.ptd"))
    ptd.rename(folder / "mobilenet_external.ptd")
    shutil.rmtree(data_dir, ignore_errors=True)
    return files
