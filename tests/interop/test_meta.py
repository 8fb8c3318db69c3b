"""Interop of `tensorfile meta` with the real readers: gguf-py (`GGUFReader`) reads every
edited GGUF file with exactly the keys set (their types and values), without the keys
deleted, and every tensor's bytes as they were; the safetensors library reads the edited
`__metadata__` and the same tensors.

Needs `gguf numpy pytest safetensors`; run by `scripts/interop`. The binary is
$TENSORFILE_BIN, else target/release/tensorfile or target/debug/tensorfile.
"""

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader
from gguf import GGUFValueType as V

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
# gguf-py's files of either byte order (an edit keeps a big-endian file big-endian).
GGUF_FILES = sorted((FIXTURES / "gguf").glob("*.gguf"))
TEMPLATE = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"


def run(*args) -> str:
    done = subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"tensorfile {' '.join(map(str, args))}: {done.stdout}{done.stderr}"
    return done.stdout


def typed(reader: GGUFReader) -> dict:
    """Every key/value as (type names, value), gguf-py's own reading."""
    out = {}
    for key, field in reader.fields.items():
        if not key.startswith("GGUF."):
            out[key] = ([V(t).name for t in field.types], field.contents())
    return out


def tensors(reader: GGUFReader) -> dict:
    return {t.name: (t.tensor_type.name, bytes(np.ascontiguousarray(t.data).view(np.uint8))) for t in reader.tensors}


@pytest.mark.parametrize("path", GGUF_FILES, ids=lambda p: p.name)
def test_gguf_py_reads_every_edited_key(path: Path, tmp_path: Path):
    template = tmp_path / "chat.jinja"
    template.write_text(TEMPLATE)
    out = tmp_path / "edited.gguf"
    before = typed(GGUFReader(path))
    deleted = next((k for k in before if k not in ("general.alignment",)), None)
    args = ["meta", path, "-o", out, "--json",
            "--set", "general.name=edited",
            "--set", "new.u32:u32=7",
            "--set", "new.i16s:[i16]=[1,-2,3]",
            "--set", 'new.strs=["a", "b,c"]',
            "--set", "new.f=0.5",
            "--set", "new.f64:f64=-1e300",
            "--set", "new.flag=true",
            "--set", f"tokenizer.chat_template=@{template}"]
    if deleted and deleted != "general.name":
        args += ["--delete", deleted]
    report = json.loads(run(*args))
    assert report["output"] == str(out)
    after = typed(GGUFReader(out))
    expected = {
        "general.name": (["STRING"], "edited"),
        "new.u32": (["UINT32"], 7),
        "new.i16s": (["ARRAY", "INT16"], [1, -2, 3]),
        "new.strs": (["ARRAY", "STRING"], ["a", "b,c"]),
        "new.f": (["FLOAT32"], 0.5),
        "new.f64": (["FLOAT64"], -1e300),
        "new.flag": (["BOOL"], True),
        "tokenizer.chat_template": (["STRING"], TEMPLATE),
    }
    for key, want in expected.items():
        assert after[key] == want, key
    untouched = {k: v for k, v in before.items() if k not in expected and k != deleted}
    if deleted and deleted != "general.name":
        assert deleted not in after
    assert {k: v for k, v in after.items() if k in untouched} == untouched
    assert set(after) == set(untouched) | set(expected)
    assert tensors(GGUFReader(out)) == tensors(GGUFReader(path))


@pytest.mark.parametrize("path", GGUF_FILES, ids=lambda p: p.name)
def test_gguf_py_reads_a_new_alignment_and_the_same_tensors(path: Path, tmp_path: Path):
    out = tmp_path / "aligned.gguf"
    run("meta", path, "-o", out, "--set", "general.alignment:u32=128")
    reader = GGUFReader(out)
    assert reader.alignment == 128
    assert reader.data_offset % 128 == 0
    assert all(t.data_offset % 128 == 0 for t in reader.tensors)
    assert tensors(reader) == tensors(GGUFReader(path))


def test_safetensors_reads_the_edited_metadata(tmp_path: Path):
    from safetensors import safe_open
    from safetensors.numpy import load_file

    path = FIXTURES / "safetensors" / "metadata.safetensors"
    with safe_open(path, "np") as f:
        before = f.metadata() or {}
    first = next(iter(before))
    out = tmp_path / "edited.safetensors"
    run("meta", path, "-o", out, "--set", "license=apache-2.0", "--set", "count=7", "--delete", first)
    with safe_open(out, "np") as f:
        after = f.metadata()
    want = {k: v for k, v in before.items() if k != first} | {"license": "apache-2.0", "count": "7"}
    assert after == want
    old, new = load_file(path), load_file(out)
    assert old.keys() == new.keys()
    for name in old:
        assert old[name].dtype == new[name].dtype and np.array_equal(old[name], new[name]), name
