"""`tensorfile.convert(MODEL_DIR, "out.gguf")`: a Hugging Face checkpoint written as llama.cpp's
convert_hf_to_gguf.py writes it (tests/fixtures/hf-gguf/, by sha256), `dtype` and `outtype` as
its --outtype, its splits, `quantize` as the converter followed by llama-quantize."""

import hashlib
import json

import pytest

import tensorfile
from conftest import FIXTURES

HF = FIXTURES / "hf-gguf"
MODEL = HF / "TinyLlama-SPM-bf16"


def recorded(file, pick):
    runs = json.loads((HF / file).read_text())["runs"]
    return next(r for r in runs if pick(r))["sha256"]


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_checkpoint_converts_as_the_converter_converts_it(tmp_path):
    out = tmp_path / "out.gguf"
    report = tensorfile.convert(str(MODEL), str(out))
    assert report["tensors"] == 21
    assert report["architecture"] == "llama" and report["outtype"] == "bf16" and report["seconds"] > 0
    assert report["types"]["blk.0.attn_norm.weight"] == "F32" and report["types"]["output.weight"] == "BF16"
    assert sha256(out) == recorded("hf-gguf.expected.json", lambda r: r["folder"] == MODEL.name and r["args"] == [])
    tensorfile.convert(str(MODEL), str(out), dtype="f32")
    assert sha256(out) == recorded(
        "hf-gguf.expected.json", lambda r: r["folder"] == MODEL.name and r["args"] == ["--outtype", "f32"]
    )


def test_a_checkpoint_quantizes_in_the_same_job_as_llama_quantize_after_the_converter(tmp_path):
    out = tmp_path / "out.gguf"
    tensorfile.convert(str(MODEL), str(out), quantize="Q8_0")
    assert sha256(out) == recorded("quantize.expected.json", lambda r: r["preset"] == "Q8_0")
    assert [p.name for p in tmp_path.iterdir()] == ["out.gguf"]


def test_a_bpe_vocabulary_converts_through_the_tokenizers_library(tmp_path):
    folder = HF / "Llama-GPT2Tok-BPE-bf16-tied"
    out = tmp_path / "out.gguf"
    tensorfile.convert(str(folder), str(out))
    assert sha256(out) == recorded("hf-gguf.expected.json", lambda r: r["folder"] == folder.name and r["args"] == [])


def test_the_converters_metadata_options(tmp_path):
    out = tmp_path / "out.gguf"
    tensorfile.convert(str(MODEL), str(out), model_name="My Tiny Model")
    assert sha256(out) == recorded("options.expected.json", lambda r: r["args"][0] == "--model-name")
    tensorfile.convert(str(MODEL), str(out), metadata_file=HF / "metadata-override.json")
    assert sha256(out) == recorded("options.expected.json", lambda r: r["args"][0] == "--metadata")
    tensorfile.convert(str(MODEL), str(out), vocab_only=True)
    assert sha256(out) == recorded(
        "hf-gguf.expected.json", lambda r: r["folder"] == MODEL.name and r["args"] == ["--vocab-only"]
    )


def test_the_converters_outtypes_and_splits(tmp_path):
    out = tmp_path / "out.gguf"
    tensorfile.convert(str(MODEL), str(out), outtype="q8_0")
    assert sha256(out) == recorded(
        "hf-gguf.expected.json", lambda r: r["folder"] == MODEL.name and r["args"] == ["--outtype", "q8_0"]
    )
    ternary = FIXTURES / "hf-gguf-ternary" / "Ternary-SPM-bf16"
    tensorfile.convert(str(ternary), str(out), outtype="tq1_0")
    assert sha256(out) == recorded("options.expected.json", lambda r: r["args"] == ["--outtype", "tq1_0"])
    out.unlink()
    runs = json.loads((HF / "options.expected.json").read_text())["runs"]
    want = next(r for r in runs if r["args"] == ["--split-max-tensors", "8"])["files"]
    report = tensorfile.convert(str(MODEL), str(out), split_max_tensors=8)
    assert [p.rsplit("/", 1)[-1] for p in report["files"]] == [f["name"] for f in want]
    assert [sha256(tmp_path / f["name"]) for f in want] == [f["sha256"] for f in want]
    # Quantized in the same pass, the parts as llama-quantize --keep-split writes them.
    quantized = tmp_path / "q"
    quantized.mkdir()
    run = next(r for r in json.loads((HF / "options.expected.json").read_text())["quantize_runs"]
               if r["args"] == ["--split-max-tensors", "8"])
    report = tensorfile.convert(str(MODEL), str(quantized / "out.gguf"), split_max_tensors=8, quantize=run["preset"])
    assert [p.rsplit("/", 1)[-1] for p in report["files"]] == [f["name"] for f in run["files"]]
    assert [sha256(quantized / f["name"]) for f in run["files"]] == [f["sha256"] for f in run["files"]]


def test_what_has_no_equivalent_yet_is_refused(tmp_path):
    with pytest.raises(tensorfile.UsageError, match="no_tensor_first_split"):
        tensorfile.convert(
            str(MODEL), str(tmp_path / "out.gguf"), split_max_tensors=8, no_tensor_first_split=True, quantize="Q4_K_M"
        )
    with pytest.raises(tensorfile.UsageError, match="outtype"):
        tensorfile.convert(str(MODEL), str(tmp_path / "out.gguf"), outtype="q4_0")
