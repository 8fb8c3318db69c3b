"""Interop of the `tensorfile` binary with PyTorch (pip `torch`, `torchvision`, `safetensors`):
it must list and convert every committed `.pt2` / `torch.save` fixture as torch's own loaders
recorded it; the archives `tensorfile update` writes must load in `torch.export.load` (or
`load_pt2`) and compute what eager torch computes with the new weights; the `.pt` files
`tensorfile convert` writes must load with `torch.load(weights_only=True)`; and pickles that
would run code are refused.

Needs torch (the full environment: `scripts/interop --full`); skipped in the light one. The
torch 2.8 archives are also loaded by torch 2.8 where its environment
(~/.cache/tensorfile/venv-torch28, made by `scripts/fixtures`) exists.
"""

import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed: these tests need the full environment")
pytest.importorskip("torchvision", reason="torchvision is not installed: these tests need the full environment")

import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from torch.export.pt2_archive._package import load_pt2  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "pytorch"
TORCH28_PYTHON = Path.home() / ".cache" / "tensorfile" / "venv-torch28" / "bin" / "python"

sys.path.insert(0, str(ROOT / "scripts"))
from fixturegen import pytorch as models  # noqa: E402

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

pytestmark = pytest.mark.filterwarnings("ignore")


# --- running tensorfile -------------------------------------------------------------------


def tensorfile(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=300, check=False)


def ok(*args) -> subprocess.CompletedProcess:
    done = tensorfile(*args)
    shown = " ".join(str(a.name) if isinstance(a, Path) else str(a) for a in args)
    assert done.returncode == 0, f"tensorfile {shown}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    return done


def record_of(path: Path) -> dict:
    return json.loads(path.with_name(path.name + ".expected.json").read_text(encoding="utf-8"))


def fixtures() -> list:
    found = sorted(FIXTURES.glob("*.pt*")) + sorted(FIXTURES.glob("torch28/*.pt2")) + sorted(FIXTURES.glob("zip/*.pt*"))
    return [p for p in found if not p.name.endswith(".json")]


def test_the_fixtures_are_all_there():
    """The parametrized tests below would pass on no fixtures at all."""
    found = fixtures()
    # 15 of torch 2.15, 5 of torch 2.8, 4 re-zipped (hostile/ is read by its own test).
    assert len(found) >= 24, f"{len(found)} fixtures: run scripts/fixtures"
    for path in found:
        assert "tensors" in record_of(path), f"{path}: a record without tensors"
    assert len(list(FIXTURES.glob("hostile/*.pt"))) == 2


