"""What the real consumers read back from files tensorfile WRITES: `tensorfile update` of
committed fixtures (GGUF, ONNX, ExecuTorch `.pte`, `.pt2`, `torch.save`) with deterministic
replacement weights, `tensorfile convert` into `.pt` and `.ptd`, and `tensorfile externalize`
of ExecuTorch programs (new `.pte` files and their `.ptd`).

The outputs themselves are not committed (tensorfile made them); for each case the record
`tests/fixtures/rewritten/<case>.record.json` holds the sha256 of every output file, where
the replaced tensors' bytes lie in the input as the producing tool locates them, and every
tensor as the consumer reads it back from the output:
  GGUF      gguf-py's GGUFReader
  ONNX      onnx.load with numpy_helper.to_array (external data loaded)
  .pte      ExecuTorch's deserialize_pte_binary, and the program run in its runtime
  .ptd      ExecuTorch's FlatTensorSerializer, and a program run with it as its data file
  .pt2      torch.export.load
  .pt       torch.load(weights_only=True)
The Rust test `crates/tensorfile-cli/tests/commands/rewritten.rs` makes the same outputs
again, without any of these tools, and checks them against the records.

The replacement weights (`<case>.weights.safetensors`, committed) are written by safetensors'
numpy writer with `common.sample` seeded by `<case>/<tensor name>`.

Runs in the full environment (torch, executorch 1.5.1, onnx, gguf-py) with the tensorfile
binary $TENSORFILE_BIN, else target/release/tensorfile, else target/debug/tensorfile (built
when missing). A stale binary gives stale records: build it from the tree first.
  PYTHONPATH=scripts python -m fixturegen.rewritten tests/fixtures/rewritten
"""

import hashlib
import math
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

from .common import numpy_dtype, pretty_json, sample

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

# (case, input fixture relative to tests/fixtures, the output's file name, the tensors to
# replace). Tensors sharing a storage with a replaced one (tied weights) are read back
# changed; the others unchanged.
UPDATES = [
    ("gguf_plain", "gguf/metadata.gguf", "out.gguf", ["f32", "f16", "i64", "scalar", "/leading/slash"]),
    ("gguf_big_endian", "gguf/big_endian.gguf", "out.gguf", ["f32", "f64", "i16", "bf16"]),
    ("onnx_raw", "onnx/storage.onnx", "out.onnx", ["raw_f32", "raw_i64", "raw_float16", "raw_bool"]),
    ("onnx_external", "onnx/external/model.onnx", "model.onnx", ["w", "small"]),
    ("pte_constants", "executorch/constants.pte", "out.pte", ["constant.1", "constant.3"]),
    ("pte_mutable", "executorch/mutable.pte", "out.pte", ["acc", "steps", "constant.2"]),
    (
        "pte_named_data",
        "executorch/xnnpack.pte",
        "out.pte",
        ["192fe35252a40e8eb094f21b76f89562351b6a1202f236e284042fbfddd89f3f"],
    ),
    ("pt2_plain", "pytorch/plain.pt2", "out.pt2", ["fc1.weight", "fc2.bias"]),
    ("pt2_tied", "pytorch/tied.pt2", "out.pt2", ["embed.weight", "norm.bias"]),
    ("pt2_views", "pytorch/views.pt2", "out.pt2", ["rest", "window"]),
    ("pt_state_dict", "pytorch/state_dict.pt", "out.pt", ["first", "window"]),
    ("pt_checkpoint", "pytorch/checkpoint.pt", "out.pt", ["model.conv.weight", "optimizer.state.1.exp_avg", "extra.1.nested"]),
]

# (case, input fixture, the output's file name, further arguments of `convert`).
CONVERTS = [
    ("convert_pt", "safetensors/dtypes.safetensors", "out.pt", []),
    ("convert_pt_names", "safetensors/names.safetensors", "out.pt", []),
    ("convert_ptd", "executorch/external.ptd", "out.ptd", []),
    # complex64 left out: ExecuTorch's FlatTensorSerializer writes its scalar type (9) but
    # cannot read it back (its schema names complex types in a comment only: a KeyError).
    ("convert_ptd_dtypes", "safetensors/dtypes.safetensors", "out.ptd", ["--exclude", "complex64"]),
]


