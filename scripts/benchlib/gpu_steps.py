"""The steps of the GPU part (scripts/benchlib/gpu.py): warm, formats and cold, each row its
own process (scripts/benchlib/gpu_rows.py), rows interleaved within a repetition; the
processes that make files; the page-cache and direct-read helpers."""

import ctypes
import json
import mmap
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .pagecache import drop_cache, read_whole

SCRIPTS = Path(__file__).resolve().parents[1]
LABELS = {
    "tensorfile": "tensorfile.load_file",
    "tensorfile-prepared": "tensorfile.load_file, staging buffers prepared before the clock",
    "safetensors": "safetensors load_file",
    "fastsafetensors": "fastsafetensors SafeTensorsFileLoader",
    "instanttensor": "InstantTensor safe_open",
    "runai": "Run:ai streamer SafetensorsStreamer",
    "tensorizer": "tensorizer TensorDeserializer (its own .tensors file)",
}
FORMAT_FILES = {"zt": ".zt", "zt-zstd": ".zstd.zt", "pt": ".pt", "pt2": ".pt2", "ptd": ".ptd", "gguf": ".gguf"}
# dd variants: (streams on disjoint ranges, block size)
DD = [(1, 64 << 20), (4, 64 << 20), (16, 16 << 20)]


def rows_command(*words) -> list:
    return [sys.executable, "-m", "benchlib.gpu_rows", *map(str, words)]


def call(command: list, env: dict) -> dict:
    """Run a row: its JSON line and peak RssAnon, or {"error": the end of its stderr}."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=SCRIPTS, env=env, text=True)
    peak, status = 0, Path(f"/proc/{proc.pid}/status")
    while proc.poll() is None:
        try:
            line = next((x for x in status.read_text().splitlines() if x.startswith("RssAnon:")), None)
            peak = max(peak, int(line.split()[1]) * 1024) if line else peak
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
    out, err = proc.communicate()
    if proc.returncode != 0:
        return {"error": (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1][-300:]}
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_anon"] = peak
    return result


def make_once(path: Path, command: list, env: dict) -> dict:
    """`command` makes `path` unless it is there: {"seconds": what it took, None if it was
    there} or {"error": why not}."""
    if path.exists():
        return {"seconds": None}
    start = time.perf_counter()
    r = subprocess.run(command, cwd=SCRIPTS, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["failed"])[-1][-300:]}
    return {"seconds": time.perf_counter() - start}


def drop_all() -> str:
    """Every clean page of the machine dropped (root), after a sync; how it went."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return "sync; echo 3 > /proc/sys/vm/drop_caches"
    except OSError as error:
        return f"drop_caches refused ({error.strerror}); posix_fadvise(DONTNEED) per file only"


def resident(path) -> float | None:
    """The share of `path`'s pages in the page cache (mincore on a shared read-only map)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    size = os.path.getsize(path)
    if size == 0:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        addr = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if addr is None or addr == ctypes.c_void_p(-1).value:
            return None
        pages = -(-size // mmap.PAGESIZE)
        vec = (ctypes.c_ubyte * pages)()
        ok = libc.mincore(addr, size, vec) == 0
        libc.munmap(addr, size)
    finally:
        os.close(fd)
    if not ok:
        return None
    raw = bytes(vec)
    return 1 - raw.count(0) / pages


def dd(path, streams: int, bs: int) -> dict:
    """The disk's own sequential direct read of `path`: `streams` dd processes on disjoint
    ranges at once (iflag=direct), timed until the last ends."""
    size = os.path.getsize(path)
    blocks = -(-size // bs)
    per = -(-blocks // streams)
    words = [["dd", f"if={path}", "of=/dev/null", f"bs={bs}", "iflag=direct", f"skip={i * per}", f"count={per}",
              "status=none"] for i in range(streams) if i * per < blocks]
    start = time.perf_counter()
    procs = [subprocess.Popen(w, stderr=subprocess.PIPE, text=True) for w in words]
    errors = [p.communicate()[1] for p in procs if p.wait() != 0]
    seconds = time.perf_counter() - start
    if errors:
        return {"error": errors[0].strip()[-300:]}
    return {"seconds": seconds, "bytes": size, "tensors": 0, "version": "coreutils dd", "peak_anon": 0}


def fio(path) -> dict:
    r = subprocess.run(["fio", "--name=seqread", f"--filename={path}", "--readonly", "--rw=read", "--direct=1",
                        "--bs=4M", "--ioengine=libaio", "--iodepth=16", "--output-format=json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-300:]}
    read = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]["read"]
    return {"seconds": read["runtime"] / 1e3, "bytes": read["io_bytes"], "tensors": 0, "version": "fio",
            "peak_anon": 0}


def shown(command: list) -> str:
    """A row's command as the section lists it (from scripts/, files by name)."""
    words = ["python" if w == sys.executable else w for w in command]
    return " ".join(Path(w).name if w.startswith("/") else w for w in words)


