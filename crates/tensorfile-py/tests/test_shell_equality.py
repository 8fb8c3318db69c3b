"""The command line and the Python package render the same library decisions: for every
committed fixture, `File.entries()` is `tensorfile ls --json`, `tensorfile.convert` writes
byte for byte what `tensorfile convert` writes (and fails where it fails), `File.verify()` is
`tensorfile verify --json`, and `tensorfile.formats()` is `tensorfile formats --json`.

The binary comes from `TENSORFILE_BIN` (scripts/test sets it); without it these tests skip,
except under CI, where they fail."""

import json
import os
import subprocess
from pathlib import Path

import pytest

import tensorfile
from conftest import FIXTURES

# Tensor files committed under tests/fixtures when these tests were written: the walk below
# must find at least as many (a fixture folder moved or a walk broken fails here).
COMMITTED_FIXTURES = 68
SKIPPED_SUFFIXES = (".json", ".py", ".md")
OUTPUTS = (".zt", ".safetensors", ".pt", ".ptd")


def fixture_files() -> list:
    """Every file of tests/fixtures but records, READMEs, .json and .py files (and dotfiles
    such as .gitattributes), then every sharded set by its index."""
    files = sorted(
        p
        for p in FIXTURES.rglob("*")
        if p.is_file() and not p.name.startswith(".") and not p.name.endswith(SKIPPED_SUFFIXES)
    )
    sets = sorted(p for p in FIXTURES.rglob("*.index.json") if p.is_file())
    return files + sets


FILES = fixture_files()


def test_the_walk_finds_every_committed_fixture():
    tensor_files = [p for p in FILES if not p.name.endswith(".index.json")]
    assert len(tensor_files) >= COMMITTED_FIXTURES, [str(p) for p in tensor_files]
    suffixes = {p.suffix for p in tensor_files}
    assert {".zt", ".safetensors", ".pte", ".ptd", ".pt", ".pt2"} <= suffixes


@pytest.fixture(scope="module")
def cli():
    binary = os.environ.get("TENSORFILE_BIN")
    if not binary:
        if os.environ.get("CI"):
            pytest.fail("TENSORFILE_BIN is not set: the shell-equality tests need the tensorfile binary under CI")
        pytest.skip("TENSORFILE_BIN is not set (the path of the tensorfile binary): no command line to compare with")
    if not Path(binary).is_file():
        pytest.fail(f"TENSORFILE_BIN={binary} is not a file")

    def run(*args) -> subprocess.CompletedProcess:
        return subprocess.run([binary, *map(str, args)], capture_output=True, text=True, timeout=600)

    return run


def ids(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


@pytest.mark.parametrize("path", FILES, ids=ids)
def test_entries_are_ls_json(cli, path):
    listed = cli("ls", "--json", path)
    try:
        with tensorfile.open(str(path)) as f:
            rows = f.entries()
    except tensorfile.Error as e:
        assert listed.returncode != 0, f"the command line opens what Python refuses ({e})"
        return
    assert listed.returncode == 0, f"Python opens what the command line refuses: {listed.stderr}"
    assert rows == json.loads(listed.stdout)


def converted(cli, src: Path, out_cli: Path, out_py: Path, skip: bool):
    """Convert both ways; (command-line result, Python error or None)."""
    flags = ["--skip-unsupported"] if skip else []
    done = cli("convert", src, out_cli, *flags)
    try:
        tensorfile.convert(str(src), str(out_py), skip_unsupported=skip)
        error = None
    except tensorfile.Error as e:
        error = e
    return done, error


@pytest.mark.parametrize("path", FILES, ids=ids)
def test_convert_writes_what_the_command_line_writes(cli, path, tmp_path):
    for ext in OUTPUTS:
        out_cli, out_py = tmp_path / f"cli{ext}", tmp_path / f"py{ext}"
        done, error = converted(cli, path, out_cli, out_py, skip=False)
        if error is not None and error.hint == "skip-unsupported":
            assert done.returncode != 0, f"{ext}: only Python needs skip_unsupported ({error})"
            done, error = converted(cli, path, out_cli, out_py, skip=True)
        if error is not None:
            assert done.returncode != 0, f"{ext}: Python fails where the command line writes ({error})"
            assert not out_py.exists()
            continue
        assert done.returncode == 0, f"{ext}: the command line fails where Python writes: {done.stderr}"
        assert out_cli.read_bytes() == out_py.read_bytes(), f"{ext}: the files differ"


VERIFIED = [
    "zt/rust/crc32c.zt",
    "zt/rust/zstd.zt",
    "safetensors/dtypes.safetensors",
    "executorch/external.pte",
    "pytorch/subclass.pt2",
    "pytorch/zip/deflated.pt",
    "sharded/mobilenet/model.safetensors.index.json",
]


@pytest.mark.parametrize("name", VERIFIED)
def test_verify_is_verify_json(cli, name):
    path = FIXTURES / name
    with tensorfile.open(str(path)) as f:
        for deep, flags in ((False, []), (True, ["--deep"])):
            report = f.verify(deep=deep)
            done = cli("verify", "--json", *flags, path)
            assert done.returncode == (0 if report["ok"] else 1), done.stderr
            assert report == json.loads(done.stdout), f"deep={deep}"
            assert report["deep"] is deep


def test_a_broken_file_verifies_the_same_with_its_rule(cli, tmp_path):
    path = tmp_path / "crc.zt"
    tensorfile.convert(str(FIXTURES / "zt" / "rust" / "crc32c.zt"), str(path))
    with tensorfile.open(str(path)) as f:
        offset = f.entries()[0]["offset"]
    data = bytearray(path.read_bytes())
    data[offset] ^= 1
    path.write_bytes(bytes(data))
    with tensorfile.open(str(path)) as f:
        report = f.verify(deep=False)
    assert report == json.loads(cli("verify", "--json", path).stdout)
    assert [p["rule"] for p in report["problems"]] == ["checksum-mismatch"]


def test_formats_is_formats_json(cli):
    listed = cli("formats", "--json")
    assert listed.returncode == 0, listed.stderr
    formats = tensorfile.formats()
    assert formats == json.loads(listed.stdout)
    names = [f["name"] for f in formats]
    assert {"zt", "safetensors", "pte", "ptd", "pt", "pt2"} <= set(names)
    writable = {ext for f in formats if f["write"] for ext in f["extensions"]}
    assert {ext.lstrip(".") for ext in OUTPUTS} <= writable
    zt = formats[names.index("zt")]
    assert zt["caps"]["compression"] and "crc32c" in zt["caps"]["checksums"]
