"""Interop with llama.cpp itself, built from the llama-cpp-python 0.3.36 sdist by
`scripts/llama-tools` (skipped when it has not been built; heavy, never in CI):

- `convert --quantize` against `llama-quantize` on the tiny llama of tests/fixtures/gguf-quantize/
  (presets with and without an importance matrix): the same bytes, and `llama_cpp` (the sdist's
  Python package, on the same libraries) loads both and generates the same tokens;
- every type on random rows (normal, with zeros, constant, extremes, subnormals; with and
  without importance weights) written by `convert --quantize TYPE` from a safetensors file:
  each tensor's blocks equal `ggml_quantize_chunk`'s, called through ctypes on libggml-base;
- a `general.alignment` of 64: llama-quantize's file (laid out at 32) does not load, ours does
  and generates what the model laid out at 32 does;
- llama_cpp loads what `tensorfile meta` edits and generates the same tokens;
- llama_cpp loads the parts `convert --split-max-tensors` writes (from the first part, as
  llama.cpp opens a split model), of the model and of its Q4_K_M, and the model merged back
  from them, and generates the same tokens as from the one file.
"""

import ctypes
import functools
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "gguf-quantize"


def tools() -> dict:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "llama-tools"), "--print"], capture_output=True,
                          text=True, check=False)
    paths = json.loads(done.stdout) if done.returncode == 0 else {}
    if not paths.get("built"):
        pytest.skip("llama.cpp's tools are not built (scripts/llama-tools)", allow_module_level=True)
    return paths


TOOLS = tools()
PROMPT = "Once upon a time"


