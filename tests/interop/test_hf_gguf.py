"""Hugging Face checkpoints into GGUF against llama.cpp's own converter, run for real (heavy,
never in CI: skipped where `scripts/llama-tools` has not built llama.cpp, or where no Python has
torch and the transformers the fixtures were made with):

- every run of tests/fixtures/hf-gguf/hf-gguf.expected.json (and of its "uncommitted" runs, where
  the large folders are in ~/.cache/tensorfile/hf-gguf-large or $TENSORFILE_HF_GGUF_LARGE):
  `convert_hf_to_gguf.py ARGS FOLDER` (the one of the llama.cpp tree the llama-cpp-python 0.3.36
  sdist vendors, with PYTHONPATH set to that tree's gguf-py, on a copy of the folder) against
  `tensorfile convert FOLDER out.gguf` with the equivalent options: `--outtype f32|f16|bf16` is
  `--dtype`, `--metadata FILE` is `--metadata-file`, `--split-max-size` is `--max-shard-size`,
  and a flag `tensorfile convert --help` lists under the converter's name (`--vocab-only`,
  `--model-name`, `--outtype q8_0`, `--split-max-tensors`, ...) is passed as it is; a run with a
  flag the CLI has no equivalent of yet is skipped, naming it;
- every preset of quantize.expected.json: the converter then `llama-quantize PRESET`, against
  `tensorfile convert FOLDER out.gguf --quantize PRESET`;
- every run of hf-gguf-more.expected.json (Phi-3's long rope, gpt-oss: hf_gguf_more.py), committed;
- the quantize runs of options.expected.json (the converter's split, then llama-quantize
  --keep-split; llama-quantize's own options), in one `convert --quantize` pass;
- every run of options.expected.json (`--model-name NAME`, `--metadata FILE`, ...), with
  `--outfile` as it was recorded: the files written (the parts of a split model) of the same
  names.

For each: the files byte-identical (and the converter's the ones recorded), the first difference
named (key/value, tensor info or data, else the byte); the tree's gguf-py GGUFReader reads ours,
every tensor's bytes, with the converter's key/values and tensors; `llama_cpp` (the sdist's
Python package on the libraries built from the same tree) loads both and has the same vocabulary
and generates the same greedy tokens from a short prompt, or, for a vocabulary-only file (loaded
with vocab_only=True), tokenizes a text the same. A model llama.cpp cannot load even from the
converter's own file is skipped with llama.cpp's reason, once the bytes have been compared.

The converter's Python is $TENSORFILE_HF_PYTHON, else the one running these tests or that of the
tools' environment ($TENSORFILE_VENV, else ~/.cache/tensorfile/venv), whichever has torch,
sentencepiece, protobuf and the recorded transformers (4.57.6).
"""

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tensorfile_binary import BINARY  # noqa: E402 (skips this module without a binary)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FIXTURES = ROOT / "tests" / "fixtures" / "hf-gguf"
LARGE = Path(os.environ.get("TENSORFILE_HF_GGUF_LARGE", Path.home() / ".cache" / "tensorfile" / "hf-gguf-large"))
RECORD = json.loads((FIXTURES / "hf-gguf.expected.json").read_text())
QUANTIZE = json.loads((FIXTURES / "quantize.expected.json").read_text())
OPTIONS = json.loads((FIXTURES / "options.expected.json").read_text())
PROMPT = "Once upon a time"
TEXT = "Once upon a time, there was a little girl named Lily. The quick brown fox jumps over  the lazy dog!"


def tools() -> dict:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "llama-tools"), "--print"], capture_output=True,
                          text=True, check=False)
    paths = json.loads(done.stdout) if done.returncode == 0 else {}
    if not paths.get("built"):
        pytest.skip("llama.cpp's tools are not built (scripts/llama-tools)", allow_module_level=True)
    if not (Path(paths["tree"]) / "convert_hf_to_gguf.py").is_file():
        pytest.skip(f"no convert_hf_to_gguf.py in {paths['tree']}", allow_module_level=True)
    return paths


