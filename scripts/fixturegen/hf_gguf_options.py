"""The converter's other options, run by llama.cpp's `convert_hf_to_gguf.py`: those that set
metadata over what a folder says (`--model-name NAME`, `--metadata FILE`) and those that cut
its output into parts (`--split-max-tensors`, `--split-max-size`, `--no-tensor-first-split`), on
the tiny llama of tests/fixtures/hf-gguf/; and the ternary outtypes (`--outtype tq1_0`,
`tq2_0`), on a llama whose rows are whole blocks of 256 (Ternary-SPM-bf16, hidden 256, one
layer, tied: made here with hf_gguf.py's own checkpoint maker, into
tests/fixtures/hf-gguf-ternary/, since hf_gguf.py remakes tests/fixtures/hf-gguf/ whole). The
reference for `tensorfile convert DIR out.gguf --model-name NAME`, `--metadata-file FILE`,
`--split-max-tensors N`, `--max-shard-size SIZE`, `--no-tensor-first-split` and
`--outtype tq1_0|tq2_0`.

Usage: python -m fixturegen.hf_gguf_options FIXTURES_HF_GGUF LLAMA_TREE (the Python of the
environment hf_gguf.py runs the converter in: torch and transformers 4.57.6). Writes
options.expected.json: each run's folder, arguments, and the files it wrote (one, or the parts
of its split, in order) with their names, sizes and sha256 (the outputs are not kept); and,
where scripts/llama-tools has built llama-quantize, the converter followed by llama-quantize
(`quantize_runs`: the converter's split then `--keep-split`, and llama-quantize's own options),
kept from the earlier record where it is not built. The override file is
tests/fixtures/hf-gguf/metadata-override.json, committed.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FOLDER = "TinyLlama-SPM-bf16"
TERNARY = "Ternary-SPM-bf16"
TERNARY_SPEC = {"arch": "llama", "dtype": "bfloat16", "tied": True,
                "config": {"hidden_size": 256, "intermediate_size": 256, "num_hidden_layers": 1}}
# (folder, arguments); the folders other than TERNARY are hf_gguf.py's.
RUNS = [
    (FOLDER, ["--model-name", "My Tiny Model"]),
    (FOLDER, ["--metadata", "metadata-override.json"]),
    (FOLDER, ["--split-max-tensors", "8"]),
    (FOLDER, ["--split-max-size", "20K"]),
    (FOLDER, ["--split-max-tensors", "8", "--no-tensor-first-split"]),
    (FOLDER, ["--no-tensor-first-split"]),
    (FOLDER, ["--split-max-size", "70000", "--split-max-tensors", "5"]),
    (FOLDER, ["--split-max-tensors", "100"]),
    (TERNARY, ["--outtype", "tq1_0"]),
    (TERNARY, ["--outtype", "tq2_0"]),
    (TERNARY, ["--outtype", "q8_0"]),
    (TERNARY, []),
]
# The converter (arguments), then llama-quantize (its arguments before the input; the preset):
# the reference for `convert DIR out.gguf --quantize PRESET` with the converter's split (which
# is llama-quantize's --keep-split of the converter's parts) and with llama-quantize's options.
QUANTIZE_RUNS = [
    (FOLDER, ["--split-max-tensors", "8"], ["--keep-split"], "Q4_K_M"),
    (FOLDER, ["--split-max-size", "70K"], ["--keep-split"], "Q8_0"),
    # Rows of 256 (llama-quantize takes a type given for the output as it is, whole blocks or not).
    (TERNARY, [], ["--tensor-type", "attn_v=q8_0", "--output-tensor-type", "q6_k", "--token-embedding-type", "q5_0"],
     "Q4_K_M"),
    (FOLDER, [], ["--pure", "--leave-output-tensor"], "Q5_K_M"),
]


def ternary_folder(out: Path) -> Path:
    """Ternary-SPM-bf16, made (again) beside tests/fixtures/hf-gguf/."""
    from fixturegen.hf_gguf import checkpoint, tokenizer_model

    base = out.parent / "hf-gguf-ternary"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    checkpoint(base / TERNARY, TERNARY_SPEC, tokenizer_model())
    return base


def quantized(out: Path, tree: Path, env: dict, where: dict):
    """QUANTIZE_RUNS made: the converter into a folder of its own, then llama-quantize on its
    first (or only) file; None when llama-quantize is not built."""
    scripts = Path(__file__).resolve().parents[1]
    tools = json.loads(subprocess.run([sys.executable, str(scripts / "llama-tools"), "--print"], check=True,
                                      capture_output=True, text=True).stdout)
    quantize = Path(tools["llama_quantize"])
    if not quantize.is_file():
        print("warning: llama-quantize is not built: the quantize runs of options.expected.json are kept",
              file=sys.stderr)
        return None
    runs = []
    for folder, args, options, preset in QUANTIZE_RUNS:
        with tempfile.TemporaryDirectory() as tmp:
            converted, done = Path(tmp) / "converted", Path(tmp) / "quantized"
            converted.mkdir()
            done.mkdir()
            subprocess.run([sys.executable, str(tree / "convert_hf_to_gguf.py"), str(where[folder] / folder),
                            "--outfile", str(converted / "out.gguf"), *args], check=True, capture_output=True, env=env)
            first = sorted(converted.iterdir())[0]
            subprocess.run([str(quantize), *options, str(first), str(done / "out.gguf"), preset, "1"], check=True,
                           capture_output=True, env=dict(os.environ, LD_LIBRARY_PATH=str(quantize.parent)))
            files = [{"name": p.name, "size": p.stat().st_size, "sha256": hashlib.sha256(p.read_bytes()).hexdigest()}
                     for p in sorted(done.iterdir())]
            runs.append({"folder": folder, "args": args, "quantize_args": options, "preset": preset, "files": files})
    return runs


def main() -> None:
    out, tree = Path(sys.argv[1]), Path(sys.argv[2])
    env = dict(os.environ, PYTHONPATH=str(tree / "gguf-py"))
    where = {FOLDER: out, TERNARY: ternary_folder(out)}
    runs = []
    for folder, args in RUNS:
        with tempfile.TemporaryDirectory() as tmp:
            dest = Path(tmp) / "out.gguf"
            given = [str(out / a) if a.endswith(".json") else a for a in args]
            subprocess.run([sys.executable, str(tree / "convert_hf_to_gguf.py"), str(where[folder] / folder),
                            "--outfile", str(dest), *given], check=True, capture_output=True, env=env)
            files = []
            for path in sorted(Path(tmp).iterdir()):
                data = path.read_bytes()
                files.append({"name": path.name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
            runs.append({"folder": folder, "args": args, "files": files,
                         "size": files[0]["size"], "sha256": files[0]["sha256"]})
    quantize_runs = quantized(out, tree, env, where)
    record = {"tool": "convert_hf_to_gguf.py of the llama-cpp-python 0.3.36 sdist", "runs": runs}
    if quantize_runs is None:
        # llama-quantize is not built: the runs recorded before are kept.
        previous = out / "options.expected.json"
        quantize_runs = json.loads(previous.read_text()).get("quantize_runs", []) if previous.is_file() else []
    record["quantize_tool"] = "llama-quantize of the same sdist, one thread"
    record["quantize_runs"] = quantize_runs
    (out / "options.expected.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
