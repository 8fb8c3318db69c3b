"""TorchScript archives (`torch.jit.save`, fixtures in tests/fixtures/pytorch/torchscript/):
`load_file` gives the tensors of
`torch.jit.load(path).state_dict()`, in its order, with the bytes its record holds (as numpy
arrays, and as torch tensors equal to torch's own when torch is installed); `info()` says what
the file is and lists its code."""

import hashlib
import json

import pytest
import tensorfile
from conftest import FIXTURES

FOLDER = FIXTURES / "pytorch" / "torchscript"
ARCHIVES = sorted(FOLDER.glob("*.pt"))


def record(path) -> dict:
    return json.loads(path.with_name(path.name + ".expected.json").read_text(encoding="utf-8"))


def test_the_archives_are_there():
    assert [p.name for p in ARCHIVES] == ["containers.pt", "deflated.pt", "dtypes_views.pt", "nested.pt", "traced.pt"]


@pytest.mark.parametrize("path", ARCHIVES, ids=lambda p: p.name)
def test_load_file_gives_the_state_dict(path):
    wanted = record(path)["tensors"]
    loaded = tensorfile.load_file(path)
    assert list(loaded) == [t["name"] for t in wanted]
    for t in wanted:
        array = loaded[t["name"]]
        assert list(array.shape) == t["shape"], t["name"]
        assert hashlib.sha256(array.tobytes()).hexdigest() == t["sha256"], t["name"]


def test_info_says_it_is_a_torchscript_archive(tmp_path):
    path = FOLDER / "nested.pt"
    named = tmp_path / "model.jit"  # told from content, whatever its name
    named.write_bytes(path.read_bytes())
    with tensorfile.open(named) as f:
        details = f.info()["details"]
    assert details["kind"] == "TorchScript archive (torch.jit.save)"
    assert details["code"] == record(path)["code"]
    assert details["tensors not in the state dict"] == ["sub.attr"]


def test_the_tensors_equal_torchs_own():
    torch = pytest.importorskip("torch")
    path = FOLDER / "nested.pt"
    ours = tensorfile.load_file(path, framework="torch")
    theirs = torch.jit.load(str(path)).state_dict()
    assert list(ours) == list(theirs)
    for name, t in theirs.items():
        assert ours[name].dtype == t.dtype and torch.equal(ours[name], t), name


def test_a_broken_archive_names_its_rule(tmp_path):
    # The code of batch norm renamed in the zip's headers: no code defines the class of `bn`.
    data = (FOLDER / "nested.pt").read_bytes()
    assert data.count(b"modules/batchnorm.py") == 2
    path = tmp_path / "broken.jit"
    path.write_bytes(data.replace(b"modules/batchnorm.py", b"modules/batchnorX.py"))
    with pytest.raises(tensorfile.InvalidFileError, match=r"batchnorm.py defines it"):
        tensorfile.load_file(path)
