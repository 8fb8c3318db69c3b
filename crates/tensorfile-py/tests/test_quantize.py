"""`convert(quantize=, imatrix=, quantize_options=)` as the CLI's `convert --quantize`: a GGUF
model into a `.gguf` byte for byte as llama-quantize wrote it (the runs recorded under
tests/fixtures/gguf-quantize/runs/, by sha256), any other input (safetensors) into `.gguf` and
zTensor 2 to one type, `tensor_type_file` and `dry_run`, and every option that does not apply
to the path taken raising UsageError naming it."""

import hashlib
import json

import numpy as np
import pytest

import tensorfile
from conftest import FIXTURES

QUANT = FIXTURES / "gguf-quantize"


def recorded_sha256(run: str) -> str:
    return json.loads((QUANT / "runs" / f"{run}.json").read_text(encoding="utf-8"))["output"]["sha256"]


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("run", "preset", "imatrix", "options"),
    [
        ("tiny-Q4_K_M", "Q4_K_M", None, None),
        ("tiny-Q4_K", "Q4_K", None, None),
        ("tiny-Q8_0", "Q8_0", None, None),
        ("tiny-Q4_K_M-imatrix", "Q4_K_M", "imatrix-tiny.gguf", None),
        ("tiny-Q4_K_S-imatrix-include", "Q4_K_S", "imatrix-tiny.gguf", {"include_weights": ["attn_v", "blk.1."]}),
        ("tiny-Q4_K_M-output-type", "Q4_K_M", None, {"output_tensor_type": "q8_0"}),
        ("tiny-Q6_K-leave-output", "Q6_K", None, {"leave_output_tensor": True}),
        (
            "tiny-Q4_K_M-tensor-types",
            "Q4_K_M",
            None,
            {"tensor_types": [("ATTN_V", "q8_0"), (r"blk\.1\.ffn_(up|gate)", "iq4_nl"), "ffn_down=q5_0",
                              ("attn_q", "Q4_K")]},
        ),
        (
            "tiny-Q4_0-override-kv",
            "Q4_0",
            None,
            {"override_kv": ["general.name=str:renamed by override", "llama.block_count=int:2",
                             "tensorfile.flag=bool:true", "tensorfile.scale=float:0.3",
                             "tensorfile.negative=int:-7", "general.file_type=int:99"]},
        ),
    ],
)
def test_a_gguf_model_is_quantized_as_llama_quantize_wrote_it(tmp_path, monkeypatch, run, preset, imatrix, options):
    # llama-quantize ran in the fixtures' folder: an importance matrix's path, as given, is a key.
    monkeypatch.chdir(QUANT)
    out = tmp_path / "out.gguf"
    done = tensorfile.convert("tiny.gguf", out, quantize=preset, imatrix=imatrix, quantize_options=options)
    assert sha256(out) == recorded_sha256(run)
    assert done["quantized"]


def test_a_tensor_type_file_is_read_as_llama_quantize_reads_it(tmp_path):
    types = tmp_path / "types.txt"
    types.write_text("ATTN_V=q8_0 blk\\.1\\.ffn_(up|gate)=iq4_nl\n\tffn_down=q5_0\nattn_q=Q4_K\n", encoding="ascii")
    out = tmp_path / "out.gguf"
    tensorfile.convert(QUANT / "tiny.gguf", out, quantize="Q4_K_M", quantize_options={"tensor_type_file": types})
    assert sha256(out) == recorded_sha256("tiny-Q4_K_M-tensor-types")


def safetensors_input(tmp_path):
    g = np.random.default_rng(7)
    src = tmp_path / "in.safetensors"
    tensorfile.save_file({
        "blk.0.attn_v.weight": g.standard_normal((4, 256)).astype(np.float32),
        "blk.0.ffn_up.weight": g.standard_normal((2, 512)).astype(np.float32),
        "blk.0.norm.weight": np.ones(256, np.float32),
    }, src)
    return src


