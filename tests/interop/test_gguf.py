"""Interop of the `tensorfile` binary with gguf-py (pip `gguf`): what tensorfile writes as GGUF,
`GGUFReader` reads with every key/value of the same type and value and every tensor's type,
shape and bytes; what `tensorfile update` writes likewise, with the new values.

Needs `gguf numpy pytest` (and `safetensors` for the update weights); run by `scripts/interop`.
The binary is $TENSORFILE_BIN, else target/release/tensorfile or target/debug/tensorfile.
"""

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFEndian, GGUFReader
from gguf import GGUFValueType as V

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
GGUF_FIXTURES = sorted((FIXTURES / "gguf").glob("*.gguf"))

# Plain ggml types and the width of their elements: what a big-endian file stores swapped.
WIDTHS = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I8": 1, "I16": 2, "I32": 4, "I64": 8}


def tensorfile(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=60, check=False)


def run(*args) -> str:
    done = tensorfile(*args)
    assert done.returncode == 0, f"tensorfile {' '.join(map(str, args))}: {done.stdout}{done.stderr}"
    return done.stdout


def value(parts, i: int, vtype: V):
    """The value whose parts start at `parts[i]` as (type, value) trees, and the next index."""
    if vtype == V.STRING:
        return ("string", bytes(parts[i + 1]).decode("utf-8")), i + 2
    if vtype != V.ARRAY:
        return (vtype.name, parts[i].tolist()[0]), i + 1
    element, count = V(int(parts[i][0])), int(parts[i + 1][0])
    i += 2
    items = []
    for _ in range(count):
        item, i = value(parts, i, element)
        items.append(item)
    return ("array", element.name, items), i


def key_values(reader: GGUFReader) -> dict:
    """Every key/value as typed trees, in file order."""
    out = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        v, end = value(field.parts, 3, V(int(field.parts[2][0])))
        assert end == len(field.parts), key
        out[key] = v
    return out


def little_endian(t) -> bytes:
    """The bytes of a tensor of a big-endian file with plain elements swapped to little-endian
    (blocks are stored as their producer built them)."""
    stored = t.data.tobytes()
    width = WIDTHS.get(t.tensor_type.name, 1)
    if width == 1:
        return stored
    return np.frombuffer(stored, dtype=f">u{width}").astype(f"<u{width}").tobytes()


def tensors(reader: GGUFReader, big: bool) -> list:
    """(name, type, shape, bytes) of every tensor, elements little-endian."""
    out = []
    for t in reader.tensors:
        data = little_endian(t) if big else t.data.tobytes()
        out.append((t.name, t.tensor_type.name, [int(d) for d in t.shape], data))
    return out


@pytest.mark.parametrize("fixture", GGUF_FIXTURES, ids=lambda p: p.name)
def test_gguf_written_by_tensorfile_reads_in_gguf_py_as_the_original(fixture: Path, tmp_path: Path) -> None:
    out = tmp_path / fixture.name
    run("convert", fixture, out)
    run("verify", out)
    original, written = GGUFReader(fixture), GGUFReader(out)
    assert written.endianess == GGUFEndian.LITTLE
    assert int(written.fields["GGUF.version"].parts[0][0]) == 3
    assert written.alignment == original.alignment
    assert key_values(written) == key_values(original)
    big = original.endianess == GGUFEndian.BIG
    assert tensors(written, False) == tensors(original, big)
    if not big:
        # gguf-py's own layout: the same file, byte for byte.
        assert out.read_bytes() == fixture.read_bytes()


def test_safetensors_converts_to_gguf_that_gguf_py_reads(tmp_path: Path) -> None:
    source = FIXTURES / "safetensors" / "dtypes.safetensors"
    record = json.loads(source.with_name(source.name + ".expected.json").read_text(encoding="utf-8"))
    out = tmp_path / "dtypes.gguf"
    report = json.loads(run("convert", source, out, "--skip-unsupported", "--json"))
    skipped = {s["name"] for s in report["skipped"]}
    reader = GGUFReader(out)
    by_name = {t.name: t for t in reader.tensors}
    expected = [t for t in record["tensors"] if t["name"] not in skipped]
    assert {"float32", "float16", "bfloat16", "float64", "int8", "int16", "int32", "int64"} <= set(by_name)
    assert len(expected) == len(by_name) == 8
    for t in expected:
        got = by_name[t["name"]]
        assert [int(d) for d in reversed(got.shape.tolist())] == t["shape"], t["name"]
        assert hashlib.sha256(got.data.tobytes()).hexdigest() == t["sha256"], t["name"]


def test_update_writes_new_values_that_gguf_py_reads(tmp_path: Path) -> None:
    from safetensors.numpy import save_file

    fixture = FIXTURES / "gguf" / "big_endian.gguf"
    original = GGUFReader(fixture)
    f32 = next(t for t in original.tensors if t.name == "f32")
    new = np.arange(f32.n_elements, dtype=np.float32).reshape(tuple(reversed(f32.shape.tolist()))) / 3
    save_file({"f32": new}, str(tmp_path / "weights.safetensors"))
    out = tmp_path / "updated.gguf"
    run("update", fixture, "--weights", tmp_path / "weights.safetensors", "-o", out)
    updated = GGUFReader(out)
    assert updated.endianess == GGUFEndian.BIG
    assert key_values(updated) == key_values(original)
    got = next(t for t in updated.tensors if t.name == "f32")
    np.testing.assert_array_equal(got.data.astype("<f4"), new)
    others = [t for t in tensors(updated, True) if t[0] != "f32"]
    assert others == [t for t in tensors(original, True) if t[0] != "f32"]
