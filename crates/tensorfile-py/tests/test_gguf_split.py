"""Split GGUF models through the package (tests/fixtures/gguf-split/, made by llama.cpp's
`llama-gguf-split`): `open` and `load_file` of any part give the whole model; `convert` with
`split_max_tensors`, `max_shard_size` and `no_tensor_first_split` writes the parts the tool
wrote, and of a part into one `.gguf` the file its `--merge` wrote, byte for byte (the
record's sha256); options that do not go together raise UsageError."""

import hashlib
import json

import pytest

import tensorfile
from conftest import FIXTURES

SPLIT = FIXTURES / "gguf-split"


def record() -> dict:
    return json.loads((SPLIT / "splits.expected.json").read_text(encoding="utf-8"))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def stored(tensor) -> bytes:
    """A tensor's stored parts (a quantized one's blocks), one after the other."""
    return b"".join(part.tobytes() for part in tensor.parts().values())


def keywords(args: list) -> dict:
    """llama-gguf-split's options as `convert`'s keywords (its `1M` is 1,000,000 bytes)."""
    out = {}
    args = iter(args)
    for arg in args:
        if arg == "--split-max-tensors":
            out["split_max_tensors"] = int(next(args))
        elif arg == "--split-max-size":
            out["max_shard_size"] = int(next(args).removesuffix("M")) * 1_000_000
        elif arg == "--no-tensor-first-split":
            out["no_tensor_first_split"] = True
        else:
            raise AssertionError(f"no keyword for {arg}")
    return out


RUNS = record()["splits"]
MERGES = record()["merges"]


@pytest.mark.parametrize("run,merge", list(zip(RUNS, MERGES)), ids=[r["output"] for r in RUNS])
def test_split_and_merge_have_the_bytes_llama_gguf_split_wrote(tmp_path, run, merge):
    done = tensorfile.convert(SPLIT / run["input"], tmp_path / f"{run['output']}.gguf", **keywords(run["args"]))
    assert done["index"] is None
    files = [tmp_path / p["file"] for p in run["parts"]]
    assert [str(f) for f in files] == done["files"]
    for f, part in zip(files, run["parts"]):
        assert sha256(f.read_bytes()) == part["sha256"], f.name
    merged = tmp_path / "merged.gguf"
    assert tensorfile.convert(files[-1], merged)["tensors"] == done["tensors"]
    assert sha256(merged.read_bytes()) == merge["sha256"]


def test_any_part_opens_as_the_whole_model():
    parts = [SPLIT / p["file"] for p in RUNS[0]["parts"]]
    with tensorfile.open(SPLIT / "model.gguf") as model:
        names = list(model)
        arrays = {n: stored(model[n]) for n in names}
    for part in parts:
        with tensorfile.open(part) as f:
            assert list(f) == names
            assert f.info()["details"]["shards"] == len(parts)
            assert f.info()["metadata"]["split.count"] == len(parts)
            assert {n: stored(f[n]) for n in names} == arrays


def test_load_file_takes_any_part(tmp_path):
    # Plain tensors only (load_file refuses quantized ones), split by two.
    plain = ["token_embd.weight", "output_norm.weight", "scalar", "blk.1.*"]
    done = tensorfile.convert(SPLIT / "model.gguf", tmp_path / "plain.gguf", include=plain, split_max_tensors=2)
    assert len(done["files"]) == 4
    whole = tensorfile.load_file(tmp_path / "plain-00003-of-00004.gguf")
    with tensorfile.open(SPLIT / "model-00003-of-00004.gguf") as source:
        assert set(whole) == {n for n in source if not n.startswith("blk.0.")}
        for name, array in whole.items():
            assert array.tobytes() == source[name].numpy().tobytes(), name


def test_split_options_that_do_not_fit_raise(tmp_path):
    source = SPLIT / "model.gguf"
    with pytest.raises(tensorfile.UsageError, match="split_max_tensors"):
        tensorfile.convert(source, tmp_path / "x.gguf", split_max_tensors="3")
    with pytest.raises(tensorfile.UsageError, match="split GGUF"):
        tensorfile.convert(source, tmp_path / "x.safetensors", split_max_tensors=3)
    with pytest.raises(tensorfile.UsageError, match="not both"):
        tensorfile.convert(source, tmp_path / "x.gguf", split_max_tensors=3, max_shard_size="1MB")
    with pytest.raises(tensorfile.UsageError, match="give a size"):
        tensorfile.convert(source, tmp_path / "x.gguf", no_tensor_first_split=True)
    assert list(tmp_path.iterdir()) == []
