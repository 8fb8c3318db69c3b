"""Sharded checkpoints written by huggingface_hub's `save_torch_state_dict`: safetensors shards
`model-0000K-of-0000N.safetensors` and their index `model.safetensors.index.json` (its
`weight_map` of tensor -> shard file). The record is what huggingface_hub's own loader
(`load_state_dict_from_file`, one shard at a time) reads back, and is written beside the index
as `model.safetensors.index.json.expected.json`.

The model is the PyTorch fixtures' MobileNetV2 (`fixturegen.pytorch.build("mobilenet_v2")`:
width 0.35, 10 classes, fixed seed, BatchNorm statistics randomized), 1.7 MB of weights, so
that `max_shard_size="400KB"` makes a handful of shards (one of them holding a single tensor
larger than that limit).

`scripts/fixtures` runs it in full mode; alone, from the repository root, in the tools'
environment: `PYTHONPATH=scripts python -m fixturegen.sharded tests/fixtures/sharded`.
"""

import json
import sys
from pathlib import Path

import huggingface_hub
import safetensors
import torch
from huggingface_hub import load_state_dict_from_file, save_torch_state_dict
from safetensors import safe_open

from . import pytorch as models
from .common import dense_record, pretty_json

PRODUCER = (
    f"huggingface_hub {huggingface_hub.__version__} + safetensors {safetensors.__version__}"
    f" + torch {models.version(torch.__version__)}"
)
MAX_SHARD_SIZE = "400KB"
INDEX = "model.safetensors.index.json"


def generate(out: Path) -> None:
    folder = out / "mobilenet"
    folder.mkdir(parents=True, exist_ok=True)
    state_dict = models.build("mobilenet_v2").state_dict()
    save_torch_state_dict(state_dict, str(folder), max_shard_size=MAX_SHARD_SIZE)
    index = json.loads((folder / INDEX).read_text(encoding="utf-8"))
    shards = sorted(set(index["weight_map"].values()))
    tensors = []
    for shard in shards:
        loaded = load_state_dict_from_file(str(folder / shard))
        for name in offset_order(folder / shard):
            tensor = loaded[name]
            if not torch.equal(tensor, state_dict[name]):
                raise AssertionError(f"{shard}: {name} does not load as it was saved")
            dtype = str(tensor.dtype).removeprefix("torch.")
            record = dense_record(name, dtype, tensor.shape, models.tensor_bytes(tensor))
            tensors.append({**record, "shard": shard})
    if sorted(t["name"] for t in tensors) != sorted(state_dict):
        raise AssertionError("the shards do not hold the state dict")
    record = {
        "producer": PRODUCER,
        "file": INDEX,
        "max_shard_size": MAX_SHARD_SIZE,
        "shards": shards,
        "tensors": tensors,
        "metadata": index["metadata"],
    }
    path = folder / f"{INDEX}.expected.json"
    path.write_text(pretty_json(record) + "\n", encoding="utf-8")
    print(f"wrote {path} ({len(shards)} shards)", flush=True)


def offset_order(path: Path) -> list:
    """The tensors of a safetensors file in data order (the order its bytes are stored in)."""
    with safe_open(str(path), framework="pt") as f:
        return list(f.offset_keys())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m fixturegen.sharded OUT")
    generate(Path(sys.argv[1]))
