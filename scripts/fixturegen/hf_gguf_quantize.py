"""What llama.cpp's `llama-quantize` makes of the GGUF that `convert_hf_to_gguf.py` wrote from a
tiny Hugging Face checkpoint (tests/fixtures/hf-gguf/TinyLlama-SPM-bf16.default.gguf): the
reference for converting a checkpoint and quantizing it in one job.

Usage: python -m fixturegen.hf_gguf_quantize FIXTURES_HF_GGUF LLAMA_QUANTIZE
(LD_LIBRARY_PATH holding llama-quantize's libraries; scripts/fixtures runs it when
scripts/llama-tools has built the tools). Writes quantize.expected.json beside the converter's
record: for each preset, the arguments, size and sha256 of llama-quantize's output (one thread,
deterministic). The outputs themselves are not kept.
"""

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

SOURCE = "TinyLlama-SPM-bf16.default.gguf"
FOLDER = "TinyLlama-SPM-bf16"
PRESETS = ["Q4_K_M", "Q8_0", "Q6_K", "IQ4_NL", "Q2_K"]


def main() -> None:
    out, quantize = Path(sys.argv[1]), sys.argv[2]
    source = out / SOURCE
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for preset in PRESETS:
            dest = Path(tmp) / f"{preset}.gguf"
            subprocess.run([quantize, str(source), str(dest), preset, "1"], check=True, capture_output=True)
            data = dest.read_bytes()
            runs.append({"folder": FOLDER, "preset": preset, "size": len(data),
                         "sha256": hashlib.sha256(data).hexdigest()})
    record = {
        "source": SOURCE,
        "source_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
        "tool": "llama-quantize of the llama-cpp-python 0.3.36 sdist, one thread",
        "runs": runs,
    }
    (out / "quantize.expected.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
