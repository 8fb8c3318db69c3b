"""The GPU part's section of BENCHMARKS.md, from its state (scripts/benchlib/gpu.py): three
tables (from the page cache beside the peers and the pinned copy; the other formats; cold
beside the disk), the notes, and each row's process as run. Also the estimate printed before
a run, and the merging of the JSON files of steps run by separate commands."""

import datetime
import statistics

SECTION = "## Into one GPU, beside the loaders people use"


def merge(states: list) -> dict:
    """One state from several (`--from-json`): the first one's checkpoint and machine, each
    step from the last file that has it."""
    out = dict(states[0])
    out["steps"] = {}
    boots = []
    for s in states:
        out["steps"].update(s.get("steps", {}))
        boot = s.get("machine", {}).get("boot_id")
        if boot and boot not in boots:
            boots.append(boot)
    out["machines"] = len(boots)
    return out


def estimate(steps: list, nbytes: int, repeat: int, device: str, formats: str) -> str:
    """Rough seconds per step (process start with torch and CUDA about 6 s; loaders from the
    page cache 3 GB/s or better; the disk 1 GB/s; making a file 1 GB/s), files made once."""
    start = 6.0 if device.startswith("cuda") else 3.0
    gb = nbytes / 1e9
    n_formats = len(formats.split(","))
    each = {
        "warm": 2 * gb + repeat * (7 * start + 6 * gb / 3 + 2 * gb / 5),
        "formats": repeat * (start + gb / 3) + n_formats * (gb + repeat * (start + gb / 3)),
        "cold": 5 + repeat * (3 * gb + 3 * (start + gb)),
    }
    parts = [f"{s} ~{each[s] / 60:.1f} min" for s in steps]
    return ", ".join(parts) + f" (for {gb:.1f} GB, {repeat} repetitions; the checkpoint made once, ~{gb / 60 * 4:.1f} min)"


def median(e):
    return statistics.median(e["samples"]) if e.get("samples") else None


def rate(e):
    m = median(e)
    return e["bytes"] / m / 1e9 if m and e.get("bytes") else None


def f2(x, fmt="{:.2f}"):
    return "-" if x is None else fmt.format(x)


def status(e) -> str:
    if e.get("skip"):
        return f"skipped: {e['skip']}"
    if e.get("error"):
        return f"**failed**: {e['error']}"
    check = e.get("check")
    return "-" if check is None else ("ok" if check == "ok" else f"**wrong**: {check}")


