"""XNNPACK-delegated `.pte` fixtures whose delegate payload tensorfile decodes, each with a
`xnnpack` part in its record: the constants the exported program hands to XNNPACK, as
torch holds them (dtype, shape, and for quantized weights the scales and channel axis).

Each constant lands in the program's named data under the sha256 of its bytes as XNNPACK
stores them: row-major, or channels-last for convolution weights (XNNPACK computes in NHWC).
So the record lists, per constant, both candidate keys with the shape of the bytes under that
key; the test finds which one the payload references and checks the payload's dtype and dims
against it. Per-channel scales are stored under `scale_` + the sha256 of their float32 bytes.

Called from executorch.generate_all; uses its models, inputs and fixture writer.
"""

import json
from pathlib import Path

import torch
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from torchao.quantization.granularity import PerGroup
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.quant_api import Int8DynamicActivationIntxWeightConfig, quantize_

from . import executorch as et

DEQUANTIZE_PER_CHANNEL = "quantized_decomposed.dequantize_per_channel.default"
DEQUANTIZE_PER_TENSOR = "quantized_decomposed.dequantize_per_tensor.default"


def generate(out: Path) -> None:
    conv_linear = et.build("conv_linear")
    x = et.example_input(*et.INPUTS["conv_linear"])

    # float32: conv + linear, weights and biases as float32 constants.
    exported = et.export(conv_linear, x)
    record = constants_record(exported)
    et.write_fixture(out / "xnnpack_fp32.pte", et.lower(exported, partitioner=True), conv_linear, {"forward": "conv_linear"})
    write_record(out / "xnnpack_fp32.pte", record, "float32 conv + linear")

    # 8-bit, static, per-channel symmetric weights (pt2e with XNNPACKQuantizer).
    for name, dynamic in (("xnnpack_qc8.pte", False), ("xnnpack_dq8.pte", True)):
        quantized = quantize(et.build("conv_linear"), x, dynamic)
        exported = et.export(quantized, x)
        record = constants_record(exported)
        et.write_fixture(out / name, et.lower(exported, partitioner=True), quantized, {"forward": "conv_linear"})
        what = "dynamic 8-bit activations, " if dynamic else "static 8-bit activations, "
        write_record(out / name, record, what + "8-bit per-channel weights (XNNPACKQuantizer, pt2e)")

    blockwise_4bit(out)