def fixture_id(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


tensor_bytes = models.tensor_bytes


def skip_unreadable(path: Path) -> list:
    """`--skip-unsupported` for the fixtures with tensors only torch can rebuild."""
    return ["--skip-unsupported"] if record_of(path).get("unreadable") else []


# --- reading -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", fixtures(), ids=fixture_id)
def test_ls_agrees_with_the_record(path):
    listed = json.loads(ok("ls", path, "--json").stdout)
    rows = {row["name"]: row for row in listed if row["kind"] != "unreadable"}
    record = record_of(path)
    assert sorted(rows) == sorted(t["name"] for t in record["tensors"])
    unreadable = {row["name"]: row for row in listed if row["kind"] == "unreadable"}
    assert sorted(unreadable) == sorted(t["name"] for t in record.get("unreadable", []))
    for t in record.get("unreadable", []):
        row = unreadable[t["name"]]
        assert (row["dtype"], row["shape"]) == (t["dtype"], t["shape"]) and t["refused_global"] in row["error"]
    for t in record["tensors"]:
        row = rows[t["name"]]
        assert (row["dtype"], row["shape"]) == (t["dtype"], t["shape"]), t["name"]
        # Archives record each tensor's source; torch.save files have none.
        if path.suffix == ".pt2":
            assert row["source"] == t["source"], t["name"]
        else:
            assert "source" not in t, t["name"]


@pytest.mark.parametrize("path", fixtures(), ids=fixture_id)
def test_converted_safetensors_hold_what_torch_loads(path, tmp_path):
    out = tmp_path / "out.safetensors"
    ok("convert", path, out, *skip_unreadable(path))
    loaded = load_file(str(out))
    record = record_of(path)
    assert sorted(loaded) == sorted(t["name"] for t in record["tensors"])
    for t in record["tensors"]:
        tensor = loaded[t["name"]]
        assert (models.dtype_name(tensor.dtype), list(tensor.shape)) == (t["dtype"], t["shape"]), t["name"]
        assert sha256(tensor_bytes(tensor)) == t["sha256"], t["name"]


@pytest.mark.parametrize("path", fixtures(), ids=fixture_id)
def test_converted_pt_loads_with_weights_only(path, tmp_path):
    out = tmp_path / "out.pt"
    ok("convert", path, out, *skip_unreadable(path))
    loaded = torch.load(out, weights_only=True)
    record = record_of(path)
    assert sorted(loaded) == sorted(t["name"] for t in record["tensors"])
    for t in record["tensors"]:
        tensor = loaded[t["name"]]
        assert (models.dtype_name(tensor.dtype), list(tensor.shape)) == (t["dtype"], t["shape"]), t["name"]
        assert sha256(tensor_bytes(tensor)) == t["sha256"], t["name"]


def test_info_json_describes_the_exported_program():
    info = json.loads(ok("info", FIXTURES / "plain.pt2", "--json").stdout)
    (model,) = info["structure"]["models"]
    ep = torch.export.load(str(FIXTURES / "plain.pt2"))
    (batch,) = ep.range_constraints
    assert model["inputs"][0]["shape"] == [str(batch), 8]
    assert model["range_constraints"] == {str(batch): {"min": 1, "max": 64}}
    assert model["parameters"] == len(ep.graph_signature.parameters)
    assert model["sample_inputs"][0]["shape"] == [2, 8]


@pytest.mark.parametrize("name", ["hostile/os_system.pt", "hostile/whole_module.pt"])
def test_pickles_that_run_code_are_refused(name):
    path = FIXTURES / name
    with pytest.raises(Exception):
        torch.load(path, weights_only=True)  # torch refuses it too
    global_name = record_of(path)["refused_global"]
    for command in ("ls", "info", "verify"):
        done = tensorfile(command, path)
        assert done.returncode == 1, done
        assert global_name in done.stderr and path.name in done.stderr, done.stderr


# --- update --------------------------------------------------------------------------------


def perturbed(t: torch.Tensor, round_: int) -> torch.Tensor:
    """New values of the same dtype and shape, kept sane for any weight (variances stay
    positive, integers small): `t * 1.5 + 0.01` for floats, `t + 1` for integers, `~t` for
    bools; a second round perturbs again."""
    out = t.detach().clone().contiguous()
    for _ in range(round_):
        if out.dtype == torch.bool:
            out = ~out
        elif out.dtype.is_complex:
            out = out * 1.5 + 0.01
        elif out.dtype.is_floating_point:
            out = (out.float() * 1.5 + 0.01).to(out.dtype)
        else:
            out = out + 1
    return out


def exported(path: Path) -> dict:
    """name -> ExportedProgram, as our names say (bare for one model)."""
    programs = load_pt2(str(path)).exported_programs
    return programs if len(programs) > 1 else {"": next(iter(programs.values()))}


def weights_of(path: Path) -> dict:
    """Every tensor of an archive by tensorfile's name, as torch loads it."""
    out = {}
    for model, ep in exported(path).items():
        prefix = f"{model}/" if model else ""
        for name, t in [*ep.state_dict.items(), *ep.constants.items()]:
            if isinstance(t, torch.Tensor):
                out[prefix + name] = t
    return out


def model_of(fixture: str, model: str) -> str:
    return {"multi": model}.get(fixture, fixture)


def eager_with(fixture: str, model: str, new: dict) -> torch.nn.Module:
    """The fixture's model built in eager torch, with the new values written into its
    tensors in place (so tied weights and views change together, as in the archive)."""
    module = models.build(model_of(fixture, model))
    prefix = f"{model}/" if model else ""
    with torch.no_grad():
        for name, value in new.items():
            if not name.startswith(prefix):
                continue
            owner_path, _, attr = name[len(prefix) :].rpartition(".")
            owner = module.get_submodule(owner_path) if owner_path else module
            getattr(owner, attr).copy_(value)
    return module


def assert_runs_like_eager(fixture: str, updated: Path, new: dict, original: Path) -> None:
    """`updated` computes what eager torch computes with the new weights, and what
    `original` computes differs (the new weights matter)."""
    before = exported(original)
    for model, ep in exported(updated).items():
        inputs = models.example_inputs(model_of(fixture, model))
        with torch.no_grad():
            got = ep.module()(*inputs)
            want = eager_with(fixture, model, new)(*inputs)
            old = before[model].module()(*inputs)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        assert not torch.allclose(old, want), f"{fixture} {model}: the new weights change nothing"


UPDATABLE = ["plain", "buffers_constants", "tied", "views", "transposed", "dtypes", "mobilenet_v2", "multi"]


def update_twice(path: Path, tmp_path: Path, via: str) -> tuple[Path, dict]:
    """Two rounds of `update`: safetensors, then `via` (a second weights format). Returns the
    final archive and the values it must hold."""
    original = weights_of(path)
    current, expected = path, {}
    for round_, fmt in [(1, "safetensors"), (2, via)]:
        new = {n: perturbed(t, round_) for n, t in original.items()}
        weights = tmp_path / f"round{round_}.safetensors"
        save_file(new, str(weights))
        if fmt != "safetensors":
            converted = tmp_path / f"round{round_}.{fmt}"
            ok("convert", weights, converted, "--skip-unsupported")
            weights = converted
            listed = {row["name"] for row in json.loads(ok("ls", weights, "--json").stdout)}
            new = {n: t for n, t in new.items() if n in listed}
        out = tmp_path / f"round{round_}.pt2"
        ok("update", current, "--weights", weights, "-o", out)
        expected.update(new)
        current = out
    return current, expected


@pytest.mark.parametrize("fixture", UPDATABLE)
def test_updated_archives_load_and_run_like_eager(fixture, tmp_path):
    path = FIXTURES / f"{fixture}.pt2"
    updated, expected = update_twice(path, tmp_path, via="ptd")
    loaded = weights_of(updated)
    assert sorted(loaded) == sorted(weights_of(path))
    for name, value in expected.items():
        assert loaded[name].dtype == value.dtype and loaded[name].shape == value.shape, name
        assert tensor_bytes(loaded[name]) == tensor_bytes(value), name
    # The strides and storage sharing torch wrote are kept.
    for name, t in weights_of(path).items():
        assert loaded[name].stride() == t.stride(), name
    assert_runs_like_eager(fixture, updated, expected, path)


def test_an_archive_deflated_by_zipfile_updates_into_torch_layout(tmp_path):
    """zip/deflated.pt2 is views.pt2 re-zipped with deflate; the update comes out stored and
    aligned as torch writes archives, and runs."""
    path = FIXTURES / "zip" / "deflated.pt2"
    updated, expected = update_twice(path, tmp_path, via="safetensors")
    with zipfile.ZipFile(updated) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
    assert_runs_like_eager("views", updated, expected, path)


@pytest.mark.parametrize("fixture", ["plain", "tied", "views", "buffers_constants", "transposed"])
def test_updated_torch28_archives_run_like_eager(fixture, tmp_path):
    path = FIXTURES / "torch28" / f"{fixture}.pt2"
    updated, expected = update_twice(path, tmp_path, via="zt")
    loaded = weights_of(updated)
    for name, value in expected.items():
        assert tensor_bytes(loaded[name]) == tensor_bytes(value), name
    assert_runs_like_eager(fixture, updated, expected, path)
    if TORCH28_PYTHON.exists():
        check = (
            "import sys, torch; ep = torch.export.load(sys.argv[1]);"
            "print(sorted(ep.state_dict) + sorted(ep.constants))"
        )
        done = subprocess.run(
            [str(TORCH28_PYTHON), "-c", check, str(updated)], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        assert "2.8" in subprocess.run(
            [str(TORCH28_PYTHON), "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True
        ).stdout


def test_updated_aoti_package_runs_with_its_new_on_disk_weights(tmp_path):
    path = FIXTURES / "aoti_cpu.pt2"
    rows = json.loads(ok("ls", path, "--json").stdout)
    assert {r["source"] for r in rows} == {"weight"}
    extracted = tmp_path / "original.safetensors"
    ok("convert", path, extracted)
    new = {n: perturbed(t, 1) for n, t in load_file(str(extracted)).items()}
    weights, out = tmp_path / "new.safetensors", tmp_path / "new.pt2"
    save_file(new, str(weights))
    ok("update", path, "--weights", weights, "-o", out)
    runner = load_pt2(str(out), load_weights_from_disk=True).aoti_runners["model"]
    inputs = models.example_inputs("plain")
    want = eager_with("plain", "", new)(*inputs)
    torch.testing.assert_close(runner(*inputs), want, rtol=1e-5, atol=1e-5)
    assert len(rows) == len(new)


def test_tied_weights_given_different_values_are_refused(tmp_path):
    path = FIXTURES / "tied.pt2"
    weights, out = tmp_path / "w.safetensors", tmp_path / "out.pt2"
    save_file({"embed.weight": torch.zeros(11, 6), "head.weight": torch.ones(11, 6)}, str(weights))
    done = tensorfile("update", path, "--weights", weights, "-o", out)
    assert done.returncode != 0 and "shares its storage" in done.stderr, done.stderr
    assert not out.exists()


def test_updated_torch_save_loads_with_weights_only(tmp_path):
    path = FIXTURES / "checkpoint.pt"
    original = torch.load(path, weights_only=True)
    new = {"model.conv.weight": original["model"]["conv.weight"] * 3, "optimizer.state.0.exp_avg": None}
    new["optimizer.state.0.exp_avg"] = original["optimizer"]["state"][0]["exp_avg"] + 1
    weights, out = tmp_path / "w.safetensors", tmp_path / "out.pt"
    save_file({k: v.contiguous() for k, v in new.items()}, str(weights))
    ok("update", path, "--weights", weights, "-o", out)
    loaded = torch.load(out, weights_only=True)
    assert torch.equal(loaded["model"]["conv.weight"], new["model.conv.weight"])
    assert torch.equal(loaded["optimizer"]["state"][0]["exp_avg"], new["optimizer.state.0.exp_avg"])
    assert torch.equal(loaded["model"]["bn.running_var"], original["model"]["bn.running_var"])
    assert loaded["epoch"] == 3 and loaded["tags"] == ["fixture", None, True]
