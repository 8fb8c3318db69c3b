"""The `tensorfile` binary the interop tests run: $TENSORFILE_BIN, else a build under
target/ (release first). Importing this module skips the importing test module when there is
none."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def find_binary() -> Path | None:
    if "TENSORFILE_BIN" in os.environ:
        path = Path(os.environ["TENSORFILE_BIN"])
        if not path.is_file():
            pytest.fail(f"TENSORFILE_BIN={path} is not a file", pytrace=False)
        return path
    candidates = [ROOT / "target" / profile / "tensorfile" for profile in ("release", "debug")]
    return next((p for p in candidates if p.is_file()), None)


BINARY = find_binary()
if BINARY is None:
    pytest.skip(
        "no tensorfile binary: set TENSORFILE_BIN or run `cargo build -p tensorfile-cli`",
        allow_module_level=True,
    )