@pytest.mark.parametrize("zt", [False, True])
def test_any_other_input_is_quantized_to_one_type(tmp_path, zt):
    src = safetensors_input(tmp_path)
    out = tmp_path / ("out.zt" if zt else "out.gguf")
    extra = {"zt_version": 2} if zt else {}
    done = tensorfile.convert(src, out, quantize="Q4_K", quantize_options={"tensor_types": [("attn_v", "q8_0")]},
                              **extra)
    assert done["quantized"] == {"blk.0.attn_v.weight": "Q8_0", "blk.0.ffn_up.weight": "Q4_K"}
    # The same as the command line (a preset named after a type is that type alone, as --pure).
    pure = tmp_path / ("pure.zt" if zt else "pure.gguf")
    tensorfile.convert(src, pure, quantize="Q4_K", quantize_options={"pure": True, "tensor_types": ["attn_v=q8_0"]},
                       **extra)
    assert pure.read_bytes() == out.read_bytes()
    picked = tensorfile.convert(src, tmp_path / ("p.zt" if zt else "p.gguf"), quantize="Q8_0", exclude="*ffn*", **extra)
    assert picked["quantized"] == {"blk.0.attn_v.weight": "Q8_0"} and picked["tensors"] == 3


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("output_tensor_type", "q8_0"),
        ("token_embedding_type", "q8_0"),
        ("leave_output_tensor", True),
        ("override_kv", ["general.name=str:x"]),
        ("keep_split", True),
        ("prune_layers", [0]),
    ],
)
def test_options_that_need_llama_cpp_names_are_refused_on_any_other_input(tmp_path, key, value):
    src = safetensors_input(tmp_path)
    for out, extra in ((tmp_path / "out.gguf", {}), (tmp_path / "out.zt", {"zt_version": 2})):
        with pytest.raises(tensorfile.UsageError, match=key):
            tensorfile.convert(src, out, quantize="Q8_0", quantize_options={key: value}, **extra)
        assert not out.exists()


@pytest.mark.parametrize(
    ("keyword", "value"),
    [("dtype", "float16"), ("split_max_tensors", 4), ("max_shard_size", "100KB"), ("rename", {"blk": "layer"})],
)
def test_options_that_would_change_llama_quantizes_file_are_refused(tmp_path, keyword, value):
    with pytest.raises(tensorfile.UsageError, match=keyword):
        tensorfile.convert(QUANT / "tiny.gguf", tmp_path / "out.gguf", quantize="Q4_K", **{keyword: value})


def test_weights_picked_without_an_importance_matrix_are_refused(tmp_path):
    with pytest.raises(tensorfile.UsageError, match="exclude_weights"):
        tensorfile.convert(QUANT / "tiny.gguf", tmp_path / "out.gguf", quantize="Q4_K",
                           quantize_options={"exclude_weights": ["attn"]})
    with pytest.raises(tensorfile.UsageError, match="no option"):
        tensorfile.convert(QUANT / "tiny.gguf", tmp_path / "out.gguf", quantize="Q4_K",
                           quantize_options={"dryrun": True})


def test_a_dry_run_returns_the_sizes_and_writes_nothing(tmp_path):
    out = tmp_path / "out.gguf"
    sizes = tensorfile.convert(QUANT / "tiny.gguf", out, quantize="Q4_K_M", quantize_options={"dry_run": True})
    assert not out.exists()
    assert sizes["path"] == "llama-quantize"
    assert sum(t["bytes_out"] for t in sizes["tensors"]) == sizes["bytes_out"]
    done = tensorfile.convert(QUANT / "tiny.gguf", out, quantize="Q4_K_M")
    assert len(sizes["tensors"]) == done["tensors"]
    assert {t["name"]: t["to"] for t in sizes["tensors"] if t["to"] != t["from"]} == done["quantized"]
    src = safetensors_input(tmp_path)
    zt = tmp_path / "out.zt"
    sizes = tensorfile.convert(src, zt, zt_version=2, quantize="Q8_0", quantize_options={"dry_run": True})
    assert not zt.exists() and sizes["path"] == "one-type"
    attn = next(t for t in sizes["tensors"] if t["name"] == "blk.0.attn_v.weight")
    assert (attn["to"], attn["bytes_in"], attn["bytes_out"]) == ("Q8_0", 4096, 1088)
