"""`convert(src, dst, include=, exclude=, rename=)`: tensors picked and renamed on the
sharded checkpoint huggingface_hub wrote (tests/fixtures/sharded/), a list of sources of
different formats merged, and the collisions and bad arguments refused. Written tensors are
compared byte for byte with the source's."""

import re

import pytest

import tensorfile
from conftest import FIXTURES

INDEX = FIXTURES / "sharded" / "mobilenet" / "model.safetensors.index.json"
PT = FIXTURES / "pytorch" / "checkpoint.pt"


def contents(path) -> dict:
    with tensorfile.open(path) as f:
        return {name: (f[name].dtype, list(f[name].shape), f[name].tobytes()) for name in f}


def test_globs_and_renames_on_a_sharded_checkpoint(tmp_path):
    source = contents(INDEX)
    # Worked out with Python's own re.sub(count=1), renames applied in order.
    renames = {r"^features\.(\d+)\.": r"blocks.\1.", r"conv\.(\d)": r"c\1"}
    kept = [n for n in source if re.fullmatch(r"features\.1\d\..*\.weight", n)]

    def renamed(name: str) -> str:
        for pattern, replacement in renames.items():
            name = re.sub(pattern, replacement, name, count=1)
        return name

    out = tmp_path / "model.safetensors"
    report = tensorfile.convert(
        INDEX,
        out,
        include="features.1?.*",
        exclude=["*.bias", "*running*", "*num_batches*"],
        rename={r"^features\.(\d+)\.": "blocks.$1.", r"conv\.(\d)": "c${1}"},
        max_shard_size="100KB",
    )
    assert report["tensors"] == len(kept) > 20
    assert report["filtered_out"] == len(source) - len(kept)
    assert report["renamed"] == {n: renamed(n) for n in kept}
    assert report["index"] is not None and len(report["files"]) > 1
    written = contents(report["index"])
    assert written == {renamed(n): source[n] for n in kept}


def test_a_list_of_sources_of_two_formats_merges(tmp_path):
    out = tmp_path / "merged.zt"
    report = tensorfile.convert([INDEX, PT], out, rename=[("^model\\.", "torch."), ("^features", "f")])
    source = {**contents(INDEX), **contents(PT)}
    assert report["tensors"] == len(source)
    written = contents(out)
    expected = {re.sub("^features", "f", re.sub(r"^model\.", "torch.", n)): v for n, v in source.items()}
    assert written == expected
    with tensorfile.open(out) as f:
        assert "torch.conv.weight" in f and "f.0.0.weight" in f


def test_collisions_and_bad_arguments_raise(tmp_path):
    out = tmp_path / "x.safetensors"
    with pytest.raises(tensorfile.InvalidFileError, match=r"checkpoint\.pt.*checkpoint\.pt.*model\.scale"):
        tensorfile.convert([PT, PT], out)
    with pytest.raises(tensorfile.UsageError, match=r'"classifier.1.bias".*"classifier.1.param"'):
        tensorfile.convert(INDEX, out, include="classifier.*", rename={r"(weight|bias)$": "param"})
    with pytest.raises(tensorfile.UsageError, match="keep none"):
        tensorfile.convert(INDEX, out, include=["nothing*"])
    with pytest.raises(tensorfile.UsageError, match=r'bad glob "\[x"'):
        tensorfile.convert(INDEX, out, exclude="[x")
    with pytest.raises(tensorfile.UsageError, match="bad rename regex"):
        tensorfile.convert(INDEX, out, rename={"(": "x"})
    with pytest.raises(tensorfile.UsageError, match="rename is a dict"):
        tensorfile.convert(INDEX, out, rename="a=b")
    with pytest.raises(tensorfile.UsageError, match="include is a glob"):
        tensorfile.convert(INDEX, out, include=3)
    with pytest.raises(tensorfile.UsageError, match="at least one path"):
        tensorfile.convert([], out)
    assert not out.exists()


def test_an_unreadable_entry_filtered_out_is_no_obstacle(tmp_path):
    npz = FIXTURES / "numpy" / "object.npz"
    out = tmp_path / "x.safetensors"
    with pytest.raises(tensorfile.UnsupportedError, match="objects"):
        tensorfile.convert(npz, out)
    report = tensorfile.convert(npz, out, exclude="objects")
    assert (report["tensors"], report["filtered_out"], report["skipped"]) == (2, 1, [])
    assert contents(out) == contents(npz)