class Linear64(torch.nn.Module):
    """One Linear 64->8, for 4-bit weights in blocks of 32 (two blocks a row)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(64, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def blockwise_4bit(out: Path) -> None:
    """torchao's Int8DynamicActivationIntxWeightConfig (int4 weights, groups of 32), which
    XNNPACK lowers to qbint4 weights with bfloat16 block scales. The record's weight is the
    int4 data torchao holds (values -8..7): XNNPACK stores it as unsigned nibbles (value + 8),
    the even element of each pair in the low nibble, under the sha256 of those bytes."""
    torch.manual_seed(et.MODEL_SEED)
    model = Linear64().eval()
    quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4, weight_granularity=PerGroup(32)))
    x = et.example_input([2, 64], 6)
    exported = et.export(model, x)
    weight = model.fc.weight
    qdata, scale = weight.qdata.detach(), weight.scale.detach()
    assert not weight.zero_point.any(), "expected symmetric weights"
    flat = (qdata.to(torch.int16) + 8).to(torch.uint8).reshape(-1)
    packed = (flat[1::2] << 4 | flat[::2]).reshape(qdata.shape[0], qdata.shape[1] // 2)
    scales = scale.to(torch.bfloat16).contiguous()
    constants = [
        {
            "name": "fc.weight",
            "dtype": "uint4",
            "shape": list(qdata.shape),
            "stored": [{"key": et.sha256(et.tensor_bytes(packed)), "shape": list(qdata.shape)}],
            "quantization": {
                "kind": "blockwise",
                "axis": 0,
                "group_size": 32,
                "scales": scales.numel(),
                "scale_key": "scale_" + et.sha256(et.tensor_bytes(scales)),
            },
        },
        {
            "name": "fc.bias",
            "dtype": "float32",
            "shape": list(model.fc.bias.shape),
            "stored": stored_forms(model.fc.bias.detach()),
        },
    ]
    program = et.lower(exported, partitioner=True)
    program_path = out / "xnnpack_qb4.pte"
    program_path.write_bytes(program.buffer)
    record = et.describe(program_path, torch.nn.Module(), None, None)
    record["note"] = "4-bit blockwise weights; the record has no runtime output (the model is not one of executorch.py's)"
    et.write_json(program_path, record)
    write_record(program_path, constants, "dynamic 8-bit activations, 4-bit weights in blocks of 32 (torchao)")


def quantize(model: torch.nn.Module, x: torch.Tensor, dynamic: bool) -> torch.nn.Module:
    quantizer = XNNPACKQuantizer()
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=dynamic))
    prepared = prepare_pt2e(torch.export.export(model, (x,)).module(), quantizer)
    prepared(x)
    return convert_pt2e(prepared)


def constants_record(exported) -> list:
    """Every parameter and buffer the exported program's graph uses, as torch holds it.

    A weight read through a per-channel dequantize gets that dequantize's scales and axis (the
    scales and zero points themselves are recorded with it, not as constants: XNNPACK stores the
    scales under their own key and no zero points, the weights being symmetric). A bias of an
    operator whose input is statically quantized is quantized by XNNPACK's lowering into int32
    per channel, with the weight's scales times the input's scale (zero points 0): recorded so.
    """
    signature = exported.graph_signature
    names = {**signature.inputs_to_parameters, **signature.inputs_to_buffers}
    names.update(signature.inputs_to_lifted_tensor_constants)
    tensors = {**exported.state_dict, **exported.constants}

    def tensor_of(node) -> torch.Tensor | None:
        if getattr(node, "op", None) != "placeholder" or node.name not in names:
            return None
        return tensors[names[node.name]].detach()

    quant = {}  # placeholder name -> quantization record
    overrides = {}  # placeholder name -> tensor as XNNPACK stores it
    skip = set()
    for node in exported.graph.nodes:
        if node.op != "call_function":
            continue
        if str(node.target) == DEQUANTIZE_PER_CHANNEL:
            weight, scales, zero_points, axis = node.args[:4]
            s = tensor_of(scales).to(torch.float32).contiguous()
            assert not tensor_of(zero_points).any(), "expected symmetric weights"
            quant[weight.name] = per_channel(axis, s)
            skip.update((scales.name, zero_points.name))
        elif str(node.target) in ("aten.conv2d.default", "aten.linear.default") and len(node.args) > 2:
            x, w, bias = node.args[:3]
            static = str(x.target) == DEQUANTIZE_PER_TENSOR and not isinstance(x.args[1], torch.fx.Node)
            if bias is None or not static or str(w.target) != DEQUANTIZE_PER_CHANNEL:
                continue
            scale = (tensor_of(w.args[1]).to(torch.float32) * float(x.args[1])).contiguous()
            zero = torch.zeros(scale.shape, dtype=torch.int64)
            q = torch.ops.quantized_decomposed.quantize_per_channel.default(
                tensor_of(bias), scale, zero, 0, -(2**31), 2**31 - 1, torch.int32
            )
            overrides[bias.name] = q
            quant[bias.name] = per_channel(0, scale)
    records = []
    for node in exported.graph.nodes:
        t = tensor_of(node)
        if t is None or not node.users or node.name in skip:
            continue
        t = overrides.get(node.name, t)
        entry = {
            "name": names[node.name],
            "dtype": str(t.dtype).removeprefix("torch."),
            "shape": list(t.shape),
            "stored": stored_forms(t),
        }
        if node.name in quant:
            entry["quantization"] = quant[node.name]
        records.append(entry)
    return records


def per_channel(axis: int, scales: torch.Tensor) -> dict:
    return {
        "kind": "per_channel",
        "axis": axis,
        "scales": scales.numel(),
        "scale_key": "scale_" + et.sha256(et.tensor_bytes(scales)),
    }


def stored_forms(t: torch.Tensor) -> list:
    """The candidate keys of a constant: its row-major bytes (float32 for floating types other
    than 16-bit ones), and for rank 4 its channels-last bytes with the NHWC shape."""
    if t.is_floating_point() and t.dtype not in (torch.float16, torch.bfloat16):
        t = t.to(torch.float32)
    forms = [{"key": et.sha256(et.tensor_bytes(t)), "shape": list(t.shape)}]
    if t.dim() == 4:
        nhwc = t.permute(0, 2, 3, 1).contiguous()
        forms.append({"key": et.sha256(et.tensor_bytes(nhwc)), "shape": list(nhwc.shape)})
    return forms


def write_record(pte: Path, constants: list, what: str) -> None:
    """Adds `xnnpack` (the model and its constants) to the fixture's record."""
    path = pte.with_name(pte.name + ".expected.json")
    record = json.loads(path.read_text(encoding="utf-8"))
    record["xnnpack"] = {"model": what, "constants": constants}
    path.write_text(et.pretty_json(record) + "\n", encoding="utf-8")
