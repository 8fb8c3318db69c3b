"""ExecuTorch fixtures: `.pte` programs (and `.ptd` data files) exported with torch and
executorch from small deterministic models, each with a record of what ExecuTorch's own
deserializers read back (`deserialize_pte_binary`, `FlatTensorSerializer().deserialize`) and
of what its runtime (`executorch.runtime`) computes for a recorded example input.

The model builders (`build`) are imported by tests/interop/test_executorch.py too, which
rebuilds a fixture's model in eager torch with the same seed.

Naming of the tensors a `.pte` holds (the contract tensorfile implements):
- `constant.<k>`: a Tensor value with `data_buffer_idx = k > 0`, no `allocation_info` and not
  EXTERNAL, stored in the constant segment (`constant_segment.offsets[k]`);
- mutable initial state (`data_buffer_idx = k > 0` and an `allocation_info`, bytes at
  `mutable_data_segments[0].offsets[k]`): its `extra_tensor_info.fully_qualified_name`, else
  `mutable.<k>`;
- an EXTERNAL tensor: its fully qualified name, the key of its bytes in the `.ptd`;
- named data: its key, as a blob (uint8, shape [nbytes]).
Values sharing one `k` are listed once: dtype and shape from the first Tensor using it, walking
the methods in order and their values in order.
"""

import hashlib
import json
import math
import shutil
import tempfile
import warnings
from pathlib import Path

import executorch
import executorch.version
import torch
import torchvision
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.exir import ExecutorchBackendConfig, to_edge, to_edge_transform_and_lower
from executorch.exir._serialize._flatbuffer_program import _flatbuffer_to_program, _program_to_flatbuffer
from executorch.exir._serialize._program import _get_extended_header, deserialize_pte_binary
from executorch.exir.passes.external_constants_pass import delegate_external_constants_pass_unlifted
from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass
from executorch.exir.scalar_type import ScalarType
from executorch.exir.schema import DataLocation, SubsegmentOffsets, Tensor, TensorDataLocation
from executorch.extension.flat_tensor.serialize.serialize import FlatTensorSerializer
from executorch.runtime import Runtime

from .common import pretty_json


def version(text: str) -> str:
    """`2.15.0+cu132` -> `2.15.0`: the build tag says nothing about the file format."""
    return text.split("+")[0]


PRODUCER = f"executorch {version(executorch.version.__version__)} + torch {version(torch.__version__)}"

# ExecuTorch's ScalarType -> (record dtype name, bytes per element).
DTYPES = {
    ScalarType.BYTE: ("uint8", 1),
    ScalarType.CHAR: ("int8", 1),
    ScalarType.SHORT: ("int16", 2),
    ScalarType.INT: ("int32", 4),
    ScalarType.LONG: ("int64", 8),
    ScalarType.HALF: ("float16", 2),
    ScalarType.FLOAT: ("float32", 4),
    ScalarType.DOUBLE: ("float64", 8),
    ScalarType.COMPLEX64: ("complex64", 8),
    ScalarType.COMPLEX128: ("complex128", 16),
    ScalarType.BOOL: ("bool", 1),
    ScalarType.BFLOAT16: ("bfloat16", 2),
    ScalarType.FLOAT8E5M2: ("float8_e5m2", 1),
    ScalarType.FLOAT8E4M3FN: ("float8_e4m3fn", 1),
    ScalarType.UINT16: ("uint16", 2),
    ScalarType.UINT32: ("uint32", 4),
    ScalarType.UINT64: ("uint64", 8),
}

# The seed every model is built with (torch.manual_seed before construction).
MODEL_SEED = 20250101


# --- the models ---------------------------------------------------------------------------


class ConvLinear(torch.nn.Module):
    """Conv 3->8 (3x3), ReLU, global mean, Linear 8->4: four float32 constants, every one a
    parameter (so each maps to a state_dict key)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(x).relu().mean((2, 3)))

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x).relu()


class Encode(torch.nn.Module):
    """A second entry point into a ConvLinear, for the two-method program."""

    def __init__(self, inner: ConvLinear) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner.encode(x)


class Counter(torch.nn.Module):
    """Two mutable buffers with an initial state (float32 accumulator, int64 step count) and a
    Linear; every call adds its input to `acc` and 1 to `steps`."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("acc", torch.linspace(-1.5, 1.5, 4))
        self.register_buffer("steps", torch.tensor([3], dtype=torch.int64))
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.acc.add_(x)
        self.steps.add_(1)
        return self.fc(self.acc) * self.steps


