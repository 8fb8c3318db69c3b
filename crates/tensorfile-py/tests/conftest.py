"""Shared by the package's tests: the committed fixtures and their records."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"


# Records of every format, hostile ones included (the folders of tests/fixtures/).
COMMITTED_RECORDS = 65
LAYOUTS = {"dense", "blob", "sparse_coo", "sparse_csr"}


def load_record(record_path: Path) -> dict:
    """A record, checked: a JSON object naming its fixture, which exists, with a list of
    tensors of known layouts (or, for the pickles torch refuses, the refused global)."""
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise AssertionError(f"{record_path}: unreadable or malformed record: {e}") from e
    fixture = record_path.with_name(record_path.name.removesuffix(".expected.json"))
    assert isinstance(record, dict), f"{record_path}: not a JSON object"
    assert record.get("file") == fixture.name, f"{record_path}: `file` is {record.get('file')!r}"
    assert fixture.is_file(), f"{record_path}: its fixture {fixture} is missing"
    if "tensors" not in record:
        # zTensor 1 and 2 records list objects (crates/tensorfile/tests/zt1.rs, zt2.rs check them),
        # NumPy records arrays (crates/tensorfile/tests/library/numpy_fixtures.rs), HDF5
        # records datasets (tests/library/hdf5_files.rs, hdf5_datasets.rs).
        assert any(k in record for k in ("refused_global", "objects", "arrays", "datasets")), f"{record_path}: no tensors"
        return record
    assert isinstance(record["tensors"], list), f"{record_path}: tensors is not a list"
    for t in record["tensors"]:
        assert t.get("layout") in LAYOUTS, f"{record_path}: {t.get('name')!r}: unknown layout {t.get('layout')!r}"
    return record


def records() -> list:
    """(fixture path, record) for every fixture with tensors, all formats but GGUF (whose
    records, gguf-py's, have a shape of their own: crates/tensorfile/tests/library/gguf.rs;
    those of split models too, with llama-gguf-split's runs: test_gguf_split.py), nor the
    records of ggml's quantizers and llama-quantize's runs, which describe rows and runs, not
    files (model/quant/ggml/quantize/fixture_tests.rs, tests/library/dequantize.rs, the CLI quantize test),
    nor the Hugging Face converter's runs (test_checkpoint.py, tests/library/hf_gguf.rs, hf_gguf_more.rs)."""
    elsewhere = ("gguf", "gguf-split", "ggml-quant", "ggml-quant-iq", "gguf-quantize", "hf-gguf", "hf-gguf-more")
    found = sorted(p for p in FIXTURES.rglob("*.expected.json") if p.relative_to(FIXTURES).parts[0] not in elsewhere)
    assert len(found) >= COMMITTED_RECORDS, f"{FIXTURES}: {len(found)} records, {COMMITTED_RECORDS} committed"
    out = []
    for record_path in found:
        record = load_record(record_path)
        if "tensors" in record:
            out.append((record_path.with_name(record_path.name.removesuffix(".expected.json")), record))
    return out


def fixture_id(item) -> str:
    return str(item[0].relative_to(FIXTURES)) if isinstance(item, tuple) else str(item)


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
