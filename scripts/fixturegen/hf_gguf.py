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
  TinyLlama-SPM-bf16.default.gguf
                                what the converter writes for TinyLlama-SPM-bf16 with its
                                default arguments (committed since it is small)
  hf-gguf.expected.json         every converter run: folder, arguments, output file name, size,
                                sha256, and the output as the vendored gguf-py's GGUFReader
                                reads it (key/values and tensor infos in file order, alignment,
                                data offset); the versions used

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

Needs torch, transformers 4.57.6, safetensors, numpy, sentencepiece and protobuf (the Python
that runs this script runs the converter too).

Usage: PYTHONPATH=scripts python -m fixturegen.hf_gguf tests/fixtures/hf-gguf LLAMA_CPP_TREE [--logs DIR]
  (scripts/fixtures runs it, when the tree and sentencepiece are there)
"""

import argparse
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
]
COMMITTED_LIMIT = 400 * 1024
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


def config(dtype: str, tied: bool):
    from transformers import LlamaConfig

    return LlamaConfig(
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


def model(dtype: str, tied: bool):
    """A LlamaForCausalLM whose every parameter (norms too, so that a mix-up shows) is drawn
    from the same seed."""
    import torch
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    m = LlamaForCausalLM(config(dtype, tied))
    generator = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for _name, p in m.named_parameters():
            p.copy_(torch.randn(p.shape, generator=generator, dtype=torch.float32) * 0.5)
    return m.to(getattr(torch, dtype)).eval()


def checkpoint(folder: Path, dtype: str, tied: bool, tokenizer_file: Path, shard: str | None) -> None:
    from transformers import LlamaTokenizer

    m = model(dtype, tied)
    kwargs = {"safe_serialization": True}
    if shard:
        kwargs["max_shard_size"] = shard
    m.save_pretrained(folder, **kwargs)
    # The slow tokenizer, legacy left to transformers' default.
    LlamaTokenizer(vocab_file=str(tokenizer_file)).save_pretrained(folder)
    # The file names of save_pretrained are what they are; checked, not assumed.
    names = sorted(p.name for p in folder.iterdir())
    print(f"{folder.name}: {names}", flush=True)


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
        "converter": "convert_hf_to_gguf.py and gguf-py of the llama.cpp tree vendored by the "
                     "llama-cpp-python==0.3.36 sdist",
    }


def generate(out: Path, tree: Path, logs: Path | None = None) -> None:
    import transformers

    if transformers.__version__ != TRANSFORMERS_VERSION:
        sys.exit(f"transformers {transformers.__version__}, the fixtures are made with {TRANSFORMERS_VERSION}")
    sys.path.insert(0, str(tree / "gguf-py"))
    import gguf

    if Path(gguf.__file__).resolve().parent.parent != (tree / "gguf-py").resolve():
        sys.exit(f"gguf imported from {gguf.__file__}, not from {tree / 'gguf-py'}")
    tokenizer_file = tokenizer_model()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    checkpoint(out / SPM, "bfloat16", False, tokenizer_file, None)
    checkpoint(out / TIED, "float32", True, tokenizer_file, None)
    checkpoint(out / SHARDED, "bfloat16", False, tokenizer_file, "70KB")

    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, (folder, args) in enumerate(RUNS):
            made = convert(tree, out / folder, args, Path(tmp), logs, index)
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
            runs.append(record)
            print(f"{folder} {' '.join(args) or '(default)'}: {made.name} {len(data)} bytes", flush=True)
    files = {}
    for folder in (SPM, TIED, SHARDED):
        for p in sorted((out / folder).iterdir()):
            files[f"{folder}/{p.name}"] = {"size": p.stat().st_size, "sha256": sha256_file(p)}
    record = {"versions": versions(), "checkpoint_files": files, "runs": runs}
    (out / "hf-gguf.expected.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="tests/fixtures/hf-gguf")
    parser.add_argument("tree", type=Path, help="the llama.cpp tree (with convert_hf_to_gguf.py and gguf-py/)")
    parser.add_argument("--logs", type=Path, help="keep every converter run's stdout and stderr here")
    args = parser.parse_args()
    generate(args.out.resolve(), args.tree.resolve(), args.logs)


if __name__ == "__main__":
    main()