# (case, input programs, the output (a program, or "" for a folder of programs keeping their
# names), the .ptd).
EXTERNALIZES = [
    ("externalize_one", ["executorch/constants.pte"], "out.pte", "out.ptd"),
    ("externalize_two", ["executorch/constants.pte", "executorch/two_methods.pte"], "", "shared.ptd"),
]


def sha256(data) -> str:
    return hashlib.sha256(bytes(data)).hexdigest()


def binary() -> str:
    """$TENSORFILE_BIN, else the release or debug binary of this tree, built (debug) if neither
    is there."""
    if "TENSORFILE_BIN" in os.environ:
        return os.environ["TENSORFILE_BIN"]
    for profile in ["release", "debug"]:
        path = ROOT / "target" / profile / "tensorfile"
        if path.exists():
            return str(path)
    subprocess.run(["cargo", "build", "--locked", "-p", "tensorfile-cli"], check=True, cwd=ROOT)
    return str(ROOT / "target" / "debug" / "tensorfile")


def tensorfile(*args) -> None:
    subprocess.run([binary(), *[str(a) for a in args]], check=True, stdout=subprocess.DEVNULL)


# --- the replacement weights --------------------------------------------------------------


def input_tensors(path: Path) -> dict:
    """name -> (dtype name, shape) of the input's tensors as `tensorfile ls` lists them: what
    `update` asks of their replacements. (Where the producing tool has a dtype, it is the same;
    a `.pte`'s named data is a uint8 blob to ExecuTorch, which tensorfile types from the
    XNNPACK graph using it.)"""
    import json

    listed = subprocess.run([binary(), "ls", str(path), "--json"], check=True, capture_output=True).stdout
    return {t["name"]: (t["dtype"], t["shape"]) for t in json.loads(listed)}


def weights_for(case: str, names: list, tensors: dict) -> dict:
    """Deterministic replacements, each of the dtype and shape of the tensor it replaces."""
    arrays = {}
    for name in names:
        dtype, shape = tensors[name]
        arrays[name] = sample(f"{case}/{name}", numpy_dtype(dtype), tuple(shape))
    return arrays


# --- where the replaced bytes are, as the producing tools locate them ----------------------


# The element widths of the plain ggml types whose bytes a big-endian file swaps.
SWAPPED_WIDTHS = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I16": 2, "I32": 4, "I64": 8}


def gguf_ranges(path: Path, names: list) -> list:
    from gguf import GGUFEndian, GGUFReader

    r = GGUFReader(path)
    big = r.endianess == GGUFEndian.BIG
    ranges = []
    for t in r.tensors:
        if t.name in names:
            item = {"name": t.name, "file": None, "offset": int(t.data_offset), "nbytes": int(t.n_bytes)}
            width = SWAPPED_WIDTHS.get(t.tensor_type.name, 1)
            if big and width > 1:
                # Elements stored big-endian (BF16 too, which gguf-py hands out as bytes).
                item["swap"] = width
            ranges.append(item)
    return ranges


