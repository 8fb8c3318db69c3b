"""convert(..., dtype=...): floating tensors cast as torch casts them (the record
tests/fixtures/cast/record.json, made with torch), the others kept; bad dtypes refused."""

import hashlib
import json

import numpy as np
import pytest

import tensorfile
from conftest import FIXTURES

RECORD = json.loads((FIXTURES / "cast" / "record.json").read_text(encoding="utf-8"))
SOURCE = FIXTURES / RECORD["safetensors"]["file"]


@pytest.mark.parametrize("target", sorted(RECORD["safetensors"]["converted"]))
def test_convert_casts_as_torch(target, tmp_path):
    out = tmp_path / "out.safetensors"
    report = tensorfile.convert(SOURCE, out, dtype=target)
    rows = RECORD["safetensors"]["converted"][target]
    with tensorfile.open(SOURCE) as src, tensorfile.open(out) as converted:
        assert sorted(converted) == sorted(r["name"] for r in rows)
        cast = []
        for row in rows:
            t = converted[row["name"]]
            assert t.dtype == row["dtype"], row["name"]
            assert hashlib.sha256(t.tobytes()).hexdigest() == row["sha256"], row["name"]
            if src[row["name"]].dtype != t.dtype:
                cast.append(row["name"])
    assert sorted(report["cast"]) == sorted(cast) and cast


def test_dtypes_of_torch_and_numpy_name_their_target(tmp_path):
    by_name = tensorfile.convert(SOURCE, tmp_path / "a.safetensors", dtype="float16")
    by_numpy = tensorfile.convert(SOURCE, tmp_path / "b.safetensors", dtype=np.float16)
    assert by_name["cast"] == by_numpy["cast"]
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()
    torch = pytest.importorskip("torch")
    tensorfile.convert(SOURCE, tmp_path / "c.safetensors", dtype=torch.float16)
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "c.safetensors").read_bytes()


def test_without_a_dtype_nothing_is_cast(tmp_path):
    report = tensorfile.convert(SOURCE, tmp_path / "same.safetensors")
    assert report["cast"] == []


@pytest.mark.parametrize("bad", ["float64", "int8", "f64", 5])
def test_a_dtype_that_is_no_target_is_a_usage_error(bad, tmp_path):
    with pytest.raises(tensorfile.UsageError) as err:
        tensorfile.convert(SOURCE, tmp_path / "out.safetensors", dtype=bad)
    if isinstance(bad, str):
        assert "float32, float16, bfloat16, float8_e4m3fn, float8_e5m2" in str(err.value)
    assert not (tmp_path / "out.safetensors").exists()


def test_shards_are_cast_too(tmp_path):
    report = tensorfile.convert(SOURCE, tmp_path / "model.safetensors", dtype="bfloat16", max_shard_size=64)
    assert report["index"] and len(report["files"]) > 1
    with tensorfile.open(report["index"]) as shards:
        assert {shards[name].dtype for name in report["cast"]} == {"bfloat16"}
