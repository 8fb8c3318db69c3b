"""`tensorfile.edit_metadata`: keys set (as texts, typed keys, Python values) and deleted in
gguf-py's and safetensors' fixture files, read back by `tensorfile.open` with the tensors as
they were; errors name the key."""

from pathlib import Path

import numpy as np
import pytest

import tensorfile

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"


def arrays(path) -> dict:
    with tensorfile.open(path) as f:
        return {name: f[name].numpy(raw=True).copy() for name in f}


def metadata(path) -> dict:
    with tensorfile.open(path) as f:
        return dict(f.metadata["metadata"])


def test_gguf_keys_are_set_and_deleted(tmp_path):
    src = FIXTURES / "gguf" / "metadata.gguf"
    out = tmp_path / "out.gguf"
    template = tmp_path / "chat.jinja"
    template.write_text("{{ messages }}")
    report = tensorfile.edit_metadata(
        src,
        out,
        set={"general.name": "py", "new.ids:[u16]": [1, 2], "new.flag": True, "new.x": 0.5,
             "tokenizer.chat_template": f"@{template}"},
        delete="scalar.false",
    )
    assert report["output"] == str(out)
    changes = {c["key"]: c for c in report["changes"]}
    assert changes["new.ids"]["new"] == {"type": "[u16]", "value": [1, 2]}
    assert changes["new.flag"]["new"]["type"] == "bool"
    assert changes["new.x"]["new"]["type"] == "f32"
    assert changes["scalar.false"]["action"] == "delete" and changes["scalar.false"]["new"] is None
    got = metadata(out)
    assert got["general.name"] == "py" and got["tokenizer.chat_template"] == "{{ messages }}"
    assert "scalar.false" not in got
    old, new = arrays(src), arrays(out)
    assert old.keys() == new.keys() and all(np.array_equal(old[k], new[k]) for k in old)


def test_safetensors_text_and_in_place(tmp_path):
    path = tmp_path / "m.safetensors"
    path.write_bytes((FIXTURES / "safetensors" / "metadata.safetensors").read_bytes())
    tensorfile.edit_metadata(path, path, set=["license=mit", "n=7"])
    got = metadata(path)
    assert got["license"] == "mit" and got["n"] == "7"
    with pytest.raises(tensorfile.UsageError, match="--set n: this format keeps text values only"):
        tensorfile.edit_metadata(path, path, set={"n:u8": 1})
    with pytest.raises(tensorfile.UsageError, match="--delete absent"):
        tensorfile.edit_metadata(path, path, delete=["absent"])
    with pytest.raises(tensorfile.UsageError, match="set is a mapping"):
        tensorfile.edit_metadata(path, path, set=3)
