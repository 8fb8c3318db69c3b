"""Interop of sharded checkpoints with huggingface_hub: the shards and index that
`tensorfile convert --max-shard-size` writes load, through huggingface_hub's own loaders
(`load_torch_model`, which follows the index, and `load_state_dict_from_file`, one shard at a
time), into exactly the weights of the model they came from, as safetensors and as
`pytorch_model-0000K-of-0000N.bin` shards; and the set huggingface_hub wrote (the committed
fixture, tests/fixtures/sharded/) reads through tensorfile as huggingface_hub recorded it.

Needs torch, torchvision and huggingface_hub (the full environment: `scripts/interop --full`);
skipped elsewhere.
"""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed: these tests need the full environment")
pytest.importorskip("torchvision", reason="torchvision is not installed: these tests need the full environment")
pytest.importorskip("huggingface_hub", reason="huggingface_hub is not installed: these tests need the full environment")

import torch  # noqa: E402
from huggingface_hub import load_state_dict_from_file, load_torch_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "sharded" / "mobilenet"

sys.path.insert(0, str(ROOT / "scripts"))
from fixturegen import pytorch as models  # noqa: E402

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

pytestmark = pytest.mark.filterwarnings("ignore")


def ok(*args) -> str:
    done = subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"tensorfile {' '.join(map(str, args))}: exit {done.returncode}\n{done.stderr}"
    return done.stdout


def original_weights(tmp_path: Path) -> tuple[dict, Path]:
    """The fixture model's state dict, and a `torch.save` file of it to convert from."""
    state_dict = models.build("mobilenet_v2").state_dict()
    path = tmp_path / "state_dict.pt"
    torch.save(state_dict, path)
    return state_dict, path


def assert_loads_into_the_model(folder: Path, state_dict: dict, safe: bool) -> None:
    fresh = models.mobilenet()  # other random weights, until the checkpoint is loaded
    assert not all(torch.equal(t, state_dict[k]) for k, t in fresh.state_dict().items())
    load_torch_model(fresh, folder, strict=True, safe=safe)
    loaded = fresh.state_dict()
    assert sorted(loaded) == sorted(state_dict)
    for name, tensor in loaded.items():
        assert torch.equal(tensor, state_dict[name]), name


@pytest.mark.parametrize("target", ["model.safetensors", "pytorch_model.bin"])
def test_our_shards_load_in_huggingface_hub(tmp_path, target):
    state_dict, src = original_weights(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    ok("convert", src, out / target, "--max-shard-size", "300KB")
    index = json.loads((out / f"{target}.index.json").read_text(encoding="utf-8"))
    total = sum(t.numel() * t.element_size() for t in state_dict.values())
    assert index["metadata"] == {"total_size": total}
    assert sorted(index["weight_map"]) == sorted(state_dict)
    shards = sorted(set(index["weight_map"].values()))
    stem, ext = target.split(".")
    assert shards == [f"{stem}-{k:05d}-of-{len(shards):05d}.{ext}" for k in range(1, len(shards) + 1)]
    assert len(shards) >= 5

    safe = target.endswith(".safetensors")  # the .bin shards are pickles, loaded weights-only
    assert_loads_into_the_model(out, state_dict, safe=safe)
    for shard in shards:
        part = load_state_dict_from_file(out / shard, safe=safe, weights_only=True)
        assert {index["weight_map"][name] for name in part} == {shard}
        size = sum(t.numel() * t.element_size() for t in part.values())
        assert size <= 300_000 or len(part) == 1, f"{shard}: {size} bytes"
        for name, tensor in part.items():
            assert torch.equal(tensor, state_dict[name]), name


def test_huggingface_hub_shards_read_and_convert_through_tensorfile(tmp_path):
    record = json.loads((FIXTURE / "model.safetensors.index.json.expected.json").read_text(encoding="utf-8"))
    rows = json.loads(ok("ls", "--json", FIXTURE / "model.safetensors.index.json"))
    assert [(r["name"], r["dtype"], r["shape"], Path(r["shard"]).name) for r in rows] == [
        (t["name"], t["dtype"], t["shape"], t["shard"]) for t in record["tensors"]
    ]
    ok("verify", "--deep", FIXTURE)
    # The whole set into one file that huggingface_hub loads into the model.
    out = tmp_path / "one"
    out.mkdir()
    ok("convert", FIXTURE / "model.safetensors.index.json", out / "model.safetensors")
    single = load_state_dict_from_file(out / "model.safetensors")
    for t in record["tensors"]:
        data = models.tensor_bytes(single[t["name"]])
        assert hashlib.sha256(data).hexdigest() == t["sha256"], t["name"]
    assert_loads_into_the_model(out, models.build("mobilenet_v2").state_dict(), safe=True)
