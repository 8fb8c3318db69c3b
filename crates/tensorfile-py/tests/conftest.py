"""Shared by the package's tests: the committed fixtures and their records."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"


def records() -> list:
    """(fixture path, record) for every fixture with tensors, all formats."""
    out = []
    for record_path in sorted(FIXTURES.rglob("*.expected.json")):
        record = json.loads(record_path.read_text(encoding="utf-8"))
        if "tensors" not in record:
            continue
        out.append((record_path.with_name(record_path.name.removesuffix(".expected.json")), record))
    return out


def fixture_id(item) -> str:
    return str(item[0].relative_to(FIXTURES)) if isinstance(item, tuple) else str(item)


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
