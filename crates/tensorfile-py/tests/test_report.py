"""tensorfile.report and report_data: the page `tensorfile report` writes, and its document."""

import json
import re

import pytest

import tensorfile
from conftest import FIXTURES


def embedded(page) -> dict:
    html = open(page, encoding="utf-8").read()
    match = re.search(r'id="report-data">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def test_report_writes_a_page_holding_the_document(tmp_path):
    src = FIXTURES / "safetensors" / "dtypes.safetensors"
    page = tensorfile.report(src, tmp_path / "r.html")
    assert page == str(tmp_path / "r.html")
    doc = embedded(page)
    assert doc == tensorfile.report_data(src)
    with tensorfile.open(src) as f:
        names = list(f.keys())
    assert [row[0] for row in doc["tensors"]["rows"]] == names
    stats = tensorfile.stats(src, hist=32)
    for got, want in zip(doc["tensors"]["stats"], stats):
        if want["summarised"]:
            assert (got["min"], got["max"], got["nan"], got["hist"]) == (want["min"], want["max"], want["nan"], want["hist"])
        else:
            assert got["error"] == want["reason"]


def test_default_output_no_stats_and_compare(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    a, b = FIXTURES / "diff" / "fp32.a.safetensors", FIXTURES / "diff" / "fp32.b.safetensors"
    page = tensorfile.report(a, compare=b, stats=False, atol=0.5)
    assert page == "fp32.a.safetensors.html"
    doc = embedded(tmp_path / page)
    assert "stats" not in doc["tensors"]
    assert doc["compare"]["atol"] == 0.5
    diff = tensorfile.diff(a, b, atol=0.5)
    changed = {row[0]: row for row in doc["compare"]["rows"] if row[1] == "changed"}
    assert set(changed) == {t["name"] for t in diff["changed"]}
    for t in diff["changed"]:
        assert changed[t["name"]][8] == t["metrics"]["over_tolerance"]


def test_bad_arguments_and_files_raise(tmp_path):
    with pytest.raises(tensorfile.UsageError):
        tensorfile.report_data(FIXTURES / "safetensors" / "dtypes.safetensors", bins=0)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"<html><title>404</title></html>")
    with pytest.raises(tensorfile.Error, match="bad.safetensors"):
        tensorfile.report(bad, tmp_path / "bad.html")
    assert not (tmp_path / "bad.html").exists()
