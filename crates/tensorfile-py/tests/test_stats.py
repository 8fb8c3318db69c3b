"""`tensorfile.stats` and `File.stats`: numpy's float64 statistics of the special values'
fixture (tests/fixtures/stats/records.json, made by scripts/fixturegen/stats_records.py)."""

import json
import math

import pytest

import tensorfile
from conftest import FIXTURES

SPECIAL = FIXTURES / "stats" / "special.safetensors"
FIELDS = ["name", "dtype", "shape", "numel", "dequantized", "summarised", "min", "max", "mean", "std",
          "absmax", "zeros", "nan", "posinf", "neginf", "hist"]


def numpy_records() -> dict:
    records = json.loads((FIXTURES / "stats" / "records.json").read_text())
    special = next(f for f in records["files"] if f["file"] == "stats/special.safetensors")
    return {t["name"]: t for t in special["tensors"]}


def test_stats_agree_with_numpy_in_float64():
    want = numpy_records()
    got = tensorfile.stats(SPECIAL, hist=10)
    assert sorted(r["name"] for r in got) == sorted(want)
    for r in got:
        w = want[r["name"]]
        assert list(r) == FIELDS
        for key in ("numel", "min", "max", "absmax", "zeros", "nan", "posinf", "neginf", "hist"):
            assert r[key] == w[key], (r["name"], key)
        for key in ("mean", "std"):
            if w[key] is None:
                assert r[key] is None
            else:
                assert math.isclose(r[key], w[key], rel_tol=1e-9, abs_tol=1e-15 * w["absmax"]), (r["name"], key)


def test_file_stats_selects_names_in_order():
    with tensorfile.open(SPECIAL) as f:
        got = f.stats(["mean_1e8_std_1", "bools"])
    assert [r["name"] for r in got] == ["mean_1e8_std_1", "bools"]
    assert got[1]["mean"] == 0.75 and got[1]["hist"] is None
    assert abs(got[0]["std"] - numpy_records()["mean_1e8_std_1"]["std"]) < 1e-9


def test_unknown_names_and_complex_tensors():
    with pytest.raises(tensorfile.TensorNotFoundError, match="no.such"):
        tensorfile.stats(SPECIAL, names=["no.such"])
    (c,) = tensorfile.stats(FIXTURES / "safetensors" / "dtypes.safetensors", names=["complex64"])
    assert c["summarised"] is False and "complex" in c["reason"]


def test_histogram_bins_are_bounded():
    with pytest.raises(tensorfile.UsageError, match="histogram bins"):
        tensorfile.stats(SPECIAL, hist=0)
