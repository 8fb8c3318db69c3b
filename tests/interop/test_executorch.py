"""Interop of the `tensorfile` binary with ExecuTorch (pip `executorch==1.5.1`, `torch`): it must
read every committed `.pte`/`.ptd` fixture as ExecuTorch's own deserializers recorded it, and
the programs and data files it writes must load in ExecuTorch's runtime and compute what the
originals compute, bit for bit.

Needs the full tool set (`torch`, `executorch`, `torchvision`, `safetensors`, `numpy`,
`ztensor`); skipped where `executorch` cannot be imported (the light environment of
`scripts/test`). Run by `scripts/interop`, which uses the full environment when it has one
(`scripts/interop --full` makes it). The binary is $TENSORFILE_BIN, else
target/release/tensorfile or target/debug/tensorfile.

Runtime outputs are compared with outputs computed in this process from the original files,
not with the records, so that XNNPACK's CPU-specific kernels cannot make a test flaky.
"""

import hashlib
import json
import math
import struct
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "executorch",
    reason="executorch is not installed: these tests need the full environment (scripts/interop --full)",
)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from executorch.exir._serialize._program import deserialize_pte_binary  # noqa: E402
from executorch.exir.scalar_type import ScalarType  # noqa: E402
from executorch.exir.schema import Tensor, TensorDataLocation  # noqa: E402
from executorch.extension.flat_tensor.serialize.serialize import (  # noqa: E402
    FlatTensorSerializer,
    _deserialize_to_flat_tensor,
)
from executorch.runtime import Runtime  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "executorch"

# ExecuTorch's own deprecation warnings (importlib.resources) on every deserialization.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# The fixture models, rebuilt in eager torch with the seed they were exported with.
sys.path.insert(0, str(ROOT / "scripts"))
from fixturegen import executorch as models  # noqa: E402


from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

# Record dtype names -> (torch dtype, bytes per element, ExecuTorch ScalarType).
DTYPES = {
    "float64": (torch.float64, 8, ScalarType.DOUBLE),
    "float32": (torch.float32, 4, ScalarType.FLOAT),
    "float16": (torch.float16, 2, ScalarType.HALF),
    "bfloat16": (torch.bfloat16, 2, ScalarType.BFLOAT16),
    "int64": (torch.int64, 8, ScalarType.LONG),
    "int32": (torch.int32, 4, ScalarType.INT),
    "int16": (torch.int16, 2, ScalarType.SHORT),
    "int8": (torch.int8, 1, ScalarType.CHAR),
    "uint8": (torch.uint8, 1, ScalarType.BYTE),
    "bool": (torch.bool, 1, ScalarType.BOOL),
}

# The .pte fixtures whose every tensor is dense (no named data blobs, nothing external).
DENSE_ONLY = ["constants.pte", "dtypes.pte", "mutable.pte", "two_methods.pte"]


# --- running tensorfile -------------------------------------------------------------------


