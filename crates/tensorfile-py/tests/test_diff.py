"""`tensorfile.diff` against numpy's metrics (tests/fixtures/diff/records.json, made by
scripts/fixturegen/diff_records.py) and against `tensorfile diff --json`."""

import json
import math
import os
import subprocess

import pytest

import tensorfile
from conftest import FIXTURES

DIFF = FIXTURES / "diff"
RECORDS = json.loads((DIFF / "records.json").read_text(encoding="utf-8"))


def number(v):
    return math.inf if v == "inf" else v


@pytest.mark.parametrize("pair", RECORDS["pairs"], ids=lambda p: p["a"])
def test_metrics_agree_with_numpy(pair):
    for run in pair["runs"]:
        got = tensorfile.diff(DIFF / pair["a"], DIFF / pair["b"], atol=run["atol"], rtol=run["rtol"])
        assert got["identical"] == len(pair["identical"])
        assert {t["name"] for t in got["changed"]} == set(run["tensors"])
        for t in got["changed"]:
            want, m = run["tensors"][t["name"]], t["metrics"]
            for field in ("max_abs_diff", "max_rel_diff", "cosine", "nmse"):
                assert number(m[field]) == pytest.approx(number(want[field]), rel=1e-9), (t["name"], field)
            for field in ("compared", "over_tolerance", "nan_mismatches"):
                assert m[field] == want[field], (t["name"], field)
        assert got["close"] == all(t["over_tolerance"] == 0 for t in run["tensors"].values())


def test_the_same_json_as_the_command_line():
    binary = os.environ.get("TENSORFILE_BIN")
    if not binary:
        pytest.skip("TENSORFILE_BIN (the built binary) is not set")
    a, b = str(DIFF / "quant.a.gguf"), str(DIFF / "quant.b.safetensors")
    shell = subprocess.run([binary, "diff", a, b, "--atol", "0.05", "--json"], capture_output=True, check=False)
    assert shell.returncode == 1
    assert json.loads(shell.stdout) == tensorfile.diff(a, b, atol=0.05)


def test_bad_tolerances_are_usage_errors():
    with pytest.raises(tensorfile.UsageError, match="atol"):
        tensorfile.diff(DIFF / "fp32.a.safetensors", DIFF / "fp32.b.safetensors", atol=-1.0)
