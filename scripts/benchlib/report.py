"""BENCHMARKS.md from the measured rows: the machine, the command, a table per workload, and
the targets of the performance issue with the ratio each reached in this run."""

import datetime


def mib(n) -> str:
    return f"{n / 2**20:.0f}"


def ms(s) -> str:
    return "-" if s is None else (f"{s * 1e3:.1f}" if s < 10 else f"{s:.1f} s")


def find(results, workload, group, label):
    for r in results:
        if r["workload"] == workload and r["group"] == group and r["label"] == label:
            return r
    return None


def ratio(results, workload, group, ours, peer, mode="warm"):
    a, b = find(results, workload, group, ours), find(results, workload, group, peer)
    if not a or not b or not a[mode] or not b[mode]:
        return None
    return b[mode] / a[mode]


def targets(results) -> list:
    """(target, measured, ok)."""
    out = []

    def add(text, value, goal, fmt="{:.2f}x"):
        if value is not None:
            out.append((text, fmt.format(value), value >= goal))

    add("open many-small .safetensors at least as fast as the safetensors crate",
        ratio(results, "many-small", "open .safetensors", "tensorfile (Rust)", "safetensors (Rust)"), 1.0)
    for w in ("llama-1b", "many-small"):
        for fmt in ("safetensors", "zt"):
            add(f"{w}: read .{fmt} warm, at least 0.9 of the bare map",
                ratio(results, w, f"read .{fmt}", "tensorfile (Rust)", "bare memory map (Rust)"), 0.9)
        add(f"{w}: read .zt warm, at least 3x the zTensor 0.1 crate",
            ratio(results, w, "read .zt", "tensorfile (Rust)", "ztensor (Rust)"), 3.0)
        add(f"{w}: read .zt warm, at least 3x pip ztensor 0.1.4",
            ratio(results, w, "read .zt (Python)", "tensorfile", "ztensor 0.1.4 (pip)"), 3.0)
        add(f"{w}: read .safetensors warm, at least the safetensors crate's speed",
            ratio(results, w, "read .safetensors", "tensorfile (Rust)", "safetensors (Rust)"), 1.0)
        add(f"{w}: write .zt raw, at least 0.8 of write_all",
            ratio(results, w, "write .zt", "tensorfile raw", "plain write_all"), 0.8)
        add(f"{w}: zstd on all cores, at least 1.7x one thread",
            ratio(results, w, "compress .zt zstd (no disk)", "tensorfile zstd, all cores", "tensorfile zstd, one thread"), 1.7)
        add(f"{w}: Python load into torch at least as fast as safetensors.torch.load_file",
            ratio(results, w, "load into torch (Python)", "tensorfile.load_file", "safetensors.torch.load_file"), 1.0)
    add("llama-1b: .pt2 weights at least 5x torch.export.load",
        ratio(results, "llama-1b", "read .pt2 (Python)", "tensorfile", "torch.export.load"), 5.0)
    add("mobilenet: .pt2 weights at least 5x torch.export.load",
        ratio(results, "mobilenet", "read .pt2", "tensorfile (Python)", "torch.export.load"), 5.0)
    add("mobilenet: .pte constants at least 10x deserialize_pte_binary",
        ratio(results, "mobilenet", "read .pte", "tensorfile (Python)", "deserialize_pte_binary"), 10.0)
    curl = find(results, "remote", "read all over HTTP", "curl, whole .safetensors")
    curl_mem = find(results, "remote", "read all over HTTP", "curl, whole .safetensors into memory (/dev/shm)")
    for fmt in ("safetensors", "zt"):
        ours = find(results, "remote", "read all over HTTP", f"tensorfile .{fmt} (Rust)")
        for peer, what in ((curl, "curl's throughput (into /dev/null)"), (curl_mem, "curl's into memory (/dev/shm)")):
            if peer and ours and peer["warm"] and ours["warm"]:
                rate = (ours["bytes"] / ours["warm"]) / (peer["bytes"] / peer["warm"])
                add(f"remote: read all of llama-1b .{fmt} over HTTP, at least 0.8 of {what}", rate, 0.8)
        listed = find(results, "remote", "list over HTTP", f"tensorfile .{fmt} (Rust)")
        if listed and listed["sent"] is not None:
            out.append((f"remote: listing llama-1b .{fmt} ({listed['file_bytes'] / 2**30:.1f} GiB) over HTTP moves less than 1 MiB",
                        f"{listed['sent'] / 1024:.0f} KiB", listed["sent"] < 2**20))
    one = find(results, "remote", "one tensor over HTTP", "tensorfile .safetensors (Rust)")
    listed = find(results, "remote", "list over HTTP", "tensorfile .safetensors (Rust)")
    if one and listed and one["sent"] is not None and listed["sent"] is not None:
        extra = one["sent"] - one["bytes"]
        out.append(("remote: one tensor over HTTP moves its bytes plus at most the listing's (header) bytes",
                    f"{one['bytes'] / 2**20:.1f} MiB tensor + {extra / 1024:.0f} KiB", extra <= listed["sent"]))
    converts = [r for r in results if r["group"] == "convert"]
    if converts:
        worst = max(converts, key=lambda r: r["peak_anon"])
        out.append((f"llama-1b: convert between formats, peak anonymous memory under 256 MiB (worst: {worst['label']})",
                    f"{mib(worst['peak_anon'])} MiB", worst["peak_anon"] < 256 * 2**20))
    return out