def onnx_ranges(path: Path, names: list) -> list:
    """raw_data found in the serialized model (asserted to occur once), external data where its
    `external_data` entry says."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    blob = path.read_bytes()
    ranges = []
    for t in model.graph.initializer:
        if t.name not in names:
            continue
        if t.data_location == onnx.TensorProto.EXTERNAL:
            info = {e.key: e.value for e in t.external_data}
            ranges.append({"name": t.name, "file": info["location"], "offset": int(info.get("offset", 0)),
                           "nbytes": int(info["length"])})
            continue
        raw = bytes(t.raw_data)
        at = blob.find(raw)
        assert at >= 0 and blob.find(raw, at + 1) < 0, f"{t.name}: its raw_data occurs more than once"
        ranges.append({"name": t.name, "file": None, "offset": at, "nbytes": len(raw)})
    return ranges


def pte_ranges(path: Path, names: list) -> list:
    """Constants at the constant segment's offsets, mutable state at the mutable segment's,
    named data in its own segment: each from the segment base of the extended header."""
    from executorch.exir._serialize._program import _get_extended_header
    from executorch.exir.schema import Tensor, TensorDataLocation

    from .executorch import DTYPES, ScalarType, raw_program

    blob = path.read_bytes()
    base = _get_extended_header(blob).segment_base_offset
    raw = raw_program(blob)
    ranges, seen = [], set()
    for plan in raw.execution_plan:
        for value in plan.values:
            t = value.val
            if not isinstance(t, Tensor) or t.data_buffer_idx == 0:
                continue
            info = t.extra_tensor_info
            if info is not None and info.location == TensorDataLocation.EXTERNAL:
                continue
            k = t.data_buffer_idx
            fqn = t.extra_tensor_info.fully_qualified_name if t.extra_tensor_info is not None else None
            if t.allocation_info is None:
                name, sub = f"constant.{k}", raw.constant_segment
            else:
                name, sub = fqn or f"mutable.{k}", raw.mutable_data_segments[0]
            if name not in names or name in seen:
                continue
            seen.add(name)
            nbytes = math.prod(t.sizes) * DTYPES[ScalarType(t.scalar_type)][1]
            offset = base + raw.segments[sub.segment_index].offset + sub.offsets[k]
            ranges.append({"name": name, "file": None, "offset": offset, "nbytes": nbytes})
    for entry in raw.named_data or []:
        if entry.key in names:
            segment = raw.segments[entry.segment_index]
            ranges.append({"name": entry.key, "file": None, "offset": base + segment.offset, "nbytes": segment.size})
    return ranges


def zip_views(path: Path, names: list) -> list:
    """For `.pt` and `.pt2`: the archive member holding each replaced tensor's storage (the one
    member whose bytes are the storage torch loads, asserted unique) and the tensor's view of
    it (offset and strides in elements)."""
    loaded = dict(pt_loaded(path) if path.suffix == ".pt" else pt2_loaded(path))
    with zipfile.ZipFile(path) as z:
        members = {i.filename: z.read(i) for i in z.infolist()}
    views = []
    for name in names:
        t = loaded[name]
        storage = bytes(t.untyped_storage())
        holders = [m for m, data in members.items() if data == storage]
        assert len(holders) == 1, f"{path.name}: {name}: its storage is in {holders}"
        views.append({"name": name, "member": holders[0], "itemsize": t.element_size(),
                      "storage_offset": t.storage_offset(), "shape": list(t.shape), "stride": list(t.stride())})
    return views


# --- the consumers ------------------------------------------------------------------------

GGUF_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64", "I8": "int8",
               "I16": "int16", "I32": "int32", "I64": "int64"}


def gguf_tensors(path: Path) -> list:
    """gguf-py's GGUFReader: the plain tensors (little-endian values) with their ggml type."""
    from gguf import GGUFEndian, GGUFReader

    from .gguf_files import little_endian

    r = GGUFReader(path)
    big = r.endianess == GGUFEndian.BIG
    out = []
    for t in r.tensors:
        if t.tensor_type.name not in GGUF_DTYPES:
            continue
        stored = t.data.tobytes()
        out.append({"name": t.name, "type": t.tensor_type.name,
                    "shape": [int(d) for d in reversed(t.shape.tolist())],
                    "sha256": sha256(little_endian(t, stored) if big else stored)})
    return out


def onnx_tensors(path: Path) -> list:
    """onnx.load (external data loaded) and numpy_helper: the dense tensors of every graph."""
    from .onnx_files import Records
    import onnx

    r = Records()
    r.graph(onnx.load(str(path)).graph, "")
    return [t for t in r.tensors if t["layout"] == "dense"]


def pte_tensors(path: Path) -> list:
    from executorch.exir._serialize._program import deserialize_pte_binary

    from .executorch import raw_program, tensor_records

    blob = path.read_bytes()
    return tensor_records(deserialize_pte_binary(blob), raw_program(blob), None, {})


