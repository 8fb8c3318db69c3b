"""transformers on `tensorfile.safetensors` (the package's drop-in for `safetensors`): a tiny
Llama saved with `save_pretrained` and loaded with `from_pretrained` gives the same weights,
trains a step, and the file is the one the real safetensors writes of the same state dict.

Needs torch, transformers (4.57.6 tested), the tensorfile package and the real safetensors
(to compare with); skipped where any is missing, as in CI's light environment. safetensors'
own tests against the drop-in: scripts/safetensors-suite (run by scripts/interop).
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: these tests need the full environment")
pytest.importorskip("transformers", reason="transformers is not installed: these tests need the full environment")
pytest.importorskip("tensorfile.safetensors", reason="the tensorfile package is not installed")
real = pytest.importorskip("safetensors.torch", reason="safetensors is not installed")

WORKER = Path(__file__).resolve().parent / "transformers_dropin.py"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple:
    folder = tmp_path_factory.mktemp("tiny-llama")
    done = subprocess.run([sys.executable, str(WORKER), str(folder)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return folder, json.loads(done.stdout.strip().splitlines()[-1])


def test_transformers_runs_on_the_drop_in_alone(run):
    _, seen = run
    assert seen["safetensors"] == "tensorfile.safetensors"
    assert seen["real_safetensors_modules"] == []
    assert "model.safetensors" in seen["files"]


def test_from_pretrained_gives_the_weights_save_pretrained_saved(run):
    _, seen = run
    assert seen["same"] and all(seen["same"].values()), seen["same"]


def test_the_loaded_model_trains_without_touching_the_file(run):
    _, seen = run
    assert seen["loss"] == seen["loss"]  # not NaN
    # AdamW's first step moves every parameter that has a gradient: all of a causal LM's.
    assert sorted(seen["changed"]) == sorted(seen["parameters"])
    assert seen["file_unchanged"]


def test_the_file_is_the_one_the_real_safetensors_writes(run, tmp_path):
    folder, _ = run
    expected = torch.load(folder / "expected.pt", weights_only=True)
    ours = folder / "model.safetensors"
    theirs = tmp_path / "theirs.safetensors"
    real.save_file({k: v.contiguous() for k, v in expected.items()}, theirs, metadata={"format": "pt"})
    assert ours.read_bytes() == theirs.read_bytes()
    loaded = real.load_file(ours)
    assert loaded.keys() == expected.keys()
    assert all(torch.equal(loaded[k], expected[k]) for k in expected)