# The sections `render` makes (the main part's): the rest of BENCHMARKS.md is the other parts'.
MAIN_SECTIONS = {"## Targets", "## llama-1b", "## many-small", "## mobilenet", "## remote", "## Commands"}


def render(results, files, machine, command, elapsed, quick) -> str:
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Benchmarks",
        "",
        f"Made by `{command}` on {now}, in {elapsed / 60:.1f} minutes"
        + (" (quick: small workloads; not the numbers the targets are judged on)." if quick else "."),
        "",
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB, Linux "
        f"{machine['kernel']}, Python {machine['python']}.",
        "",
        "Each row is the median of its repetitions, timed inside its own process; rows run interleaved.",
        "Warm: the file was dropped from the page cache and read whole just before (the same cache",
        "state for every row); cold: `posix_fadvise(DONTNEED)` dropped it first. Writing rows start",
        "with their output folder emptied and synced. Peak anon: the most anonymous memory (RssAnon)",
        "the process held. Ratios compare",
        "rows of one run: these machines are noisy, and only ratios carry over. What limits the",
        "targets this run misses: [docs/performance.md](docs/performance.md).",
        "",
        *([f"Not measured in this run: {', '.join(w for w, f in files.items() if not f)} (its files could not be "
           "made here: see the run's output).", ""] if any(not f for f in files.values()) else []),
        "## Targets",
        "",
        "| target | this run | met |",
        "| --- | --- | --- |",
    ]
    for text, value, ok in targets(results):
        lines.append(f"| {text} | {value} | {'yes' if ok else '**no**'} |")
    for workload in dict.fromkeys(r["workload"] for r in results):
        sizes = ", ".join(f"`.{k}` {v.stat().st_size / 1e6:.1f} MB" for k, v in files[workload].items())
        lines += ["", f"## {workload}", "", f"Files: {sizes}.", "",
                  "| operation | tool | warm ms | cold ms | GB/s warm | peak anon MiB | tensors | sent MB |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in results:
            if r["workload"] != workload:
                continue
            rate = f"{r['bytes'] / r['warm'] / 1e9:.2f}" if r["bytes"] and r["warm"] else "-"
            sent = "-" if r.get("sent") is None else f"{r['sent'] / 1e6:.3f}"
            lines.append(f"| {r['group']} | {r['label']} | {ms(r['warm'])} | {ms(r['cold'])} | {rate} | "
                         f"{mib(r['peak_anon'])} | {r['tensors']} | {sent} |")
    lines += ["", "## Commands", "", "Each row's process, as run (from `scripts/`):", ""]
    for r in results:
        lines.append(f"- {r['workload']}, {r['group']}, {r['label']}: `{r['command']}`")
    return "\n".join(lines) + "\n"