def run_forward(pte: Path, data: Path | None, example: dict) -> str:
    """Runs `forward` of a freshly loaded program on the recorded example input in ExecuTorch's
    runtime; the sha256 of its outputs."""
    from executorch.runtime import Runtime

    from .executorch import example_input, tensor_bytes

    x = example_input(example["shape"], example["seed"])
    assert sha256(tensor_bytes(x)) == example["sha256"], "the example input is not the recorded one"
    loaded = Runtime.get().load_program(str(pte), data_path=str(data) if data else None)
    outputs = loaded.load_method("forward").execute([x])
    return sha256(b"".join(tensor_bytes(o) for o in outputs))


def pt2_loaded(path: Path) -> list:
    import torch

    ep = torch.export.load(str(path))
    return [(n, t) for n, t in [*ep.state_dict.items(), *ep.constants.items()] if isinstance(t, torch.Tensor)]


def pt2_tensors(path: Path) -> list:
    from .pytorch import tensor_record

    return [tensor_record(n, t) for n, t in pt2_loaded(path)]


def pt_loaded(path: Path) -> list:
    import torch

    from .pytorch import flatten

    return flatten(torch.load(str(path), weights_only=True))


def pt_tensors(path: Path) -> list:
    from .pytorch import tensor_record

    return [tensor_record(n, t) for n, t in pt_loaded(path)]


def ptd_tensors(path: Path) -> list:
    from .executorch import describe_ptd

    return describe_ptd(path)["tensors"]


def consumer(suffix: str) -> str:
    import torch

    versions = {"torch": torch.__version__.split("+")[0]}
    if suffix in (".pte", ".ptd"):
        import executorch.version

        versions["executorch"] = executorch.version.__version__.split("+")[0]
    if suffix == ".gguf":
        from .gguf_files import version

        return f"gguf-py {version()} GGUFReader"
    if suffix == ".onnx":
        import onnx

        return f"onnx {onnx.__version__} onnx.load + numpy_helper.to_array"
    return {
        ".pte": f"executorch {versions.get('executorch')} deserialize_pte_binary and its runtime",
        ".ptd": f"executorch {versions.get('executorch')} FlatTensorSerializer and its runtime",
        ".pt2": f"torch {versions['torch']} torch.export.load",
        ".pt": f"torch {versions['torch']} torch.load(weights_only=True)",
    }[suffix]


def read_back(path: Path) -> list:
    readers = {".gguf": gguf_tensors, ".onnx": onnx_tensors, ".pte": pte_tensors, ".pt2": pt2_tensors,
               ".pt": pt_tensors, ".ptd": ptd_tensors}
    tensors = readers[path.suffix](path)
    if path.suffix == ".gguf":
        tensors = [{"name": t["name"], "dtype": GGUF_DTYPES[t["type"]], "shape": t["shape"], "sha256": t["sha256"]}
                   for t in tensors]
    return [{k: t.get(k, "dense") for k in ("name", "dtype", "shape", "layout", "sha256")} for t in tensors]


def outputs_of(folder: Path) -> list:
    return [{"file": p.name, "size": p.stat().st_size, "sha256": sha256(p.read_bytes())}
            for p in sorted(folder.iterdir())]


# --- the cases ----------------------------------------------------------------------------


