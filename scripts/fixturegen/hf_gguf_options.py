"""The converter's options that set metadata over what a folder says (`--model-name NAME`,
`--metadata FILE`), run by llama.cpp's `convert_hf_to_gguf.py` on the tiny llama of
tests/fixtures/hf-gguf/: the reference for `tensorfile convert DIR out.gguf --model-name NAME`
and `--metadata-file FILE`.

Usage: python -m fixturegen.hf_gguf_options FIXTURES_HF_GGUF LLAMA_TREE (the Python of the
environment hf_gguf.py runs the converter in: torch and transformers 4.57.6). Writes
options.expected.json: each run's arguments, size and sha256 (the outputs are not kept). The
override file is tests/fixtures/hf-gguf/metadata-override.json, committed.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FOLDER = "TinyLlama-SPM-bf16"
RUNS = [
    ["--model-name", "My Tiny Model"],
    ["--metadata", "metadata-override.json"],
]


def main() -> None:
    out, tree = Path(sys.argv[1]), Path(sys.argv[2])
    env = dict(os.environ, PYTHONPATH=str(tree / "gguf-py"))
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for args in RUNS:
            dest = Path(tmp) / "out.gguf"
            given = [str(out / a) if a.endswith(".json") else a for a in args]
            subprocess.run([sys.executable, str(tree / "convert_hf_to_gguf.py"), str(out / FOLDER), "--outfile",
                            str(dest), *given], check=True, capture_output=True, env=env)
            data = dest.read_bytes()
            runs.append({"folder": FOLDER, "args": args, "size": len(data),
                         "sha256": hashlib.sha256(data).hexdigest()})
    record = {"tool": "convert_hf_to_gguf.py of the llama-cpp-python 0.3.36 sdist", "runs": runs}
    (out / "options.expected.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