@functools.lru_cache(maxsize=None)
def quantized_models_run() -> str:
    """Why llama_cpp cannot run a quantized model here, or "" when it can: it is asked to run
    llama-quantize's own Q4_K_M of the tiny model. Where ggml's CPU kernels crash on the
    machine (its AMX matrix kernels killed the process with SIGSEGV on one Xeon VM, on the
    tool's own file as on ours), a comparison of what ours and theirs generate cannot be made."""
    with tempfile.TemporaryDirectory() as tmp:
        theirs = Path(tmp) / "theirs.gguf"
        done = subprocess.run([TOOLS["llama_quantize"], str(FIXTURES / "tiny.gguf"), str(theirs), "Q4_K_M", "2"],
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        ran = run_llama_cpp(theirs, 2)
    if ran.returncode < 0:
        return f"llama_cpp is killed by signal {-ran.returncode} running llama-quantize's own Q4_K_M file on this machine"
    assert ran.returncode == 0, f"llama_cpp on llama-quantize's own file: {ran.stderr[-2000:]}"
    return ""


def needs_quantized_runs() -> None:
    reason = quantized_models_run()
    if reason:
        pytest.skip(reason)


def tensorfile(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, timeout=600, check=False)


def generate(model: Path, n: int = 12) -> list:
    """Greedy tokens llama_cpp generates from PROMPT with `model` (in a process of its own)."""
    done = run_llama_cpp(model, n)
    assert done.returncode == 0, f"llama_cpp on {model.name}: {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_llama_cpp(model: Path, n: int) -> subprocess.CompletedProcess:
    code = (
        "import json, sys, llama_cpp\n"
        "m = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=128, seed=1, verbose=False, n_threads=2)\n"
        "toks = m.tokenize(sys.argv[2].encode())\n"
        "out = []\n"
        "for t in m.generate(toks, top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0):\n"
        "    out.append(t)\n"
        "    if len(out) == int(sys.argv[3]): break\n"
        "print(json.dumps(out))\n"
    )
    env = dict(os.environ, LLAMA_CPP_LIB_PATH=TOOLS["lib_dir"])
    return subprocess.run([TOOLS["llama_cpp_python"], "-c", code, str(model), PROMPT, str(n)], capture_output=True,
                          text=True, timeout=300, env=env, check=False)


@pytest.mark.parametrize("preset,imatrix", [("Q4_K_M", None), ("Q8_0", None), ("Q2_K", "imatrix-tiny.gguf"),
                                            ("IQ4_XS", "imatrix-tiny.gguf"), ("IQ2_XXS", "imatrix-tiny.dat")])
def test_llama_quantize_and_tensorfile_write_the_same_model(preset: str, imatrix, tmp_path: Path):
    options = ["--imatrix", FIXTURES / imatrix] if imatrix else []
    theirs, ours = tmp_path / "theirs.gguf", tmp_path / "ours.gguf"
    done = subprocess.run([TOOLS["llama_quantize"], *map(str, options), str(FIXTURES / "tiny.gguf"), str(theirs),
                           preset, "2"], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    made = tensorfile("convert", FIXTURES / "tiny.gguf", ours, "--quantize", preset, *options)
    assert made.returncode == 0, made.stderr
    assert ours.read_bytes() == theirs.read_bytes()
    needs_quantized_runs()
    assert generate(ours) == generate(theirs)


def test_the_alignment_the_output_states_is_the_one_it_is_laid_out_at(tmp_path: Path):
    """llama-quantize copies `general.alignment` (here set by `--override-kv`) but lays its file
    out at 32 bytes, and llama.cpp then refuses to load it; ours is laid out at 64, and llama_cpp
    runs it as it runs the model laid out at 32."""
    theirs, ours, plain = tmp_path / "theirs.gguf", tmp_path / "ours.gguf", tmp_path / "plain.gguf"
    override = ["--override-kv", "general.alignment=int:64"]
    done = subprocess.run([TOOLS["llama_quantize"], *override, str(FIXTURES / "tiny.gguf"), str(theirs), "Q4_K_M",
                           "2"], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    reloaded = subprocess.run([TOOLS["llama_quantize"], str(theirs), str(tmp_path / "again.gguf"), "COPY", "1"],
                              capture_output=True, text=True, timeout=600, check=False)
    # ggml starts the data at 64 and finds a tensor past the end ("data is not within the file
    # bounds"), or one at an offset other than its padded sizes give ("has offset").
    said = reloaded.stdout + reloaded.stderr
    assert reloaded.returncode != 0 and ("bounds" in said or "offset" in said), "the tool now loads its own file"
    for out, options in [(ours, override), (plain, [])]:
        made = tensorfile("convert", FIXTURES / "tiny.gguf", out, "--quantize", "Q4_K_M", *options)
        assert made.returncode == 0, made.stderr
    assert ours.read_bytes() != theirs.read_bytes()
    needs_quantized_runs()
    assert generate(ours) == generate(plain)


def test_llama_cpp_runs_an_edited_model(tmp_path: Path):
    edited = tmp_path / "edited.gguf"
    done = tensorfile("meta", FIXTURES / "tiny.gguf", "-o", edited, "--set", "general.name=edited by tensorfile",
                      "--set", "tokenizer.chat_template=@@{{ messages }}")
    assert done.returncode == 0, done.stderr
    assert generate(edited) == generate(FIXTURES / "tiny.gguf")


@pytest.mark.parametrize("quantize", [None, "Q4_K_M"])
def test_llama_cpp_runs_our_split_and_merged_models(quantize, tmp_path: Path):
    whole = FIXTURES / "tiny.gguf"
    if quantize:
        needs_quantized_runs()
        whole = tmp_path / "whole.gguf"
        done = tensorfile("convert", FIXTURES / "tiny.gguf", whole, "--quantize", quantize)
        assert done.returncode == 0, done.stderr
    (tmp_path / "split").mkdir()
    done = tensorfile("convert", whole, tmp_path / "split" / "model.gguf", "--split-max-tensors", "5")
    assert done.returncode == 0, done.stderr
    parts = sorted((tmp_path / "split").glob("model-*-of-*.gguf"))
    assert len(parts) >= 3 and parts[0].name.startswith("model-00001-of-"), [p.name for p in parts]
    want = generate(whole)
    assert generate(parts[0]) == want
    merged = tmp_path / "merged.gguf"
    done = tensorfile("convert", parts[0], merged)
    assert done.returncode == 0, done.stderr
    assert generate(merged) == want


# ggml's type numbers (ggml.h) of the types convert --quantize writes.
TYPES = {"Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q2_K": 10, "Q3_K": 11, "Q4_K": 12, "Q5_K": 13,
         "Q6_K": 14, "IQ2_XXS": 16, "IQ2_XS": 17, "IQ3_XXS": 18, "IQ1_S": 19, "IQ4_NL": 20, "IQ3_S": 21,
         "IQ2_S": 22, "IQ4_XS": 23, "IQ1_M": 29, "TQ1_0": 34, "TQ2_0": 35, "MXFP4": 39}
NEEDS_IMATRIX = {"IQ2_XXS", "IQ2_XS", "IQ1_S"}


def ggml_quantize(lib, type_id: int, rows: np.ndarray, weights) -> bytes:
    lib.ggml_row_size.restype = ctypes.c_size_t
    lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.ggml_quantize_init(type_id)
    nrows, n = rows.shape
    out = ctypes.create_string_buffer(lib.ggml_row_size(type_id, n) * nrows)
    src = np.ascontiguousarray(rows, dtype=np.float32)
    w = None if weights is None else np.ascontiguousarray(weights, dtype=np.float32)
    size = lib.ggml_quantize_chunk(type_id, src.ctypes.data, out, 0, nrows, n,
                                   None if w is None else w.ctypes.data)
    return out.raw[:size]


def rows_of_every_kind(n: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    rows = [rng.standard_normal(n), rng.standard_normal(n) * 1e-3, np.zeros(n), np.full(n, 0.37),
            np.where(rng.random(n) < 0.5, 0.0, rng.standard_normal(n)), rng.standard_normal(n) * 3e4,
            rng.standard_normal(n) * 1e-40, rng.laplace(size=n)]
    return np.stack(rows).astype(np.float32)


def safetensors_bytes(tensors: dict) -> bytes:
    header, data = {}, b""
    for name, a in tensors.items():
        raw = np.ascontiguousarray(a, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


@pytest.mark.parametrize("name", sorted(TYPES))
def test_every_type_is_ggml_s_bytes(name: str, tmp_path: Path):
    sys.path.insert(0, TOOLS["gguf_py"])
    from gguf import GGUFReader

    lib = ctypes.CDLL(TOOLS["libggml_base"])
    rows = rows_of_every_kind(512)
    weights = np.random.default_rng(3).random(512).astype(np.float32) + 0.01
    src = tmp_path / "rows.safetensors"
    src.write_bytes(safetensors_bytes({"rows": rows}))
    cases = [("imatrix", weights)] if name in NEEDS_IMATRIX else [("plain", None), ("imatrix", weights)]
    for case, w in cases:
        out = tmp_path / f"{case}.gguf"
        args = ["convert", src, out, "--quantize", name]
        if w is not None:
            imatrix = tmp_path / "imatrix.dat"
            imatrix.write_bytes(legacy_imatrix({"rows": w}))
            args += ["--imatrix", imatrix]
        done = tensorfile(*args)
        assert done.returncode == 0, done.stderr
        ours = bytes(GGUFReader(out).tensors[0].data.view(np.uint8).reshape(-1))
        theirs = ggml_quantize(lib, TYPES[name], rows, w)
        assert ours == theirs, f"{name} ({case}): first difference at byte " \
            f"{next(i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b)}"


def legacy_imatrix(entries: dict) -> bytes:
    """llama.cpp's legacy importance matrix layout: the entry count, then per entry its name,
    one call and the sums (weights times calls), then the chunk count and the dataset name."""
    out = struct.pack("<i", len(entries))
    for name, w in entries.items():
        raw = name.encode()
        out += struct.pack("<i", len(raw)) + raw + struct.pack("<ii", 1, len(w))
        out += np.asarray(w, dtype="<f4").tobytes()
    return out + struct.pack("<i", 1) + struct.pack("<i", 4) + b"test"