TOOLS = tools()
TREE = Path(TOOLS["tree"])


def converter_python() -> str:
    """A Python that can run the converter as the fixtures were made: torch, sentencepiece,
    protobuf and the recorded transformers."""
    want = RECORD["versions"]["transformers"]
    probe = ("import torch, sentencepiece, google.protobuf, transformers, numpy, safetensors; "
             "print(transformers.__version__)")
    given = os.environ.get("TENSORFILE_HF_PYTHON")
    venv = Path(os.environ.get("TENSORFILE_VENV", Path.home() / ".cache" / "tensorfile" / "venv")).expanduser()
    candidates = [given] if given else [sys.executable, str(venv / "bin" / "python")]
    seen = []
    for python in candidates:
        if not Path(python).is_file():
            seen.append(f"{python}: not there")
            continue
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False)
        version = done.stdout.strip()
        if done.returncode == 0 and version == want:
            return python
        seen.append(f"{python}: " + (f"transformers {version}" if done.returncode == 0
                                     else done.stderr.strip().splitlines()[-1]))
    pytest.skip(f"no Python with torch, sentencepiece, protobuf and transformers {want} to run the converter "
                f"(set TENSORFILE_HF_PYTHON): {'; '.join(seen)}", allow_module_level=True)


PYTHON = converter_python()


@functools.lru_cache(maxsize=None)
def convert_help() -> str:
    done = subprocess.run([str(BINARY), "convert", "--help"], capture_output=True, text=True, check=False)
    return done.stdout


def has_flag(flag: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", convert_help()) is not None


def tensorfile_args(args: list) -> list:
    """The converter's arguments as tensorfile's convert takes them; a run whose arguments it has
    no equivalent of yet is skipped, saying which."""
    out, rest = [], list(args)
    while rest:
        flag = rest.pop(0)
        if flag == "--outtype" and rest[0] in ("f32", "f16", "bf16"):
            out += ["--dtype", rest.pop(0)]
        elif flag == "--metadata":
            out += ["--metadata-file", str(FIXTURES / rest.pop(0))]
        elif flag == "--split-max-size":
            # gguf-py's sizes: K, M, G are powers of 1000 (split_str_to_n_bytes), as tensorfile's KB, MB, GB.
            size = rest.pop(0)
            out += ["--max-shard-size", size + "B" if size[-1:] in ("K", "M", "G") else size]
        elif flag in ("--vocab-only", "--no-tensor-first-split") or (flag.startswith("--") and has_flag(flag)):
            # Spelt as the converter spells it (--model-name NAME, --outtype q8_0|tq1_0|tq2_0,
            # --split-max-tensors N, ...).
            out.append(flag)
            while rest and not rest[0].startswith("--"):
                out.append(rest.pop(0))
        else:
            value = f" {rest[0]}" if rest and not rest[0].startswith("--") else ""
            why = " (--quantize Q8_0 is llama-quantize's Q8_0: other bytes)" if flag == "--outtype" else ""
            pytest.skip(f"tensorfile convert has no equivalent of the converter's {flag}{value} yet{why}")
    return out


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def folder_of(name: str, uncommitted: bool) -> Path:
    """The checkpoint folder `name`: in tests/fixtures/hf-gguf/ (or a folder beside it, as
    hf-gguf-ternary/), or, uncommitted, in LARGE, checked against its record."""
    if not uncommitted:
        found = [FIXTURES / name, *sorted(FIXTURES.parent.glob(f"hf-gguf-*/{name}"))]
        folder = next((f for f in found if f.is_dir()), None)
        assert folder is not None, f"no folder {name} in {FIXTURES} or beside it"
        return folder
    folder = LARGE / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is not there (made by scripts/fixturegen/hf_gguf.py --large, not committed)")
    for key, want in RECORD["uncommitted"]["checkpoint_files"].items():
        if key.split("/")[0] == name:
            path = LARGE / key
            if not path.is_file() or sha256(path) != want["sha256"]:
                pytest.skip(f"{path} is not the recorded file (made again since the record?)")
    return folder


def convert_with_the_converter(folder: Path, args: list, work: Path, outfile: bool = False) -> list:
    """convert_hf_to_gguf.py ARGS FOLDER on a copy of the folder (of the same name), as
    scripts/fixturegen/hf_gguf.py runs it, its output named by the converter; or, as
    hf_gguf_options.py runs it, with --outfile out/out.gguf. The files written, in order (the
    parts of a split model)."""
    work.mkdir(parents=True)
    copy = work / folder.name
    shutil.copytree(folder, copy)
    before = set(copy.iterdir())
    env = dict(os.environ, PYTHONPATH=str(TREE / "gguf-py"), PYTHONHASHSEED="0")
    env.pop("HF_HUB_OFFLINE", None)
    given = [str(FIXTURES / a) if a.endswith(".json") else a for a in args]
    command = [PYTHON, str(TREE / "convert_hf_to_gguf.py"), *given, folder.name]
    if outfile:
        (work / "out").mkdir()
        command += ["--outfile", str(work / "out" / "out.gguf")]
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"convert_hf_to_gguf.py {' '.join(args)} {folder.name}: {done.stderr[-3000:]}"
    made = sorted((work / "out").iterdir()) if outfile else \
        sorted(p for p in set(copy.iterdir()) - before if p.suffix == ".gguf")
    assert made, "the converter wrote nothing"
    return made


@pytest.fixture(scope="module")
def converter(tmp_path_factory):
    """The converter's output for (folder, args), made once per module."""
    cache, base = {}, tmp_path_factory.mktemp("converter")

    def run(folder: Path, args: tuple) -> list:
        if (folder, args) not in cache:
            cache[(folder, args)] = convert_with_the_converter(folder, list(args), base / f"run{len(cache)}")
        return cache[(folder, args)]

    return run


def convert_with_tensorfile(folder: Path, out: Path, args: list) -> list:
    """`tensorfile convert FOLDER OUT ARGS` into a folder of its own; the files written, in order."""
    out.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(BINARY), "convert", str(folder), str(out), *args], capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, f"tensorfile convert {folder.name} {' '.join(args)}: {done.stderr[-3000:]}"
    return sorted(out.parent.iterdir())


