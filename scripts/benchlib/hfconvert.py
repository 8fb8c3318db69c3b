"""The Hugging Face to GGUF part of the benchmark (`scripts/bench --only hf-convert`):
`tensorfile convert DIR out.gguf` beside llama.cpp's `convert_hf_to_gguf.py DIR --outfile
out.gguf`, and `tensorfile convert DIR out.gguf --quantize Q4_K_M` beside the converter followed
by `llama-quantize BF16.gguf out.gguf Q4_K_M N`.

The workload: a sharded bfloat16 LlamaForCausalLM of about 1 GB (hidden 2048, intermediate
5632, 11 layers, 32 heads, 4 kv heads, untied, vocabulary 1000; --quick: 2 layers, 0.18 GB),
random (transformers' own initialization from torch.manual_seed(0)), saved by transformers
4.57.6 `save_pretrained(max_shard_size="400MB")` with its generation_config.json, and the
SentencePiece tokenizer files of tests/fixtures/hf-gguf/TinyLlama-SPM-bf16 (tokenizer.model,
tokenizer_config.json, special_tokens_map.json), so that the converter takes its SentencePiece
path. Made once, in the tools' environment (torch, transformers), in the bench's cache
(~/.cache/tensorfile/bench/full/hf-convert/, or quick/), and reused.

The peers: the converter and gguf-py of the llama.cpp tree that `scripts/llama-tools --print`
names ("tree"; PYTHONPATH its own gguf-py), run by this Python, and the `llama-quantize` it
built ("llama_quantize"; LD_LIBRARY_PATH its folder). Ours: the release `tensorfile` binary
with `--threads N`. Before the timed rows, untimed: the converter's BF16 output (kept in the
cache as the input of the llama-quantize rows) and llama-quantize's Q4_K_M of it on every
core, compared by sha256 with ours (`convert` and `convert --quantize Q4_K_M`, every core).

Each row a whole process, timed by `timed.py` (wall time and the command's own peak RssAnon,
polled every 2 ms), its input files read whole into the page cache just before (warm:
`python -m benchlib.hfconvert warm FILE... -- COMMAND` reads them, then runs COMMAND), the
output folder emptied and synced before, rows interleaved, median of the repetitions. The
converter + llama-quantize pipeline's time is the sum of the two rows' medians, its peak the
larger of their peaks.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import sections

SECTION = "## Hugging Face to GGUF (convert beside convert_hf_to_gguf.py)"
# The BF16 rows again with the output in memory, where there is a tmpfs.
SHM = Path("/dev/shm") / "tensorfile-bench-hf"
SHM_GROUP = "HF -> GGUF (BF16), into tmpfs"
SCRIPTS = Path(__file__).resolve().parents[1]
ROOT = SCRIPTS.parent
TOKENIZER = ROOT / "tests" / "fixtures" / "hf-gguf" / "TinyLlama-SPM-bf16"
TOKENIZER_FILES = ["tokenizer.model", "tokenizer_config.json", "special_tokens_map.json"]
NAME = "BenchLlama-SPM-bf16"  # the converter names the model after its folder
WRITES = True
CONVERTER = "convert_hf_to_gguf.py"
OURS = "tensorfile convert"
LLAMA_QUANTIZE = "llama-quantize of the converter's BF16"
OURS_Q = "tensorfile convert --quantize Q4_K_M"
SHAPE = dict(hidden_size=2048, intermediate_size=5632, num_attention_heads=32, num_key_value_heads=4,
             vocab_size=1000)


def layers(quick: bool) -> int:
    return 2 if quick else 11


def tools() -> dict:
    done = subprocess.run([sys.executable, str(SCRIPTS / "llama-tools"), "--print"], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def binary() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / "tensorfile"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            h.update(chunk)
    return h.hexdigest()


def checkpoint_files(folder: Path) -> list:
    return sorted(p for p in folder.iterdir() if p.is_file())


def largest_tensor(folder: Path) -> tuple:
    """(name, elements) of the checkpoint's largest tensor, from its shards' headers."""
    best = ("", 0)
    for shard in sorted(folder.glob("*.safetensors")):
        with open(shard, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n))
        for name, info in header.items():
            if name != "__metadata__":
                elements = 1
                for d in info["shape"]:
                    elements *= d
                best = max(best, (name, elements), key=lambda t: t[1])
    return best


def make_checkpoint(folder: Path, quick: bool) -> None:
    """The checkpoint, written into `folder` (which must not exist), in this process."""
    import torch
    import transformers

    config = transformers.LlamaConfig(**SHAPE, num_hidden_layers=layers(quick), max_position_embeddings=2048,
                                      rms_norm_eps=1e-5, rope_theta=10000.0, bos_token_id=1, eos_token_id=2,
                                      tie_word_embeddings=False, dtype="bfloat16")
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    model = transformers.LlamaForCausalLM(config).eval()
    model.save_pretrained(folder, max_shard_size="400MB")
    for name in TOKENIZER_FILES:
        shutil.copyfile(TOKENIZER / name, folder / name)
    print(f"{folder}: {[p.name for p in checkpoint_files(folder)]}", file=sys.stderr, flush=True)


def converter_env(paths: dict) -> dict:
    return {"PYTHONPATH": str(Path(paths["tree"]) / "gguf-py"), "PYTHONHASHSEED": "0"}


def converter_command(paths: dict, model: Path, out: Path) -> list:
    return [sys.executable, str(Path(paths["tree"]) / CONVERTER), str(model), "--outfile", str(out)]


def quantize_env(paths: dict) -> dict:
    return {"LD_LIBRARY_PATH": str(Path(paths["llama_quantize"]).parent)}


def run(command: list, env: dict) -> None:
    done = subprocess.run([str(c) for c in command], env=dict(os.environ, **env), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, command))} failed ({done.returncode}):\n{done.stderr[-3000:]}")


def make(cache: Path, quick: bool) -> dict:
    paths = tools()
    if not paths.get("built"):
        sys.exit("the hf-convert part needs llama.cpp's tree and tools: run scripts/llama-tools first (10-20 minutes)")
    base = cache / ("quick" if quick else "full") / "hf-convert"
    model = base / NAME
    if not model.exists():  # moved into place whole, once made
        # Made in a process of its own (torch stays out of this one), then moved into place.
        tmp = base / f"{NAME}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "benchlib.hfconvert", "make", str(tmp), *(["--quick"] if quick else [])],
                       cwd=SCRIPTS, check=True)
        shutil.rmtree(model, ignore_errors=True)
        tmp.rename(model)
    # Once, untimed, on every core: the converter's BF16 (kept: the llama-quantize rows' input)
    # and llama-quantize's Q4_K_M of it, beside ours.
    check = base / "check"
    shutil.rmtree(check, ignore_errors=True)
    check.mkdir()
    theirs_bf16 = base / "converter.bf16.gguf"
    run(converter_command(paths, model, check / "theirs.bf16.gguf"), converter_env(paths))
    (check / "theirs.bf16.gguf").replace(theirs_bf16)
    run([paths["llama_quantize"], theirs_bf16, check / "theirs.q4km.gguf", "Q4_K_M", os.cpu_count()],
        quantize_env(paths))
    # Ours failing is a finding of the section, not the end of the bench: its rows are left out.
    failed = {}
    for kind, extra in (("bf16", []), ("q4km", ["--quantize", "Q4_K_M"])):
        command = [str(c) for c in (binary(), "convert", model, check / f"ours.{kind}.gguf", *extra)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            failed[kind] = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            print(f"{' '.join(command)} failed:\n{done.stderr[-2000:]}", file=sys.stderr)

    def same(ours: Path, theirs: Path) -> str:
        if not ours.exists():
            return "no output of ours"
        return "byte-identical" if sha256(ours) == sha256(theirs) else "DIFFERENT"

    identical = {"bf16": same(check / "ours.bf16.gguf", theirs_bf16),
                 "q4km": same(check / "ours.q4km.gguf", check / "theirs.q4km.gguf")}
    sizes = {p.name: p.stat().st_size for p in check.iterdir()}
    shutil.rmtree(check)
    shards = [p for p in checkpoint_files(model) if p.suffix == ".safetensors"]
    return {"model": model, "shards": shards, "bytes": sum(p.stat().st_size for p in shards),
            "files": checkpoint_files(model), "theirs_bf16": theirs_bf16, "identical": identical, "sizes": sizes,
            "failed": failed, "paths": paths, "largest": largest_tensor(model)}


def timed(python: Path, nbytes: int, warm: list, command: list, env: dict | None = None) -> list:
    """`command` timed by benchlib.timed, `warm` read into the page cache just before."""
    envs = [a for k, v in (env or {}).items() for a in ("--env", f"{k}={v}")]
    return [str(python), "-m", "benchlib.hfconvert", "warm", *map(str, warm), "--", str(python), "-m", "benchlib.timed",
            *envs, "--bytes", str(nbytes), "--", *map(str, command)]


def plan(files: dict, op: Path, python: Path, out: Path) -> list:
    """(workload, group, label, command, file for cold runs, is_write) rows; each warms its
    own input (a folder of shards), so none names a file for the bench to warm."""
    paths, model, nbytes, cores = files["paths"], files["model"], files["bytes"], os.cpu_count()
    w = "hf-convert"
    rows = [(w, "HF -> GGUF (BF16)", CONVERTER,
             timed(python, nbytes, files["files"], converter_command(paths, model, out / "theirs.gguf"),
                   converter_env(paths)), None, True)]
    for threads in sorted({1, cores}) if "bf16" not in files["failed"] else []:
        rows.append((w, "HF -> GGUF (BF16)", f"{OURS}, {threads} thread{'s' if threads > 1 else ''}",
                     timed(python, nbytes, files["files"], [binary(), "--threads", threads, "convert", model,
                                                            out / "ours.gguf"]), None, True))
    if SHM.parent.is_dir() and "bf16" not in files["failed"]:
        # The same conversion with the output in memory (tmpfs): no disk, and our sync before the
        # rename costs nothing, so that what is left is the work itself.
        SHM.mkdir(exist_ok=True)
        rows.append((w, SHM_GROUP, CONVERTER,
                     timed(python, nbytes, files["files"], converter_command(paths, model, SHM / "theirs.gguf"),
                           converter_env(paths)), None, True))
        rows.append((w, SHM_GROUP, f"{OURS}, {cores} thread{'s' if cores > 1 else ''}",
                     timed(python, nbytes, files["files"], [binary(), "--threads", cores, "convert", model,
                                                            SHM / "ours.gguf"]), None, True))
    for threads in sorted({1, cores}):
        group = f"HF -> Q4_K_M, {threads} thread{'s' if threads > 1 else ''}"
        rows.append((w, group, LLAMA_QUANTIZE,
                     timed(python, nbytes, [files["theirs_bf16"]],
                           [paths["llama_quantize"], files["theirs_bf16"], out / "theirs.q4km.gguf", "Q4_K_M", threads],
                           quantize_env(paths)), None, True))
        if "q4km" in files["failed"]:
            continue
        rows.append((w, group, OURS_Q,
                     timed(python, nbytes, files["files"], [binary(), "--threads", threads, "convert", model,
                                                            out / "ours.q4km.gguf", "--quantize", "Q4_K_M"]),
                     None, True))
    return rows


def render(results, files, machine, command, elapsed, quick, repeat) -> str:
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    by = {(r["group"], r["label"]): r for r in results}
    nbytes, mib = files["bytes"], 2**20
    name, elements = files["largest"]
    largest_f32 = elements * 4
    conv = by[("HF -> GGUF (BF16)", CONVERTER)]
    ours_rows = sorted((r for r in results if r["group"] == "HF -> GGUF (BF16)" and r["label"] != CONVERTER),
                       key=lambda r: int(r["label"].split(", ")[1].split()[0]))
    q_groups = sorted({r["group"] for r in results if r["group"].startswith("HF -> Q4_K_M")},
                      key=lambda g: int(g.split(", ")[1].split()[0]))
    ident = files["identical"]
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes, {repeat} repetition{'s' if repeat > 1 else ''}"
        + (" (quick: a small model; not the numbers to judge by)." if quick else "."),
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB. Each row a whole process "
        "(start to exit),",
        "its input read into the page cache just before (warm), the output folder emptied and synced before, rows",
        "interleaved, median. GB/s: of the checkpoint's safetensors bytes, for every row. Peak anon: the most",
        "anonymous memory (RssAnon) of the process.",
        f"Checkpoint: `{NAME}`, LlamaForCausalLM, {nbytes / 1e9:.2f} GB of bfloat16 in {len(files['shards'])} "
        f"shard{'s' if len(files['shards']) > 1 else ''} "
        f"(transformers 4.57.6 `save_pretrained(max_shard_size=\"400MB\")`; hidden {SHAPE['hidden_size']}, "
        f"intermediate {SHAPE['intermediate_size']}, {layers(quick)} layers, {SHAPE['num_attention_heads']} heads, "
        f"{SHAPE['num_key_value_heads']} kv heads, vocabulary {SHAPE['vocab_size']}, SentencePiece tokenizer), "
        f"largest tensor `{name}` ({elements:,} values: {elements * 2 / mib:.0f} MiB as bfloat16, "
        f"{largest_f32 / mib:.0f} MiB as float32).",
        "Peers: `convert_hf_to_gguf.py` and gguf-py of the llama.cpp tree vendored by the llama-cpp-python 0.3.36 "
        "sdist, "
        "and the `llama-quantize` scripts/llama-tools builds from it (CMake defaults).",
        f"Outputs compared once before the timed rows (every core): BF16, ours vs the converter's: "
        f"**{ident['bf16']}**; Q4_K_M, ours vs the converter's then llama-quantize's: **{ident['q4km']}**.", "",
        "### Targets", "",
        "| target | this run | met |", "| --- | --- | --- |",
    ]

    def yes(ok: bool) -> str:
        return "yes" if ok else "**no**"

    failed = files["failed"]
    for kind, what in (("bf16", "BF16"), ("q4km", "Q4_K_M")):
        if kind in failed:
            lines.append(f"| {what}: tensorfile convert runs | fails: `{failed[kind]}` | **no** |")
    for r in ours_rows:
        x = conv["warm"] / r["warm"]
        lines.append(f"| BF16, {r['label'].split(', ')[1]}: at least 10x convert_hf_to_gguf.py (whole process) | "
                     f"{x:.1f}x | {yes(x >= 10)} |")
    shm = [r for r in results if r["group"] == SHM_GROUP]
    shutil.rmtree(SHM, ignore_errors=True)
    if len(shm) == 2:
        peer, ours = sorted(shm, key=lambda r: r["label"] != CONVERTER)
        x = peer["warm"] / ours["warm"]
        lines.append(f"| BF16 into tmpfs, {ours['label'].split(', ')[1]}: at least 10x convert_hf_to_gguf.py (whole "
                     f"process, both writing to memory) | {x:.1f}x | {yes(x >= 10)} |")
    lines.append(f"| BF16: byte-identical to the converter's | {ident['bf16']} | "
                 f"{yes(ident['bf16'] == 'byte-identical')} |")
    for r in ours_rows:
        peak = r["peak_anon"]
        lines.append(f"| BF16, {r['label'].split(', ')[1]}: peak anon at most 512 MiB | {peak / mib:.0f} MiB "
                     f"({peak / largest_f32:.1f}x the largest tensor as float32) | {yes(peak <= 512 * mib)} |")
    for g in q_groups if "q4km" not in failed else []:
        pipeline = conv["warm"] + by[(g, LLAMA_QUANTIZE)]["warm"]
        x = pipeline / by[(g, OURS_Q)]["warm"]
        lines.append(f"| {g.split(', ')[1]}: at least 3x the converter then llama-quantize | {x:.1f}x | "
                     f"{yes(x >= 3)} |")
    lines.append(f"| Q4_K_M: byte-identical to the converter then llama-quantize | {ident['q4km']} | "
                 f"{yes(ident['q4km'] == 'byte-identical')} |")
    for g in q_groups if "q4km" not in failed else []:
        peak = by[(g, OURS_Q)]["peak_anon"]
        lines.append(f"| Q4_K_M, {g.split(', ')[1]}: peak anon at most 512 MiB | {peak / mib:.0f} MiB "
                     f"({peak / largest_f32:.1f}x the largest tensor as float32) | {yes(peak <= 512 * mib)} |")
    lines += ["", "### Rows", "",
              "| operation | tool | s | GB/s of input | vs the peer | peak anon MiB |",
              "| --- | --- | --- | --- | --- | --- |"]

    def row(group, label, s, peer_s, peak) -> str:
        return (f"| {group} | {label} | {s:.2f} | {nbytes / s / 1e9:.3f} | "
                f"{'-' if peer_s is None else f'{peer_s / s:.2f}x'} | {peak / mib:.0f} |")

    lines.append(row("HF -> GGUF (BF16)", CONVERTER, conv["warm"], None, conv["peak_anon"]))
    for r in ours_rows:
        lines.append(row("HF -> GGUF (BF16)", r["label"], r["warm"], conv["warm"], r["peak_anon"]))
    if len(shm) == 2:
        lines.append(row(SHM_GROUP, CONVERTER, peer["warm"], None, peer["peak_anon"]))
        lines.append(row(SHM_GROUP, ours["label"], ours["warm"], peer["warm"], ours["peak_anon"]))
    for g in q_groups:
        lq, ours = by[(g, LLAMA_QUANTIZE)], by.get((g, OURS_Q))
        pipeline = conv["warm"] + lq["warm"]
        lines.append(row(g, f"{LLAMA_QUANTIZE} (alone)", lq["warm"], None, lq["peak_anon"]))
        lines.append(row(g, "convert_hf_to_gguf.py then llama-quantize (sum)", pipeline, None,
                         max(conv["peak_anon"], lq["peak_anon"])))
        if ours is None:
            lines.append(f"| {g} | {OURS_Q} | fails | - | - | - |")
        else:
            lines.append(row(g, OURS_Q, ours["warm"], pipeline, ours["peak_anon"]))
    lines += ["", "Each row's process, as run (from `scripts/`; the `benchlib.hfconvert warm` and `benchlib.timed` "
              "wrappers left out; the converter with PYTHONPATH=TREE/gguf-py, llama-quantize with LD_LIBRARY_PATH "
              "its folder):", ""]
    for r in results:
        lines.append(f"- {r['group']}, {r['label']}: `{shown(r['command'])}`")
    return "\n".join(lines) + "\n"


def shown(command: str) -> str:
    """The timed command of a row's command line (as the bench joins it), without wrappers."""
    return command.split(" -- ")[-1]


def splice(document: str, section: str) -> str:
    return sections.splice(document, section, SECTION)


def warm(argv: list) -> None:
    """`warm FILE... -- COMMAND...`: each FILE dropped from the page cache and read whole, then
    COMMAND run in this process's place."""
    from .pagecache import drop_cache, read_whole

    cut = argv.index("--")
    for path in argv[:cut]:
        drop_cache(path)
        read_whole(path)
    command = argv[cut + 1:]
    os.execvp(command[0], command)


def main() -> None:
    if sys.argv[1:2] == ["warm"]:
        warm(sys.argv[2:])
    elif sys.argv[1:2] == ["make"]:
        make_checkpoint(Path(sys.argv[2]), "--quick" in sys.argv[3:])
    else:
        sys.exit("usage: python -m benchlib.hfconvert warm FILE... -- COMMAND... | make DIR [--quick]")


if __name__ == "__main__":
    main()