def update_case(out: Path, case: str, fixture: str, output: str, names: list) -> None:
    source = FIXTURES / fixture
    tensors = input_tensors(source)
    arrays = weights_for(case, names, tensors)
    weights = out / f"{case}.weights.safetensors"
    save_file(arrays, str(weights))
    new = {n: sha256(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()) for n, a in arrays.items()}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        dest = folder / output
        tensorfile("update", source, "--weights", weights, "-o", dest)
        got = read_back(dest)
        by_name = {t["name"]: t for t in got}
        before = {t["name"]: t for t in read_back(source)}
        assert set(by_name) == set(before), f"{case}: the consumer reads other tensors back"
        for name in names:
            assert by_name[name]["sha256"] == new[name], f"{case}: {name} is not what was given"
        changed = sorted(n for n in by_name if n not in names and by_name[n] != before[n])
        record = {
            "case": case,
            "command": "update",
            "input": fixture,
            "weights": weights.name,
            "output": output,
            "consumer": consumer(source.suffix),
            "outputs": outputs_of(folder),
        }
        if source.suffix in (".pt", ".pt2"):
            record["views"] = zip_views(source, names)
        else:
            ranges = {".gguf": gguf_ranges, ".onnx": onnx_ranges, ".pte": pte_ranges}[source.suffix](source, names)
            assert sorted(r["name"] for r in ranges) == sorted(names), f"{case}: ranges {ranges}"
            for r in ranges:
                if r["file"] is None:
                    del r["file"]
            record["ranges"] = ranges
        if changed:
            # Sharing a storage with a replaced tensor (tied weights).
            record["changed_with_them"] = changed
        if source.suffix == ".pte":
            import json

            program = json.loads((FIXTURES / f"{fixture}.expected.json").read_text())
            outcome = run_forward(dest, None, program["example_input"])
            if not program["delegates"]:
                record["runtime_forward_sha256"] = outcome
        record["tensors"] = got
    write(out / f"{case}.record.json", record)


def convert_case(out: Path, case: str, fixture: str, output: str, arguments: list) -> None:
    import json

    source = FIXTURES / fixture
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        dest = folder / output
        tensorfile("convert", source, dest, *arguments)
        record = {"case": case, "command": "convert", "input": fixture, "output": output, "arguments": arguments,
                  "consumer": consumer(dest.suffix), "outputs": outputs_of(folder), "tensors": read_back(dest)}
        if fixture == "executorch/external.ptd":
            # The program this data file was made for, run with ours in its place.
            program = json.loads((FIXTURES / "executorch" / "external.pte.expected.json").read_text())
            outcome = run_forward(FIXTURES / "executorch" / "external.pte", dest, program["example_input"])
            assert outcome == program["expected_output_sha256"], f"{case}: external.pte computes otherwise"
            record["runtime_forward_sha256"] = outcome
    write(out / f"{case}.record.json", record)


def externalize_case(out: Path, case: str, fixtures: list, output: str, data: str) -> None:
    """`tensorfile externalize`: each new program read with the new .ptd by
    deserialize_pte_binary, and run with it in ExecuTorch's runtime, where it must compute what
    the program it came from computes; the .ptd read by FlatTensorSerializer."""
    import json

    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer

    from .executorch import raw_program, tensor_records

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        ptd = folder / data
        tensorfile("externalize", *[FIXTURES / f for f in fixtures], "-o", folder / output if output else folder,
                   "--data", ptd)
        payload = FlatTensorSerializer().deserialize(ptd.read_bytes())
        programs = []
        for fixture in fixtures:
            program = folder / (output or Path(fixture).name)
            blob = program.read_bytes()
            original = json.loads((FIXTURES / f"{fixture}.expected.json").read_text())
            outcome = run_forward(program, ptd, original["example_input"])
            assert outcome == original["expected_output_sha256"], f"{case}: {program.name} computes otherwise"
            tensors = tensor_records(deserialize_pte_binary(blob), raw_program(blob), payload, {})
            programs.append({"file": program.name, "runtime_forward_sha256": outcome,
                             "tensors": [{k: t[k] for k in ("name", "dtype", "shape", "layout", "sha256")}
                                         for t in tensors]})
        record = {"case": case, "command": "externalize", "inputs": fixtures, "output": output, "data": data,
                  "consumer": consumer(".pte"), "outputs": outputs_of(folder), "programs": programs,
                  "tensors": read_back(ptd)}
    write(out / f"{case}.record.json", record)


def write(path: Path, record: dict) -> None:
    path.write_text(pretty_json(record) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)}", flush=True)


def generate(out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for case in UPDATES:
        update_case(out, *case)
    for case in CONVERTS:
        convert_case(out, *case)
    for case in EXTERNALIZES:
        externalize_case(out, *case)


if __name__ == "__main__":
    generate(Path(sys.argv[1]).resolve())