def ggufpy_read(path: Path) -> dict:
    """What the tree's gguf-py reads of `path` (tests/interop/ggufpy_dump.py, in the converter's
    Python)."""
    env = dict(os.environ, PYTHONPATH=str(TREE / "gguf-py"))
    done = subprocess.run([PYTHON, str(HERE / "ggufpy_dump.py"), str(path)], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert done.returncode == 0, f"gguf-py's GGUFReader on {path.name}: {done.stderr[-3000:]}"
    return json.loads(done.stdout)


def short(value, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def first_difference(ours: dict, theirs: dict, ours_bytes: bytes, theirs_bytes: bytes) -> str:
    """Where two files differ, as gguf-py reads them: the first key/value, tensor info or tensor
    data, else the first differing byte."""
    for a, b in zip(ours["kv"], theirs["kv"]):
        if a != b:
            if a["name"] != b["name"]:
                return f"key/values in another order or set: ours has {a['name']} where the converter's has {b['name']}"
            return f"key {a['name']}: ours {a['types']} {short(a['value'])}, the converter's {b['types']} " \
                   f"{short(b['value'])}"
    if len(ours["kv"]) != len(theirs["kv"]):
        extra = ours["kv"][len(theirs["kv"]):] or theirs["kv"][len(ours["kv"]):]
        who = "ours" if len(ours["kv"]) > len(theirs["kv"]) else "the converter's"
        return f"{who} has more key/values: {[kv['name'] for kv in extra]}"
    for a, b in zip(ours["tensors"], theirs["tensors"]):
        if a != b:
            fields = ", ".join(f"{k} ours {a[k]} theirs {b.get(k)}" for k in a if a[k] != b.get(k))
            return f"tensor {a['name']} (the converter's: {b['name']}): {fields}"
    if len(ours["tensors"]) != len(theirs["tensors"]):
        return f"{len(ours['tensors'])} tensors, the converter's {len(theirs['tensors'])}"
    at = next((i for i, (x, y) in enumerate(zip(ours_bytes, theirs_bytes)) if x != y),
              min(len(ours_bytes), len(theirs_bytes)))
    return f"same key/values and tensors, first differing byte at {at} (sizes {len(ours_bytes)}, {len(theirs_bytes)})"


# What llama_cpp is asked to run: the vocabulary (each token's text, score and attributes, hashed),
# then, for a model, a prompt's tokens and 12 greedy tokens after it, or, for a vocabulary alone,
# TEXT's tokens (with the BOS) and TEXT followed by the EOS's text parsed as a special token, and
# those detokenized. TEXT keeps to characters the tiny SentencePiece vocabulary has: where it has
# no piece and no byte token for one (a digit, '<', a non-ASCII letter), llama.cpp's tokenizer
# throws std::out_of_range from llama_vocab::byte_to_token and the process aborts. Verbose, so
# that llama.cpp says on stderr why it refuses a model. With argv[4] "0", ggml's extra buffer
# types (weights repacked for its AMX and other CPU kernels) are turned off: those kernels kill
# the process with SIGSEGV on some machines (an AMX Xeon here) on the converter's and
# llama-quantize's own Q8_0, Q6_K and Q2_K files.
LLAMA_CPP = """
import hashlib, json, sys, llama_cpp, llama_cpp.llama_cpp as low
model, vocab_only, text, extra_bufts = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4] == "1"
if not extra_bufts:
    default_params = low.llama_model_default_params
    def without_extra_bufts():
        p = default_params()
        p.use_extra_bufts = False
        return p
    low.llama_model_default_params = without_extra_bufts
if vocab_only:
    m = llama_cpp.Llama(model_path=model, vocab_only=True, verbose=True)
else:
    m = llama_cpp.Llama(model_path=model, n_ctx=128, seed=1, verbose=True, n_threads=2)
v = m._model
h = hashlib.sha256()
for i in range(v.n_vocab()):
    h.update(low.llama_vocab_get_text(v.vocab, i) + b"\\0")
    h.update(repr((v.token_get_score(i), v.token_get_attr(i))).encode())
result = {"n_vocab": v.n_vocab(), "vocab": h.hexdigest(), "bos": v.token_bos(), "eos": v.token_eos()}
if vocab_only:
    eos = low.llama_vocab_get_text(v.vocab, v.token_eos()).decode()
    plain = m.tokenize(text.encode())
    special = m.tokenize((text + eos).encode(), add_bos=False, special=True)
    result.update(tokens=plain, special=special, text=m.detokenize(special).decode("utf-8", "replace"))
else:
    toks = m.tokenize(text.encode())
    out = []
    for t in m.generate(toks, top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0):
        out.append(t)
        if len(out) == 12:
            break
    result.update(prompt=toks, generated=out)
print(json.dumps(result))
"""


def run_llama_cpp(model: Path, vocab_only: bool, extra_bufts: bool = True) -> subprocess.CompletedProcess:
    """llama_cpp (LLAMA_CPP) on `model`, in a process of its own."""
    env = dict(os.environ, LLAMA_CPP_LIB_PATH=TOOLS["lib_dir"])
    argv = [str(model), "1" if vocab_only else "0", TEXT if vocab_only else PROMPT, "1" if extra_bufts else "0"]
    return subprocess.run([TOOLS["llama_cpp_python"], "-c", LLAMA_CPP, *argv], capture_output=True, text=True,
                          timeout=600, env=env, check=False)


def why_not(done: subprocess.CompletedProcess) -> str:
    """Why llama_cpp failed: llama.cpp's own error lines where it said any, else the last lines."""
    lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
    said = [line for line in lines if "what():" in line or "error" in line.lower()
            and not line.startswith(("raise ", "ValueError", "File "))]
    status = f"killed by signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
    return f"{status}: {' | '.join(said[:3] or lines[-3:])[-600:]}"


def check(ours: list, theirs: list, recorded: list, what: str, names: bool = False) -> None:
    """Every check of one run, on the files each side wrote (the parts of a split model, or one):
    the converter's the recorded ones (sha256s), ours byte-identical to them (and of the same
    names, with `names`), gguf-py reading ours as theirs; then llama_cpp on both (from the first
    part, as llama.cpp opens a split model). Differences are all gathered before llama_cpp runs,
    which is skipped (with the reason) when it cannot run the converter's own file."""
    problems = []
    theirs_shas = [sha256(t) for t in theirs]
    if theirs_shas != recorded:
        problems.append(f"the converter's files are not the recorded ones ({theirs_shas}, recorded {recorded}): "
                        "this environment or the fixtures changed")
    if names and [p.name for p in ours] != [p.name for p in theirs]:
        problems.append(f"ours writes {[p.name for p in ours]}, the converter {[p.name for p in theirs]}")
    elif len(ours) != len(theirs):
        problems.append(f"ours writes {len(ours)} files, the converter {len(theirs)}")
    reads = []
    for a, b in zip(ours, theirs):
        ours_read, theirs_read = ggufpy_read(a), ggufpy_read(b)
        reads.append(theirs_read)
        where = f"{a.name}: " if len(ours) > 1 else ""
        ours_bytes, theirs_bytes = a.read_bytes(), b.read_bytes()
        if ours_bytes != theirs_bytes:
            problems.append(f"{where}not byte-identical to the converter's: "
                            f"{first_difference(ours_read, theirs_read, ours_bytes, theirs_bytes)}")
        if ours_read["kv"] != theirs_read["kv"]:
            problems.append(f"{where}gguf-py reads other key/values in ours than in the converter's")
        if [{k: v for k, v in t.items() if k != "offset"} for t in ours_read["tensors"]] != \
                [{k: v for k, v in t.items() if k != "offset"} for t in theirs_read["tensors"]]:
            problems.append(f"{where}gguf-py reads other tensors (or tensor bytes) in ours than in the converter's")
    vocab_only = not any(r["tensors"] for r in reads)
    extra_bufts = True
    theirs_run = run_llama_cpp(theirs[0], vocab_only)
    if theirs_run.returncode < 0:
        # Killed (ggml's repacked CPU kernels, see LLAMA_CPP): both run without them.
        extra_bufts = False
        theirs_run = run_llama_cpp(theirs[0], vocab_only, extra_bufts)
    if theirs_run.returncode != 0:
        assert not problems, f"{what}: " + "; ".join(problems)
        pytest.skip(f"{what}: llama_cpp cannot run the converter's own file: {why_not(theirs_run)}")
    ours_run = run_llama_cpp(ours[0], vocab_only, extra_bufts)
    if ours_run.returncode != 0:
        problems.append(f"llama_cpp runs the converter's file but not ours: {why_not(ours_run)}")
    else:
        theirs_out = json.loads(theirs_run.stdout.strip().splitlines()[-1])
        ours_out = json.loads(ours_run.stdout.strip().splitlines()[-1])
        if ours_out != theirs_out:
            problems.append(f"llama_cpp: ours gives {ours_out}, the converter's {theirs_out}")
    assert not problems, f"{what}: " + "; ".join(problems)


def recorded_shas(run: dict) -> list:
    return [f["sha256"] for f in run["files"]] if "files" in run else [run["sha256"]]


def run_id(run: dict) -> str:
    return run["folder"] + "".join(run.get("args", []))


# The runs of hf_gguf_more.py too (their committed folders: Phi-3's long rope, gpt-oss).
MORE = json.loads((FIXTURES.parent / "hf-gguf-more" / "hf-gguf-more.expected.json").read_text())
RUNS = [pytest.param(r, False, id=run_id(r)) for r in RECORD["runs"] + MORE["runs"]] + \
    [pytest.param(r, True, id=run_id(r)) for r in RECORD["uncommitted"]["runs"]]


@pytest.mark.parametrize("run,uncommitted", RUNS)
def test_a_checkpoint_converts_as_the_converter_converts_it(run: dict, uncommitted: bool, converter, tmp_path: Path):
    folder = folder_of(run["folder"], uncommitted)
    options = tensorfile_args(run["args"])
    ours = convert_with_tensorfile(folder, tmp_path / "ours" / "ours.gguf", options)
    theirs = converter(folder, tuple(run["args"]))
    assert [t.name for t in theirs] == [run["output"]], f"the converter wrote {theirs}, recorded {run['output']}"
    check(ours, theirs, recorded_shas(run), f"{run['folder']} {' '.join(run['args']) or '(default)'}")


@pytest.mark.parametrize("run", QUANTIZE["runs"], ids=lambda r: f"{r['folder']}-{r['preset']}")
def test_a_checkpoint_converts_and_quantizes_as_the_converter_and_llama_quantize_do(run: dict, converter,
                                                                                     tmp_path: Path):
    folder = folder_of(run["folder"], False)
    [source] = converter(folder, ())
    assert sha256(source) == QUANTIZE["source_sha256"], "the converter's output is not the one quantized for the record"
    theirs = tmp_path / "theirs.gguf"
    env = dict(os.environ, LD_LIBRARY_PATH=TOOLS["lib_dir"])
    done = subprocess.run([TOOLS["llama_quantize"], str(source), str(theirs), run["preset"], "1"], capture_output=True,
                          text=True, timeout=600, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    ours = convert_with_tensorfile(folder, tmp_path / "ours" / "ours.gguf", ["--quantize", run["preset"]])
    check(ours, [theirs], recorded_shas(run), f"{run['folder']} --quantize {run['preset']}")


@pytest.mark.parametrize("run", OPTIONS["runs"], ids=run_id)
def test_the_converters_other_options_as_tensorfile_s(run: dict, tmp_path: Path):
    folder = folder_of(run["folder"], False)
    options = tensorfile_args(run["args"])
    ours = convert_with_tensorfile(folder, tmp_path / "ours" / "out.gguf", options)
    theirs = convert_with_the_converter(folder, run["args"], tmp_path / "converter", outfile=True)
    if "files" in run:
        assert [t.name for t in theirs] == [f["name"] for f in run["files"]], "the converter wrote other files"
    check(ours, theirs, recorded_shas(run), f"{run['folder']} {' '.join(run['args']) or '(default)'}", names=True)


@pytest.mark.parametrize("run", OPTIONS.get("quantize_runs", []), ids=lambda r: run_id(r) + "".join(r["quantize_args"]))
def test_the_converter_then_llama_quantize_with_its_options_as_tensorfile_in_one_pass(run: dict, tmp_path: Path):
    """The converter (with its split), then llama-quantize with its options (--keep-split of
    the converter's parts), against `convert DIR out.gguf --quantize PRESET` with the same."""
    folder = folder_of(run["folder"], False)
    parts = convert_with_the_converter(folder, run["args"], tmp_path / "converter", outfile=True)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    env = dict(os.environ, LD_LIBRARY_PATH=TOOLS["lib_dir"])
    done = subprocess.run([TOOLS["llama_quantize"], *run["quantize_args"], str(parts[0]), str(theirs / "out.gguf"),
                           run["preset"], "1"], capture_output=True, text=True, timeout=600, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    options = tensorfile_args(run["args"]) + [a for a in run["quantize_args"] if a != "--keep-split"]
    ours = convert_with_tensorfile(folder, tmp_path / "ours" / "out.gguf", [*options, "--quantize", run["preset"]])
    what = f"{run['folder']} {' '.join(run['args'])} then {' '.join(run['quantize_args'])} {run['preset']}"
    check(ours, sorted(theirs.iterdir()), recorded_shas(run), what, names=True)