class Dtypes(torch.nn.Module):
    """Buffers of many dtypes, each summed into the output as float32. `twin_a` and `twin_b`
    hold the same bytes, so ExecuTorch stores them once (one constant index, two FQNs)."""

    SCALES = {"i8": 2.0**-7, "u8": 2.0**-8, "i16": 2.0**-15, "i32": 2.0**-31, "i64": 2.0**-40}

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(7)
        self.register_buffer("f32", torch.randn(2, 3, generator=g))
        self.register_buffer("f64", torch.randn(3, generator=g, dtype=torch.float64))
        self.register_buffer("f16", torch.randn(2, 2, generator=g).half())
        self.register_buffer("bf16", torch.randn(3, 2, generator=g).bfloat16())
        self.register_buffer("i8", torch.randint(-128, 128, (5,), generator=g, dtype=torch.int8))
        self.register_buffer("u8", torch.randint(0, 256, (2, 3), generator=g, dtype=torch.uint8))
        self.register_buffer("i16", torch.randint(-32768, 32768, (4,), generator=g, dtype=torch.int16))
        self.register_buffer("i32", torch.randint(-(2**31), 2**31 - 1, (3, 1), generator=g, dtype=torch.int32))
        self.register_buffer("i64", torch.randint(-(2**40), 2**40, (2,), generator=g, dtype=torch.int64))
        self.register_buffer("flags", torch.randint(0, 2, (7,), generator=g).bool())
        self.register_buffer("scalar", torch.tensor(0.25))
        self.register_buffer("rank4", torch.randn(1, 2, 1, 3, generator=g))
        twin = torch.randn(3, generator=g)
        self.register_buffer("twin_a", twin.clone())
        self.register_buffer("twin_b", twin.clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x
        for name, buf in self.named_buffers():
            # Scaled so that every buffer moves the output by about 1.
            out = out + buf.to(torch.float32).sum() * self.SCALES.get(name, 1.0)
        return out


def mobilenet() -> torch.nn.Module:
    """torchvision's MobileNetV2 at width 0.35 with 10 classes (1.7 MB of float32), its
    BatchNorm statistics and affine parameters randomized so that none are trivial."""
    model = torchvision.models.mobilenet_v2(weights=None, width_mult=0.35, num_classes=10)
    g = torch.Generator().manual_seed(11)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            c = module.num_features
            module.weight.data = torch.rand(c, generator=g) + 0.5
            module.bias.data = torch.randn(c, generator=g) * 0.1
            module.running_mean = torch.randn(c, generator=g) * 0.1
            module.running_var = torch.rand(c, generator=g) + 0.5
    return model


MODELS = {
    "conv_linear": ConvLinear,
    "counter": Counter,
    "dtypes": Dtypes,
    "mobilenet_v2": mobilenet,
}


def build(model: str) -> torch.nn.Module:
    """The fixture model `model` in eval mode, its weights made from MODEL_SEED."""
    torch.manual_seed(MODEL_SEED)
    return MODELS[model]().eval()


# Inputs: `torch.randn(shape, generator=torch.Generator().manual_seed(seed))`, float32.
INPUTS = {
    "conv_linear": ([1, 3, 8, 8], 1),
    "encode": ([1, 3, 6, 6], 2),
    "counter": ([4], 3),
    "dtypes": ([4], 4),
    "mobilenet_v2": ([1, 3, 96, 96], 5),
}


def example_input(shape: list, seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


# --- the fixtures -------------------------------------------------------------------------


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        # Said of every mutated buffer, including those given an initial state on purpose.
        warnings.filterwarnings("ignore", message="Mutation on a buffer")
        generate_all(out)


def generate_all(out: Path) -> None:
    conv_linear = build("conv_linear")
    x = example_input(*INPUTS["conv_linear"])

    # Constants in the .pte's constant segment; no delegate.
    program = lower(export(conv_linear, x))
    write_fixture(out / "constants.pte", program, conv_linear, {"forward": "conv_linear"})

    # The same model with its constants in a .ptd, referenced by FQN from the .pte.
    program = lower(export(conv_linear, x), config=ExecutorchBackendConfig(external_constants=True))
    write_fixture(out / "external.pte", program, conv_linear, {"forward": "conv_linear"}, data="external.ptd")

    # XNNPACK: its weights in named data under sha256 keys, two delegate blobs.
    program = lower(export(conv_linear, x), partitioner=True)
    write_fixture(out / "xnnpack.pte", program, conv_linear, {"forward": "conv_linear"})

    # XNNPACK with its weights tagged for a .ptd: blobs without tensor layout in the .ptd.
    unlifted = torch.export.export(conv_linear, (x,)).module()
    delegate_external_constants_pass_unlifted(module=unlifted, gen_tag_fn=lambda node: "xnnpack_external")
    program = lower(export(unlifted, x), partitioner=True, config=ExecutorchBackendConfig(external_constants=True))
    write_fixture(
        out / "xnnpack_external.pte", program, conv_linear, {"forward": "conv_linear"}, data="xnnpack_external.ptd"
    )

    # Mutable buffers with an initial state, with and without their names.
    counter = build("counter")
    for file, names in (("mutable.pte", True), ("mutable_unnamed.pte", False)):
        edge = to_edge(export(counter, example_input(*INPUTS["counter"])))
        edge = edge.transform([InitializedMutableBufferPass(["acc", "steps"])])
        program = edge.to_executorch(ExecutorchBackendConfig(emit_mutable_buffer_names=names))
        write_fixture(out / file, program, build("counter"), {"forward": "counter"})

    # Two methods over one set of weights: the constants are shared between them.
    programs = {
        "forward": export(conv_linear, x),
        "encode": export(Encode(conv_linear).eval(), example_input(*INPUTS["encode"])),
    }
    program = to_edge_transform_and_lower(programs).to_executorch()
    write_fixture(out / "two_methods.pte", program, conv_linear, {"forward": "conv_linear", "encode": "encode"})

    dtypes = build("dtypes")
    program = lower(export(dtypes, example_input(*INPUTS["dtypes"])))
    write_fixture(out / "dtypes.pte", program, dtypes, {"forward": "dtypes"})

    mobile = build("mobilenet_v2")
    mx = example_input(*INPUTS["mobilenet_v2"])
    write_fixture(out / "mobilenet_v2.pte", lower(export(mobile, mx)), mobile, {"forward": "mobilenet_v2"})
    program = lower(export(mobile, mx), partitioner=True)
    write_fixture(out / "mobilenet_v2_xnnpack.pte", program, mobile, {"forward": "mobilenet_v2"})

    legacy_constant_buffer(out / "constants.pte", out / "legacy_constant_buffer.pte", conv_linear)

    # XNNPACK payloads to decode, with records of their constants (fp32, 8-bit per-channel).
    from . import executorch_xnnpack

    executorch_xnnpack.generate(out)


def export(model: torch.nn.Module, x: torch.Tensor):
    return torch.export.export(model, (x,))


def lower(exported, partitioner: bool = False, config: ExecutorchBackendConfig | None = None):
    partitioners = [XnnpackPartitioner()] if partitioner else None
    edge = to_edge_transform_and_lower(exported, partitioner=partitioners)
    return edge.to_executorch(config or ExecutorchBackendConfig())


def legacy_constant_buffer(source: Path, path: Path, model: torch.nn.Module) -> None:
    """The deprecated layout of files before late 2024: constants inline in
    `Program.constant_buffer`, no constant segment, no extended header. No export option of
    executorch 1.5.1 writes it any more (`serialize_pte_binary` always moves the constants into
    a segment), and its runtime refuses it (built with ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0).
    So it is made from `constants.pte` by ExecuTorch's own flatbuffer writer
    (`_program_to_flatbuffer`, with which `serialize_pte_binary` ends), and its record has no
    runtime output."""
    pte = deserialize_pte_binary(source.read_bytes())
    program = pte.program
    assert pte.mutable_data is None and pte.named_data is None and not program.backend_delegate_data
    # As an old exporter wrote it: constant_buffer[k] holds tensor k, entry 0 empty; no segments.
    program.constant_segment = SubsegmentOffsets(segment_index=0, offsets=[])
    program.segments = []
    path.write_bytes(_program_to_flatbuffer(program).data)
    record = describe(path, model, None, None)
    record["note"] = (
        "constants inline in the deprecated Program.constant_buffer, made from constants.pte by "
        "executorch's _program_to_flatbuffer: no export option writes this layout any more, and "
        "the executorch 1.5.1 runtime refuses it (ET_ENABLE_DEPRECATED_CONSTANT_BUFFER=0)"
    )
    reference = json.loads(source.with_name(source.name + ".expected.json").read_text(encoding="utf-8"))
    assert record["tensors"] == reference["tensors"], "the inline constants differ from constants.pte's"
    write_json(path, record)


def write_fixture(path: Path, program, model: torch.nn.Module, inputs: dict, data: str | None = None) -> None:
    """Writes the program's .pte (and its one .ptd as `data`), then their records."""
    path.write_bytes(program.buffer)
    with tempfile.TemporaryDirectory() as scratch:
        program.write_tensor_data_to_file(scratch)
        files = sorted(Path(scratch).iterdir())
        if data is not None:
            assert len(files) == 1, f"{path.name}: expected one data file, got {[f.name for f in files]}"
            shutil.move(files[0], path.parent / data)
            write_json(path.parent / data, describe_ptd(path.parent / data))
        else:
            assert not files, f"{path.name}: unexpected data files {[f.name for f in files]}"
    write_json(path, describe(path, model, inputs, data))


def write_json(path: Path, record: dict) -> None:
    path.with_name(path.name + ".expected.json").write_text(pretty_json(record) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(Path.cwd())}", flush=True)


# --- the records --------------------------------------------------------------------------


def describe(path: Path, model: torch.nn.Module, inputs: dict | None, data: str | None) -> dict:
    """The record of a .pte: what deserialize_pte_binary reads back and, unless `inputs` is
    None, what the runtime computes (`inputs` maps each method name to its INPUTS key)."""
    blob = path.read_bytes()
    pte = deserialize_pte_binary(blob)
    raw = raw_program(blob)
    ptd = FlatTensorSerializer().deserialize((path.parent / data).read_bytes()) if data else None
    methods = []
    for plan in pte.program.execution_plan:
        method = {
            "name": plan.name,
            "inputs": len(plan.inputs),
            "outputs": len(plan.outputs),
            "values": len(plan.values),
            "operators": [f"{op.name}.{op.overload}" if op.overload else op.name for op in plan.operators],
            "delegates": [d.id for d in plan.delegates],
            "instructions": sum(len(chain.instructions) for chain in plan.chains),
        }
        if inputs is not None:
            method.update(run(path, data, plan.name, inputs[plan.name]))
        methods.append(method)
    record = {"producer": PRODUCER, "file": path.name}
    if data:
        record["data_file"] = data
    record.update(
        {
            "methods": methods,
            "segments": len(raw.segments),
            "delegates": delegate_records(pte.program, raw),
            "tensors": tensor_records(pte, raw, ptd, state_dict_index(model)),
        }
    )
    if inputs is not None:
        # Of `forward`, the method a runner calls by default.
        main_method = next((m for m in methods if m["name"] == "forward"), methods[0])
        record["example_input"] = main_method["example_input"]
        record["expected_output_sha256"] = main_method["expected_output_sha256"]
    return record


def tensor_records(pte, raw, ptd, by_bytes: dict) -> list:
    """The tensors under the naming scheme of the module docstring, in the order of the
    methods and their values, then the named data in file order."""
    program = pte.program
    records, seen = [], set()
    for plan in program.execution_plan:
        for value in plan.values:
            t = value.val
            if not isinstance(t, Tensor):
                continue
            info = t.extra_tensor_info
            fqn = info.fully_qualified_name if info is not None else None
            k = t.data_buffer_idx
            if info is not None and info.location == TensorDataLocation.EXTERNAL:
                # data_buffer_idx indexes the exporter's external buffer list: meaningless here.
                key, name, source = ("external", fqn), fqn, "external"
                storage, index = ptd.buffers[ptd.named_data[fqn].buffer_index], None
            elif k == 0:
                continue
            elif t.allocation_info is None:
                key, name, source = ("constant", k), f"constant.{k}", "constant"
                storage, index = program.constant_buffer[k].storage, k
            else:
                key, name, source = ("mutable", k), fqn or f"mutable.{k}", "mutable"
                storage, index = pte.mutable_data[k].storage, k
            if key in seen:
                continue
            seen.add(key)
            record, data = tensor_record(name, source, t, storage, index)
            if source == "constant":
                fqns = by_bytes.get((record["dtype"], tuple(record["shape"]), data), [])
                if fqns:
                    record["fqn"] = fqns[0]
                if len(fqns) > 1:
                    record["fqns"] = fqns
            records.append(record)
    for entry in raw.named_data or []:
        payload = pte.named_data.buffers[pte.named_data.pte_data[entry.key].buffer_index]
        records.append(blob_record(entry.key, "named_data", payload))
    return records


def delegate_records(program, raw) -> list:
    """Every delegate's payload, as deserialize_pte_binary restores it inline, and where the
    file stores it (`segment` or `inline`)."""
    records = []
    for plan, raw_plan in zip(program.execution_plan, raw.execution_plan):
        for index, (delegate, raw_delegate) in enumerate(zip(plan.delegates, raw_plan.delegates)):
            assert delegate.processed.location == DataLocation.INLINE
            payload = bytes(program.backend_delegate_data[delegate.processed.index].data)
            stored = "segment" if raw_delegate.processed.location == DataLocation.SEGMENT else "inline"
            records.append(
                {
                    "method": plan.name,
                    "index": index,
                    "id": delegate.id,
                    "stored": stored,
                    "compile_specs": [spec.key for spec in delegate.compile_specs],
                    "nbytes": len(payload),
                    "sha256": sha256(payload),
                }
            )
    return records


def describe_ptd(path: Path) -> dict:
    """The record of a .ptd: every named data entry as FlatTensorSerializer reads it."""
    payload = FlatTensorSerializer().deserialize(path.read_bytes())
    tensors = []
    for key, entry in payload.named_data.items():
        data = bytes(payload.buffers[entry.buffer_index])
        layout = entry.tensor_layout
        if layout is None:
            tensors.append(blob_record(key, "named_data", data))
            continue
        dtype, size = DTYPES[ScalarType(layout.scalar_type)]
        nbytes = math.prod(layout.sizes) * size
        assert len(data) == nbytes, f"{path.name}: {key} has {len(data)} bytes, its layout {nbytes}"
        record = {"name": key, "source": "named_data", "dtype": dtype, "shape": list(layout.sizes)}
        record.update({"layout": "dense", "sha256": sha256(data)})
        if list(layout.dim_order) != list(range(len(layout.sizes))):
            record["dim_order"] = list(layout.dim_order)
        tensors.append(record)
    return {"producer": PRODUCER, "file": path.name, "tensors": tensors}


def tensor_record(name: str, source: str, t: Tensor, storage, k: int | None) -> tuple[dict, bytes]:
    """The record of one tensor and its numel x element size bytes: ExecuTorch's restored
    constant buffers run on to the next tensor's offset (alignment padding), which is cut."""
    dtype, size = DTYPES[ScalarType(t.scalar_type)]
    nbytes = math.prod(t.sizes) * size
    data = bytes(storage)
    assert len(data) >= nbytes, f"{name}: {len(data)} bytes stored, {nbytes} expected"
    data = data[:nbytes]
    record = {"name": name, "source": source}
    if k is not None:
        record["buffer_index"] = k
    record.update({"dtype": dtype, "shape": list(t.sizes), "layout": "dense", "sha256": sha256(data)})
    if list(t.dim_order) != list(range(len(t.sizes))):
        record["dim_order"] = list(t.dim_order)
    return record, data


def blob_record(key: str, source: str, data) -> dict:
    data = bytes(data)
    return {"name": key, "source": source, "dtype": "uint8", "shape": [len(data)], "layout": "blob", "sha256": sha256(data)}


def raw_program(blob: bytes):
    """The Program as stored, before deserialize_pte_binary moves segments back into it."""
    header = _get_extended_header(blob)
    size = header.program_size if header is not None and header.is_valid() else len(blob)
    return _flatbuffer_to_program(blob[:size])


def state_dict_index(model: torch.nn.Module) -> dict:
    """(dtype, shape, bytes) -> the state_dict keys holding exactly that tensor."""
    index = {}
    for key, tensor in model.state_dict().items():
        dtype = str(tensor.dtype).removeprefix("torch.")
        index.setdefault((dtype, tuple(tensor.shape), tensor_bytes(tensor)), []).append(key)
    return index


def tensor_bytes(t: torch.Tensor) -> bytes:
    return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def run(pte: Path, data: str | None, method: str, key: str) -> dict:
    """Runs `method` of a freshly loaded program on its example input in the runtime."""
    shape, seed = INPUTS[key]
    x = example_input(shape, seed)
    data_path = str(pte.parent / data) if data else None
    loaded = Runtime.get().load_program(str(pte), data_path=data_path)
    outputs = loaded.load_method(method).execute([x])
    out = b"".join(tensor_bytes(o) for o in outputs)
    described = {"dtype": "float32", "shape": shape, "seed": seed, "sha256": sha256(tensor_bytes(x))}
    if x.numel() <= 64:
        described["values"] = x.reshape(-1).tolist()
    result = {
        "example_input": described,
        "expected_output": [{"dtype": str(o.dtype).removeprefix("torch."), "shape": list(o.shape)} for o in outputs],
        "expected_output_sha256": sha256(out),
    }
    if sum(o.numel() for o in outputs) <= 64:
        result["expected_output_values"] = [v for o in outputs for v in o.reshape(-1).tolist()]
    return result


def sha256(data) -> str:
    return hashlib.sha256(bytes(data)).hexdigest()


def main() -> None:
    """Writes the fixtures into a scratch folder (for trying changes without scripts/fixtures)."""
    import os
    import sys

    out = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
    shutil.rmtree(out, ignore_errors=True)
    os.chdir(out.parent)
    generate(out)


if __name__ == "__main__":
    main()