def public(value):
    """`value` without the keys that start with `_` (the functions a row runs), for JSON."""
    if isinstance(value, dict):
        return {k: public(v) for k, v in value.items() if not k.startswith("_")}
    if isinstance(value, list):
        return [public(v) for v in value]
    return value


class Run:
    """The steps, over one checkpoint; each keeps its rows in state["steps"][name] and saves
    the state (and --json) after every repetition."""

    def __init__(self, args, env, ck, repeat, started, state, state_path):
        self.args, self.env, self.ck, self.repeat = args, env, ck, repeat
        self.deadline = started + args.budget
        self.state, self.state_path = state, state_path
        self.cuda = args.device.startswith("cuda")

    def save(self) -> None:
        text = json.dumps(public(self.state), indent=1)
        self.state_path.write_text(text)
        if self.args.json:
            self.args.json.write_text(text)

    def begin(self, name: str) -> dict:
        step = {"started": time.time(), "rows": [], "notes": [], "repetitions": 0}
        self.state.setdefault("steps", {})[name] = step
        return step

    def finish(self, step) -> None:
        step["seconds"] = time.time() - step["started"]
        self.save()

    def row(self, step, label, run, command, tool=None, group=None) -> dict:
        """A row: `run(rep)` measures it once ({"seconds", "bytes", ...}, {"skip"} or {"error"})."""
        entry = {"label": label, "tool": tool, "group": group, "samples": [], "check": None, "peak_anon": 0,
                 "command": command, "_run": run}
        step["rows"].append(entry)
        return entry

    def load_row(self, step, label, tool, path, mode="warm", group=None) -> dict:
        def command(rep):
            extra = ["--check", self.ck["ref"]] if rep == 0 else []
            if tool.startswith("tensorfile") and self.args.staging is not None:
                extra += ["--staging", self.args.staging]
            return rows_command("load", tool, path, self.args.device, "--mode", mode, *extra)

        return self.row(step, label, lambda rep: call(command(rep), self.env), shown(command(1)), tool, group)

    def measure(self, entry, rep: int) -> None:
        if entry.get("skip") or entry.get("error"):
            return
        if "_before" in entry:
            entry["_before"](entry)
        result = entry["_run"](rep)
        if "skip" in result or "error" in result:
            entry.update({k: result[k] for k in ("skip", "error") if k in result})
            print(f"  {entry['label']}: {result.get('skip') or result.get('error')}", flush=True)
            return
        entry["samples"].append(result["seconds"])
        entry.update(bytes=result["bytes"], tensors=result["tensors"], version=result.get("version"))
        entry["peak_anon"] = max(entry["peak_anon"], result.get("peak_anon", 0))
        if "check" in result:
            entry["check"] = result["check"]
        print(f"  {entry['label']}{' (' + entry['group'] + ')' if entry['group'] else ''}: {result['seconds']:.3f} s"
              + (f", check {result['check']}" if "check" in result else ""), flush=True)

    def repetitions(self, step, rows, before) -> None:
        """`self.repeat` repetitions of `rows`, interleaved, `before` each; none started that
        would likely pass the budget."""
        last = 0.0
        for rep in range(self.repeat):
            if rep and time.time() + last > self.deadline:
                step["notes"].append(f"stopped after {rep} repetitions: another would pass --budget")
                break
            start = time.time()
            before()
            for entry in rows:
                self.measure(entry, rep)
            step["repetitions"] = max(step["repetitions"], rep + 1)
            last = time.time() - start
            self.finish(step)
            print(f"repetition {rep + 1}/{self.repeat} done", file=sys.stderr, flush=True)

    def warm(self) -> None:
        step = self.begin("warm")
        path = Path(self.ck["path"])
        tz = path.with_suffix(".tensors")
        if tz.exists() and tz.stat().st_mtime < path.stat().st_mtime:
            tz.unlink()
        made = make_once(tz, rows_command("tensorize", path, tz), self.env)
        if made.get("seconds"):
            step["notes"].append(f"tensorizer's file made by TensorSerializer in {made['seconds']:.0f} s")
        if tz.exists():
            step["tensorizer_file_bytes"] = tz.stat().st_size
        nbytes, device = self.ck["tensor_bytes"], self.args.device
        pinned = rows_command("pinned", nbytes, device)
        self.row(step, "pinned host-to-device copy" if self.cuda else "memory copy (CPU dry run)",
                 lambda rep: call(pinned, self.env), shown(pinned), tool="pinned")
        for tool in ("tensorfile", "tensorfile-prepared", "safetensors", "fastsafetensors", "instanttensor", "runai",
                     "tensorizer"):
            if tool == "tensorizer" and not tz.exists():
                failed = made.get("error", "no file")
                self.row(step, LABELS[tool], lambda rep: {"error": failed}, "-", tool)
                continue
            self.load_row(step, LABELS[tool], tool, tz if tool == "tensorizer" else path)

        def before():
            read_whole(path)
            if tz.exists():
                read_whole(tz)

        self.repetitions(step, step["rows"], before)

    def formats(self) -> None:
        step = self.begin("formats")
        path = Path(self.ck["path"])
        ref = self.load_row(step, "tensorfile.load_file", "tensorfile", path, group="safetensors")
        ref.update(made_by="the checkpoint", file_bytes=path.stat().st_size)
        self.repetitions(step, [ref], lambda: read_whole(path))
        last = None
        for fmt in self.args.formats.split(","):
            out = path.with_name(path.stem + FORMAT_FILES[fmt])
            if last and time.time() + last > self.deadline:
                step["notes"].append(f".{FORMAT_FILES[fmt].lstrip('.')} not measured: it would pass --budget")
                continue
            start = time.time()
            if fmt == "pt2":
                command, how = rows_command("export-pt2", path, out), "torch.export.save"
            else:
                compress = ["zstd"] if fmt == "zt-zstd" else []
                command = rows_command("convert", path, out, *compress)
                how = "tensorfile convert" + (" --compress zstd" if compress else "")
            out.unlink(missing_ok=True)
            made = make_once(out, command, self.env)
            entry = self.load_row(step, "tensorfile.load_file", "tensorfile", out, group=fmt)
            entry.update(made_by=how, make_seconds=made.get("seconds"))
            if "error" in made:
                entry["error"] = f"{how}: {made['error']}"
            else:
                entry["file_bytes"] = out.stat().st_size
                self.repetitions(step, [entry], lambda: read_whole(out))
            out.unlink(missing_ok=True)
            last = time.time() - start
            self.finish(step)

    def cold(self) -> None:
        step = self.begin("cold")
        path = Path(self.ck["path"])
        step["notes"].append(f"caches: {drop_all()}, once; before each row: posix_fadvise(DONTNEED) of the file")

        def evicted(entry):
            drop_cache(path)
            share = resident(path)
            entry["resident"] = max(entry.get("resident") or 0.0, share or 0.0)

        rows = []
        for streams, bs in DD:
            label = f"dd iflag=direct bs={bs >> 20}M" + (f", {streams} on disjoint ranges" if streams > 1 else "")
            command = f"dd if=FILE of=/dev/null bs={bs >> 20}M iflag=direct" + (
                f" skip=/count= ({streams} at once)" if streams > 1 else "")
            rows.append(self.row(step, label, lambda rep, s=streams, b=bs: dd(path, s, b), command, "disk"))
        if shutil.which("fio"):
            rows.append(self.row(step, "fio direct, libaio, 4M x 16 in flight", lambda rep: fio(path),
                                 "fio --rw=read --direct=1 --bs=4M --ioengine=libaio --iodepth=16", "disk"))
        for tool in ("tensorfile", "safetensors", "instanttensor"):
            label = LABELS[tool] + (" (its default: direct I/O)" if tool == "instanttensor" else "")
            rows.append(self.load_row(step, label, tool, path, mode="cold"))
        for entry in rows:
            entry["_before"] = evicted
        self.repetitions(step, rows, lambda: None)
