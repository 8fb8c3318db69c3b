"""Sharded checkpoints through the package: the set huggingface_hub wrote
(tests/fixtures/sharded/) opens by its index and as a folder with the bytes it recorded;
`load_file` and `convert` take a set like a file; an index its shards contradict raises."""

import hashlib
import json
import shutil

import pytest

import tensorfile
from conftest import FIXTURES

SET = FIXTURES / "sharded" / "mobilenet"
INDEX = SET / "model.safetensors.index.json"


def record() -> dict:
    return json.loads((SET / "model.safetensors.index.json.expected.json").read_text(encoding="utf-8"))


def sha256(data) -> str:
    return hashlib.sha256(bytes(data)).hexdigest()


@pytest.mark.parametrize("path", [INDEX, SET], ids=["index", "folder"])
def test_a_sharded_checkpoint_opens_by_its_index_and_as_a_folder(path):
    expected = record()
    with tensorfile.open(path) as f:
        assert f.format == "safetensors"
        assert list(f) == [t["name"] for t in expected["tensors"]]
        for t in expected["tensors"]:
            tensor = f[t["name"]]
            assert (tensor.dtype, list(tensor.shape)) == (t["dtype"], t["shape"])
            assert sha256(tensor.tobytes()) == t["sha256"], t["name"]
        assert f.info()["details"]["shards"] == len(expected["shards"])
        assert f.verify()["ok"]


def test_load_file_and_convert_take_a_set_like_a_file(tmp_path):
    arrays = tensorfile.load_file(INDEX)
    assert len(arrays) == len(record()["tensors"])
    out = tmp_path / "one.zt"
    assert tensorfile.convert(SET, out)["tensors"] == len(arrays)
    again = tensorfile.load_file(out)
    assert sorted(again) == sorted(arrays)
    for name, array in arrays.items():
        assert again[name].tobytes() == array.tobytes(), name


@pytest.mark.parametrize("size", ["500kB", 500_000], ids=["text", "bytes"])
def test_convert_writes_shards_and_their_index(tmp_path, size):
    arrays = tensorfile.load_file(INDEX)
    out = tmp_path / "model.safetensors"
    done = tensorfile.convert(INDEX, out, max_shard_size=size)
    assert done["tensors"] == len(arrays) and done["skipped"] == []
    assert done["index"] == str(tmp_path / "model.safetensors.index.json")
    assert len(done["files"]) > 1
    for shard in done["files"]:
        with tensorfile.open(shard) as f:
            # A shard holds at most the size, unless one tensor alone is larger.
            assert len(f) == 1 or sum(f[n].nbytes for n in f) <= 500_000, shard
    again = tensorfile.load_file(done["index"])
    assert sorted(again) == sorted(arrays)
    for name, array in arrays.items():
        assert again[name].tobytes() == array.tobytes(), name
    with pytest.raises(tensorfile.UsageError, match="bad size"):
        tensorfile.convert(INDEX, tmp_path / "x.safetensors", max_shard_size="five gigabytes")
    with pytest.raises(tensorfile.UsageError, match="max_shard_size"):
        tensorfile.convert(INDEX, tmp_path / "x.safetensors", max_shard_size=1.5)


def test_an_index_its_shards_contradict_raises(tmp_path):
    for shard in record()["shards"]:
        shutil.copy(SET / shard, tmp_path / shard)
    index = json.loads(INDEX.read_text(encoding="utf-8"))
    dropped = next(iter(index["weight_map"]))
    del index["weight_map"][dropped]
    (tmp_path / INDEX.name).write_text(json.dumps(index), encoding="utf-8")
    with pytest.raises(tensorfile.InvalidFileError) as raised:
        tensorfile.open(tmp_path / INDEX.name)
    assert (raised.value.rule, raised.value.tensor) == ("shard-mismatch", dropped)
    assert raised.value.path.endswith(INDEX.name)