def tensorfile(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


def ok(*args) -> subprocess.CompletedProcess:
    """`tensorfile ARGS`, which must succeed."""
    done = tensorfile(*args)
    shown = " ".join(str(a.name) if isinstance(a, Path) else str(a) for a in args)
    assert done.returncode == 0, f"tensorfile {shown}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    return done


def ls_json(path: Path, data: Path | None = None) -> list:
    extra = ["--data", data] if data is not None else []
    return json.loads(ok("ls", path, *extra, "--json").stdout)


def safe_name(name: str) -> str:
    """The file name `extract` gives a tensor: `/ \\ NUL %` percent-encoded, a leading `.` too."""
    if not name:
        return "%"
    escaped = {"/": "%2F", "\\": "%5C", "\0": "%00", "%": "%25"}
    out = "".join(escaped.get(c, c) for c in name)
    return "%2E" + out[1:] if out.startswith(".") else out


def extracted_bytes(directory: Path, name: str, dtype: str, layout: str) -> tuple[bytes, list | None]:
    """The bytes `extract` wrote for one tensor, and its shape when it wrote a .npy file."""
    base = directory / safe_name(name)
    if layout == "blob":
        if (directory / f"{base.name}.bin").is_file():
            return (directory / f"{base.name}.bin").read_bytes(), None
        # A blob its XNNPACK payload types: written as that dtype (.npy, or .<dtype>.bin).
        typed = sorted(directory.glob(f"{base.name}.*.bin"))
        if typed:
            return typed[0].read_bytes(), None
    npy = directory / f"{base.name}.npy"
    if npy.is_file():
        array = np.load(npy)
        return np.ascontiguousarray(array).tobytes(), list(array.shape)
    return (directory / f"{base.name}.{dtype}.bin").read_bytes(), None


# --- fixtures and records -----------------------------------------------------------------


def record_of(path: Path) -> dict:
    return json.loads(path.with_name(path.name + ".expected.json").read_text(encoding="utf-8"))


def pte_fixtures() -> list:
    return sorted(FIXTURES.glob("*.pte"))


def ptd_fixtures() -> list:
    return sorted(FIXTURES.glob("*.ptd"))


def test_the_fixtures_are_all_there():
    """The parametrized tests below would pass on no fixtures at all."""
    assert len(pte_fixtures()) >= 11, "programs missing: run scripts/fixtures"
    assert len(ptd_fixtures()) >= 2, "named data files missing: run scripts/fixtures"
    for path in pte_fixtures() + ptd_fixtures():
        assert record_of(path)["file"] == path.name, path
        data = record_of(path).get("data_file")
        assert data is None or (FIXTURES / data).is_file(), f"{path}: its data file {data} is missing"
    assert sum(1 for p in pte_fixtures() if record_of(p)["delegates"]) >= 3, "the XNNPACK programs"


def data_of(path: Path) -> Path | None:
    data = record_of(path).get("data_file")
    return FIXTURES / data if data else None


def numel(shape) -> int:
    return math.prod(shape)


def sha256(data) -> str:
    return hashlib.sha256(bytes(data)).hexdigest()


def names_by_source(rows: list, source: str) -> list:
    return sorted(r["name"] for r in rows if r.get("source") == source)


# --- the runtime --------------------------------------------------------------------------


def example_input(described: dict) -> torch.Tensor:
    """The recorded example input: torch.randn(shape) from a generator seeded with `seed`."""
    x = torch.randn(described["shape"], generator=torch.Generator().manual_seed(described["seed"]))
    assert sha256(tensor_bytes(x)) == described["sha256"], "this torch draws other example inputs"
    return x


def tensor_bytes(t: torch.Tensor) -> bytes:
    return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def run(pte: Path, method: str, x: torch.Tensor, data: Path | None = None) -> list:
    """The outputs of `method` of a freshly loaded program."""
    program = Runtime.get().load_program(str(pte), data_path=str(data) if data is not None else None)
    loaded = program.load_method(method)
    assert loaded is not None, f"{pte.name} has no method {method}"
    return list(loaded.execute([x]))


def output_bytes(outputs: list) -> bytes:
    return b"".join(tensor_bytes(o) for o in outputs)


def method_inputs(record: dict) -> dict:
    """Method name -> its example input, for every method of a record."""
    return {m["name"]: example_input(m["example_input"]) for m in record["methods"]}


def assert_runs_like(original: Path, original_data: Path | None, new: Path, new_data: Path | None) -> None:
    """Every method of `new` (with `new_data`) gives the bytes `original` gives."""
    for method, x in method_inputs(record_of(original)).items():
        want = output_bytes(run(original, method, x, original_data))
        got = output_bytes(run(new, method, x, new_data))
        assert got == want, f"{new.name}: {method} computes other outputs than {original.name}"


# --- (a) every fixture as its producer recorded it ----------------------------------------


def fixture_id(path: Path) -> str:
    return path.name


@pytest.mark.parametrize("path", pte_fixtures(), ids=fixture_id)
def test_records_match_the_runtime(path):
    """The committed records agree with this runtime (guards the fixtures, not tensorfile)."""
    record = record_of(path)
    if "example_input" not in record:
        # Only a record that says why may lack the runtime results.
        pytest.skip(record["note"])
    if "XnnpackBackend" in {d["id"] for d in record["delegates"]}:
        pytest.skip("XNNPACK's kernels depend on the CPU: its outputs are compared live instead")
    for method in record["methods"]:
        outputs = run(path, method["name"], example_input(method["example_input"]), data_of(path))
        assert sha256(output_bytes(outputs)) == method["expected_output_sha256"], method["name"]


@pytest.mark.parametrize("path", pte_fixtures(), ids=fixture_id)
def test_ls_agrees_with_the_record(path):
    record = record_of(path)
    rows = ls_json(path, data_of(path))
    listed = {row["name"]: row for row in rows}
    for source in ("constant", "mutable", "external"):
        want = sorted(t["name"] for t in record["tensors"] if t["source"] == source)
        assert names_by_source(rows, source) == want, source
    # With --data, the .ptd's own named data may be listed too: the program's must be.
    for t in record["tensors"]:
        row = listed.get(t["name"])
        assert row is not None, f"{t['name']} not listed"
        blob = t["layout"] == "blob"
        assert row.get("source") == t["source"], t["name"]
        typed = blob and row["kind"] == "tensor" and "delegate" in (row.get("extra") or {})
        assert row["kind"] == ("blob" if blob and not typed else "tensor"), t["name"]
        if typed:
            # A blob its XNNPACK payload types (dtype and shape; tests/library/xnnpack.rs).
            assert row["nbytes"] == t["shape"][0], t["name"]
        elif not blob:
            assert (row["dtype"], row["shape"]) == (t["dtype"], t["shape"]), t["name"]
            assert row["nbytes"] == numel(t["shape"]) * DTYPES[t["dtype"]][1], t["name"]
        else:
            assert row["nbytes"] == t["shape"][0], t["name"]


@pytest.mark.parametrize("path", pte_fixtures(), ids=fixture_id)
def test_extract_gives_the_recorded_bytes(path, tmp_path):
    record = record_of(path)
    data = data_of(path)
    ok("extract", path, *(["--data", data] if data else []), "-o", tmp_path)
    for t in record["tensors"]:
        got, shape = extracted_bytes(tmp_path, t["name"], t["dtype"], t["layout"])
        assert sha256(got) == t["sha256"], t["name"]
        if shape is not None and t["layout"] != "blob":
            assert shape == t["shape"], t["name"]


@pytest.mark.parametrize("path", [p for p in pte_fixtures() if record_of(p)["delegates"]], ids=fixture_id)
def test_extract_delegates_gives_every_payload(path, tmp_path):
    ok("extract", path, "--delegates", "-o", tmp_path)
    written = sorted(sha256(f.read_bytes()) for f in tmp_path.iterdir() if f.is_file())
    assert written == sorted(d["sha256"] for d in record_of(path)["delegates"])


@pytest.mark.parametrize("path", ptd_fixtures(), ids=fixture_id)
def test_ptd_ls_and_extract_agree_with_the_record(path, tmp_path):
    record = record_of(path)
    rows = {row["name"]: row for row in ls_json(path)}
    assert sorted(rows) == sorted(t["name"] for t in record["tensors"])
    ok("extract", path, "-o", tmp_path)
    for t in record["tensors"]:
        row = rows[t["name"]]
        if t["layout"] == "blob":
            assert (row["kind"], row["nbytes"]) == ("blob", t["shape"][0]), t["name"]
        else:
            assert (row["kind"], row["dtype"], row["shape"]) == ("tensor", t["dtype"], t["shape"]), t["name"]
        got, _ = extracted_bytes(tmp_path, t["name"], t["dtype"], t["layout"])
        assert sha256(got) == t["sha256"], t["name"]


def test_external_tensors_need_the_data_file():
    """Without --data, external tensors are left out or listed with an error: never with data."""
    path = FIXTURES / "external.pte"
    external = {t["name"] for t in record_of(path)["tensors"] if t["source"] == "external"}
    for row in ls_json(path):
        if row["name"] in external:
            assert row.get("error"), f"{row['name']} listed without its data file and without an error"


@pytest.mark.parametrize("path", pte_fixtures(), ids=fixture_id)
def test_info_and_dump(path):
    record = record_of(path)
    info = json.loads(ok("info", path, "--json").stdout)
    assert isinstance(info, dict)
    dumped = json.loads(ok("dump", path).stdout)
    plans = dumped["execution_plan"]
    assert [p["name"] for p in plans] == [m["name"] for m in record["methods"]]
    for plan, method in zip(plans, record["methods"]):
        assert [d["id"] for d in plan.get("delegates") or []] == method["delegates"]
        operators = [f"{o['name']}.{o['overload']}" if o.get("overload") else o["name"] for o in plan.get("operators") or []]
        assert operators == method["operators"]
    if any(t["source"] == "external" for t in record["tensors"]):
        assert "EXTERNAL" in json_strings(dumped), "enums are shown by name"


def json_strings(value) -> set:
    if isinstance(value, dict):
        return set().union(*(json_strings(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(json_strings(v) for v in value)) if value else set()
    return {value} if isinstance(value, str) else set()


# --- (b) .ptd files tensorfile writes load in the runtime ----------------------------------


@pytest.mark.parametrize("route", ["ptd", "safetensors", "zt"])
def test_external_ptd_converted_loads_in_the_runtime(route, tmp_path):
    """external.ptd -> [route] -> .ptd: the runtime runs external.pte with it, bit-identically."""
    pte, ptd = FIXTURES / "external.pte", FIXTURES / "external.ptd"
    if route == "ptd":
        new = tmp_path / "new.ptd"
        ok("convert", ptd, new)
    else:
        middle, new = tmp_path / f"weights.{route}", tmp_path / "new.ptd"
        ok("convert", ptd, middle)
        if route == "safetensors":
            with safe_open(str(middle), framework="pt") as f:
                got = {name: sha256(tensor_bytes(f.get_tensor(name))) for name in f.keys()}
            assert got == {t["name"]: t["sha256"] for t in record_of(ptd)["tensors"]}
        ok("convert", middle, new)
    assert_same_named_data(new, ptd)
    assert_runs_like(pte, ptd, pte, new)


def test_xnnpack_blobs_survive_ptd_to_ptd(tmp_path):
    """Blobs without a tensor layout (XNNPACK's sha256-keyed weights) stay loadable."""
    pte, ptd = FIXTURES / "xnnpack_external.pte", FIXTURES / "xnnpack_external.ptd"
    new = tmp_path / "new.ptd"
    ok("convert", ptd, new)
    assert_same_named_data(new, ptd)
    assert_runs_like(pte, ptd, pte, new)


def assert_same_named_data(new: Path, original: Path) -> None:
    """Same keys, bytes and tensor layouts (scalar type, sizes, dim order) in both .ptd files."""
    want, got = named_data(original), named_data(new)
    assert sorted(got) == sorted(want)
    for key, (data, layout) in want.items():
        assert got[key][0] == data, key
        assert got[key][1] == layout, key


def named_data(path: Path) -> dict:
    """key -> (bytes, (scalar type, sizes, dim order) or None), as FlatTensorSerializer reads."""
    payload = FlatTensorSerializer().deserialize(path.read_bytes())
    out = {}
    for key, entry in payload.named_data.items():
        layout = entry.tensor_layout
        described = None
        if layout is not None:
            described = (ScalarType(layout.scalar_type), list(layout.sizes), list(layout.dim_order))
        out[key] = (bytes(payload.buffers[entry.buffer_index]), described)
    return out


# --- pte -> safetensors, and update ---------------------------------------------------------


@pytest.mark.parametrize("name", DENSE_ONLY)
def test_pte_converts_to_safetensors(name, tmp_path):
    path, out = FIXTURES / name, tmp_path / "weights.safetensors"
    ok("convert", path, out)
    with safe_open(str(out), framework="pt") as f:
        got = {key: f.get_tensor(key) for key in f.keys()}
    record = record_of(path)
    assert sorted(got) == sorted(t["name"] for t in record["tensors"])
    for t in record["tensors"]:
        tensor = got[t["name"]]
        assert (str(tensor.dtype).removeprefix("torch."), list(tensor.shape)) == (t["dtype"], t["shape"]), t["name"]
        assert sha256(tensor_bytes(tensor)) == t["sha256"], t["name"]


@pytest.mark.parametrize("name", ["constants.pte", "dtypes.pte"])
def test_pte_converts_to_ptd(name, tmp_path):
    """Each tensor under its `ls` name, with its bytes and a tensor layout of its dtype and shape."""
    path, out = FIXTURES / name, tmp_path / "weights.ptd"
    ok("convert", path, out)
    got = named_data(out)
    record = record_of(path)
    assert sorted(got) == sorted(t["name"] for t in record["tensors"])
    for t in record["tensors"]:
        data, layout = got[t["name"]]
        assert sha256(data) == t["sha256"], t["name"]
        assert layout == (DTYPES[t["dtype"]][2], t["shape"], list(range(len(t["shape"])))), t["name"]
    assert_ptd_layout(out)


@pytest.mark.parametrize("name", ["dtypes.pte", "mutable.pte", "two_methods.pte"])
def test_update_with_its_own_weights_changes_nothing(name, tmp_path):
    path, weights, out = FIXTURES / name, tmp_path / "weights.safetensors", tmp_path / "out.pte"
    ok("convert", path, weights)
    ok("update", path, "--weights", weights, "-o", out)
    assert_runs_like(path, None, out, None)


def test_update_runs_like_eager_torch_with_the_new_weights(tmp_path):
    """constants.pte: every constant is a parameter of ConvLinear (each record entry has an
    `fqn`). Doubling them through `update` must compute what eager torch computes with its
    state_dict doubled."""
    path = FIXTURES / "constants.pte"
    record = record_of(path)
    constants = [t for t in record["tensors"] if t["source"] == "constant"]
    assert constants and all("fqn" in t for t in constants), "constants.pte should map every constant to an fqn"
    model = models.build("conv_linear")
    state = model.state_dict()
    for t in constants:
        assert sha256(tensor_bytes(state[t["fqn"]])) == t["sha256"], "the model rebuilt differently"
    new_weights = {t["name"]: state[t["fqn"]] * 2 for t in constants if t["dtype"].startswith("float")}
    weights, out = tmp_path / "doubled.safetensors", tmp_path / "doubled.pte"
    save_file({k: v.contiguous() for k, v in new_weights.items()}, str(weights))
    ok("update", path, "--weights", weights, "-o", out)

    # The new program holds the new bytes under the same names.
    rows = {row["name"]: row for row in ls_json(out)}
    assert sorted(r for r in rows if rows[r].get("source") == "constant") == sorted(t["name"] for t in constants)
    extracted = tmp_path / "extracted"
    ok("extract", out, "-o", extracted)
    for name, tensor in new_weights.items():
        assert extracted_bytes(extracted, name, "float32", "dense")[0] == tensor_bytes(tensor), name

    model.load_state_dict({k: v * 2 for k, v in state.items()})
    x = example_input(record["example_input"])
    with torch.no_grad():
        want = model(x)
    (got,) = run(out, "forward", x)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (got, want)
    # And the original still computes the original.
    assert not torch.allclose(run(path, "forward", x)[0], want, rtol=1e-5, atol=1e-6)


def test_update_refuses_a_wrong_shape(tmp_path):
    path, weights = FIXTURES / "constants.pte", tmp_path / "bad.safetensors"
    save_file({"constant.1": torch.zeros(3, 3)}, str(weights))
    assert tensorfile("update", path, "--weights", weights, "-o", tmp_path / "out.pte").returncode != 0
    assert not (tmp_path / "out.pte").exists()


# --- (d) externalize -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["constants.pte", "dtypes.pte", "mutable.pte"])
def test_externalized_program_runs_like_the_original(name, tmp_path):
    path, out, data = FIXTURES / name, tmp_path / name, tmp_path / "weights.ptd"
    ok("externalize", path, "-o", out, "--data", data)
    assert_runs_like(path, None, out, data)
    # The constants moved; everything else stayed.
    record = record_of(path)
    rows = ls_json(out, data)
    assert names_by_source(rows, "constant") == []
    assert len(names_by_source(rows, "external")) == sum(t["source"] == "constant" for t in record["tensors"])
    assert names_by_source(rows, "mutable") == sorted(t["name"] for t in record["tensors"] if t["source"] == "mutable")
    assert_ptd_layout(data)


def test_two_programs_share_one_ptd(tmp_path):
    """constants.pte and two_methods.pte hold the same four weights: the shared .ptd stores
    each once, and both new programs run like their originals."""
    a, b = FIXTURES / "constants.pte", FIXTURES / "two_methods.pte"
    out, shared = tmp_path / "out", tmp_path / "shared.ptd"
    ok("externalize", a, b, "-o", out, "--data", shared)
    for original in (a, b):
        assert_runs_like(original, None, out / original.name, shared)
    distinct = {t["sha256"] for p in (a, b) for t in record_of(p)["tensors"] if t["source"] == "constant"}
    payload = FlatTensorSerializer().deserialize(shared.read_bytes())
    assert len({sha256(bytes(buf)) for buf in payload.buffers}) == len(distinct)
    assert len(payload.buffers) == len(distinct), "identical tensors must be stored once"
    single = tmp_path / "single.ptd"
    ok("externalize", a, "-o", tmp_path / "single.pte", "--data", single)
    assert shared.stat().st_size < 2 * single.stat().st_size
    assert_ptd_layout(shared)


# --- (e) .ptd written from safetensors ------------------------------------------------------


def test_ptd_from_safetensors_reads_back_in_flat_tensor_serializer(tmp_path):
    g = torch.Generator().manual_seed(99)
    tensors = {
        "layers.0.weight": torch.randn(4, 3, generator=g),
        "layers.0.bias": torch.randn(4, generator=g).half(),
        "norm.bf16": torch.randn(2, 2, 2, generator=g).bfloat16(),
        "double": torch.randn(3, generator=g, dtype=torch.float64),
        "ids": torch.randint(-(2**40), 2**40, (5,), generator=g),
        "int32": torch.randint(-1000, 1000, (2, 3), generator=g, dtype=torch.int32),
        "int8": torch.randint(-128, 128, (6,), generator=g, dtype=torch.int8),
        "bytes": torch.randint(0, 256, (7,), generator=g, dtype=torch.uint8),
        "mask": torch.randint(0, 2, (3, 3), generator=g).bool(),
        "scalar": torch.tensor(1.5),
        "tied.a": torch.arange(8, dtype=torch.float32),
        "tied.b": torch.arange(8, dtype=torch.float32),
    }
    src, out = tmp_path / "in.safetensors", tmp_path / "out.ptd"
    save_file(tensors, str(src))
    ok("convert", src, out)
    got = named_data(out)
    assert sorted(got) == sorted(tensors)
    for name, tensor in tensors.items():
        data, layout = got[name]
        dtype = str(tensor.dtype).removeprefix("torch.")
        assert data == tensor_bytes(tensor), name
        assert layout == (DTYPES[dtype][2], list(tensor.shape), list(range(tensor.dim()))), name
    assert_ptd_layout(out)
    payload = FlatTensorSerializer().deserialize(out.read_bytes())
    assert len(payload.buffers) == len(tensors) - 1, "tied.a and tied.b hold the same bytes: one segment"


def assert_ptd_layout(path: Path) -> None:
    """Laid out as FlatTensorSerializer lays it out: FH01 header of 40 bytes at byte 8, the
    flatbuffer region [0, 48 + flatbuffer_size), segment_base_offset and every segment offset
    multiples of 128, the file ending at the end of the segment data."""
    blob = path.read_bytes()
    assert blob[4:8] == b"FT01" and blob[8:12] == b"FH01", path.name
    length, fb_offset, fb_size, base, data_size = struct.unpack_from("<IQQQQ", blob, 12)
    assert length == 40 and fb_offset == 48, (length, fb_offset)
    assert base % 128 == 0 and base >= fb_offset + fb_size, base
    assert len(blob) == base + data_size, (len(blob), base, data_size)
    # The deserialized payload drops the segment offsets: read them from the flatbuffer.
    flat = _deserialize_to_flat_tensor(blob[: fb_offset + fb_size])
    for segment in flat.segments:
        assert segment.offset % 128 == 0, segment
        assert segment.offset + segment.size <= data_size, segment


# --- the naming contract's premises ----------------------------------------------------------


def test_external_tensors_carry_fqns_and_constants_none():
    """The naming contract's premise, checked on the fixture: EXTERNAL tensors carry their FQN
    and the .ptd holds exactly those keys; in-file constants carry no name at all."""
    external = deserialize_pte_binary((FIXTURES / "external.pte").read_bytes()).program
    keys = set(named_data(FIXTURES / "external.ptd"))
    fqns = {
        v.val.extra_tensor_info.fully_qualified_name
        for v in external.execution_plan[0].values
        if isinstance(v.val, Tensor)
        and v.val.extra_tensor_info is not None
        and v.val.extra_tensor_info.location == TensorDataLocation.EXTERNAL
    }
    assert fqns == keys
    constants = deserialize_pte_binary((FIXTURES / "constants.pte").read_bytes()).program
    for v in constants.execution_plan[0].values:
        if isinstance(v.val, Tensor) and v.val.data_buffer_idx > 0:
            assert v.val.extra_tensor_info is None