def render(state: dict, command: str) -> str:
    ck, m = state["checkpoint"], state["machine"]
    steps = state.get("steps", {})
    cuda = m["device"].startswith("cuda")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    minutes = sum(s.get("seconds", 0) for s in steps.values()) / 60
    lines = [
        SECTION, "",
        f"Made by `{command}` on {now}; the steps took {minutes:.1f} minutes, up to {state.get('repeat', '?')} "
        "repetitions each (median; best beside it).",
    ]
    if not cuda:
        lines.append("**Dry run on the CPU** (`--device cpu`): the rows, their checks and this section exercised; "
                     "not numbers to judge by.")
    gpu = m.get("nvidia_smi") or m.get("gpu") or "no GPU"
    lines += [
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB; GPU: {gpu} (name, driver, PCIe gen and width "
        f"max, memory); torch {m['torch']}, Python {m['python']}, kernel {m['kernel']}"
        + (f"; the steps ran on {state['machines']} machines of this kind." if state.get("machines", 1) > 1 else "."),
        f"Checkpoint: {ck['tensors']} bf16 tensors shaped like a transformer's (hidden 2048, MLP 5632, vocabulary "
        f"32,000), {ck['tensor_bytes'] / 1e9:.2f} GB of tensor bytes ({ck['tensor_bytes'] / 2**30:.2f} GiB), a "
        f"safetensors file on {ck['filesystem']}. GB/s: tensor bytes over the median time.",
        "Each row is its own process, timed inside it from the loader's call to every tensor on the device",
        "(CUDA synchronized); the interpreter, the imports and the CUDA context come before the clock. Rows",
        "interleaved. Check: every tensor's dtype, shape and two checksums of its bytes, computed on the device,",
        "against safetensors' CPU load of the same file, in the first repetition.", "",
    ]
    if "warm" in steps:
        lines += warm_table(steps["warm"], cuda)
    if "formats" in steps:
        lines += formats_table(steps["formats"], pinned_rate(steps))
    if "cold" in steps:
        lines += cold_table(steps["cold"])
    lines += ["Each row's process, as run (from `scripts/`):", ""]
    for name, s in steps.items():
        seen = set()
        for e in s["rows"]:
            if e["command"] not in seen and e["command"] != "-":
                seen.add(e["command"])
                lines.append(f"- {name}, {e['label']}{' (.' + e['group'] + ')' if e.get('group') else ''}: "
                             f"`{e['command']}`")
    return "\n".join(lines) + "\n"


def pinned_rate(steps):
    pinned = next((e for e in steps.get("warm", {}).get("rows", []) if e["tool"] == "pinned"), None)
    return rate(pinned) if pinned else None


def notes(step) -> list:
    return [f"- {n}" for n in step.get("notes", [])] + ([""] if step.get("notes") else [])


def warm_table(step, cuda) -> list:
    rows = step["rows"]
    pinned = next((e for e in rows if e["tool"] == "pinned"), None)
    ceiling = rate(pinned) if pinned else None
    ours = next((e for e in rows if e["tool"] == "tensorfile"), None)
    lines = [
        f"### From the page cache, into {'the GPU' if cuda else 'memory (dry run)'}", "",
        f"{step['repetitions']} repetitions. Ceiling: a pinned host buffer of the same byte count copied to the device "
        "(best of three copies in its process, median over the repetitions). Target (issue 41): tensorfile at 0.75 "
        "or more of it, and ahead of every peer. `tensorfile.load_file` is a process's first load (the staging "
        "buffers registered during it); the row after it has them registered by `prepare_staging` first.", "",
        "| loader | version | median s | best s | GB/s | of pinned copy | time / tensorfile's | check | peak anon MiB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in rows:
        r, m = rate(e), median(e)
        share = r / ceiling if r and ceiling and e is not pinned else None
        ratio = m / median(ours) if m and ours and median(ours) and e is not ours and e is not pinned else None
        lines.append(f"| {e['label']} | {e.get('version') or '-'} | {f2(m, '{:.3f}')} | "
                     f"{f2(min(e['samples']) if e['samples'] else None, '{:.3f}')} | {f2(r)} | {f2(share)} | "
                     f"{f2(ratio, '{:.2f}x')} | {status(e) if e is not pinned else '-'} | {e['peak_anon'] / 2**20:.0f} |")
    lines.append("")
    prepared = next((e for e in rows if e["tool"] == "tensorfile-prepared"), None)
    for mine in (ours, prepared):
        if mine and median(mine) and ceiling:
            share = rate(mine) / ceiling
            behind = [e["label"] for e in rows
                      if e not in (ours, prepared, pinned) and median(e) and median(e) <= median(mine)]
            lines.append(f"{mine['label']}: {share:.2f} of the pinned copy "
                         f"({'met' if share >= 0.75 else '**not met**'}); "
                         + (f"**not ahead of**: {', '.join(behind)}." if behind else "ahead of every peer that ran."))
    if step.get("tensorizer_file_bytes"):
        lines.append(f"tensorizer reads only its own format: the same tensors written once by its TensorSerializer "
                     f"({step['tensorizer_file_bytes'] / 1e9:.2f} GB), warm in the page cache like the checkpoint.")
    lines += ["InstantTensor: buffered I/O (`BackendPolicy.BUFFERED`), which its documentation advises when the file "
              "is in the page cache. fastsafetensors: `nogds` unless /dev/nvidia-fs0 exists (GPUDirect Storage). "
              "Run:ai: `stream_file(device=...)`, which copies each tensor to the device.", ""]
    return lines + notes(step)


def formats_table(step, ceiling) -> list:
    rows = step["rows"]
    ref = next((e for e in rows if e.get("group") == "safetensors"), None)
    lines = [
        "### The other formats, from the page cache", "",
        "The checkpoint converted (untimed), read into the page cache, loaded by `tensorfile.load_file` onto the "
        "device; one file at a time, deleted after. Target (issue 41): each at 0.95 or more of the safetensors "
        "file's rate.", "",
        "| file | made by | size GB | median s | best s | GB/s | of pinned copy | of .safetensors | check |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in rows:
        r = rate(e)
        of_st = r / rate(ref) if r and ref and rate(ref) and e is not ref else None
        size = e.get("file_bytes")
        lines.append(f"| .{e['group']} | {e.get('made_by', '-')} | {f2(size / 1e9 if size else None)} | "
                     f"{f2(median(e), '{:.3f}')} | {f2(min(e['samples']) if e['samples'] else None, '{:.3f}')} | "
                     f"{f2(r)} | {f2(r / ceiling if r and ceiling else None)} | {f2(of_st)} | {status(e)} |")
    return lines + [""] + notes(step)


def cold_table(step) -> list:
    rows = step["rows"]
    disks = [e for e in rows if e["tool"] == "disk" and rate(e)]
    disk = max(disks, key=rate) if disks else None
    lines = [
        "### From disk, cold", "",
        f"{step['repetitions']} repetitions. The disk: the fastest of its own direct reads below"
        + (f" ({disk['label']}, {rate(disk):.2f} GB/s)" if disk else "")
        + ". Target: tensorfile at 0.9 or more of it. Resident: the largest share of the file's pages found in the "
        "page cache just before a row (mincore).", "",
        "| row | median s | best s | GB/s | of the disk | check | resident before | peak anon MiB |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in rows:
        r = rate(e)
        share = r / rate(disk) if r and disk and e is not disk else None
        lines.append(f"| {e['label']} | {f2(median(e), '{:.3f}')} | "
                     f"{f2(min(e['samples']) if e['samples'] else None, '{:.3f}')} | {f2(r)} | {f2(share)} | "
                     f"{status(e) if e['tool'] != 'disk' else '-'} | {f2(e.get('resident'), '{:.0%}')} | "
                     f"{e['peak_anon'] / 2**20:.0f} |")
    return lines + [""] + notes(step)


def splice(document: str, section: str) -> str:
    """`document` with its GPU section replaced by `section` (or added at its end)."""
    from .sections import splice as replace

    return replace(document, section, SECTION)
