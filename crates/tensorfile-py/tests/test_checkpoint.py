"""`tensorfile.convert(MODEL_DIR, "out.gguf")`: a Hugging Face checkpoint written as llama.cpp's
convert_hf_to_gguf.py writes it (tests/fixtures/hf-gguf/, by sha256), `dtype` as its --outtype,
`quantize` as the converter followed by llama-quantize."""

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


def test_what_has_no_equivalent_yet_is_refused(tmp_path):
    with pytest.raises(tensorfile.UsageError, match="max_shard_size"):
        tensorfile.convert(str(MODEL), str(tmp_path / "out.gguf"), max_shard_size="1MB")
