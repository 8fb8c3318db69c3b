"""Checks every real file (sources.py) with the tensorfile binary against its real reader and
prints the counts and every class of refusal, gap, wrong value and crash.

Each entry the real reader gives is, in tensorfile's hands: exact (same dtype, shape and bytes),
refused for a reason of the allow-list (the reader's value is not a tensor: reading.py; or
tensorfile names an HDF5 filter it does not decode), a gap (refused, unlisted, or refused
without a rule where the real reader reads numbers), or wrong (other values, or a tensor the
real reader does not list). A file is as bad as its worst
entry; a crash (exit status other than 0, 1 or 2, a panic, a timeout) makes the whole file
crashed. Files in a format tensorfile does not claim (MATLAB v5, netCDF-3, bare ONNX
TensorProto files) are counted apart when refused as an unknown format.

Usage (with the tools' environment's python): check.py BINARY [--only SUBSTRING] [--verbose]
Exit status 1 when any file is wrong or crashed."""

import argparse
import json
import re
import sys
import tempfile
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sources  # noqa: E402
import tool  # noqa: E402
from reading import NotTensor, Raw, Reading  # noqa: E402

# Worst first: a file's outcome is the worst of its entries'.
OUTCOMES = ("crashed", "wrong", "gap", "other format", "refused", "exact")


def reader_of(path: Path):
    suffix = path.suffix
    if suffix in (".h5", ".hdf5", ".nc", ".mat"):
        import hdf5 as module
    elif suffix in (".npy", ".npz"):
        import numpy_files as module
    elif suffix in (".onnx", ".pb"):
        import onnx_files as module
    elif suffix == ".gguf":
        import gguf_files as module
    elif suffix == ".safetensors":
        import safetensors_files as module
    elif suffix == ".jit":
        import torchscript_files as module
    else:
        return None
    return module.read


def normalise(message: str, path: Path) -> str:
    """A message with what varies between files (paths, names, numbers) taken out."""
    message = message.replace(str(path), "<file>").replace("tensorfile: ", "")
    message = re.sub(r'"[^"]*"', '"…"', message)
    message = re.sub(r"\b\d+\b", "N", message)
    return message.strip()[:200]


def le(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    return np.ascontiguousarray(array.astype(array.dtype.newbyteorder("<"), copy=False))


def compare(want, files: list, row: dict) -> tuple[str, str]:
    """(outcome, class) of one entry the real reader gives as numbers and tensorfile extracted."""
    if len(files) != 1:
        return "gap", f"extracted as {len(files)} files"
    got_path = files[0]
    if got_path.suffix == ".npy":
        got = le(np.load(got_path, allow_pickle=False))
        got_dtype, got_shape, got_bytes = str(got.dtype), list(got.shape), got.tobytes()
    else:
        got_dtype, got_shape, got_bytes = row.get("dtype"), list(row.get("shape") or []), got_path.read_bytes()
    if isinstance(want, Raw):
        if got_bytes != want.data:
            return "wrong", f"{want.dtype} bytes differ"
        return "exact", ""
    want = le(want)
    if got_path.suffix == ".npy" and got_dtype != str(want.dtype):
        return "wrong", f"dtype {want.dtype} read as {got_dtype}"
    if got_shape != list(want.shape):
        return "wrong", f"shape {list(want.shape)} read as {got_shape}"
    if got_bytes != want.tobytes():
        return "wrong", f"{want.dtype} values differ"
    return "exact", ""


def entry_outcome(name: str, want, ours: tool.Ours, path: Path) -> tuple[str, str, str]:
    """(outcome, class, detail) of one entry, named as tensorfile names it."""
    refusal = ours.refused.get(name)
    if want is None:
        if refusal is not None and refusal.rule:
            return "refused", "an entry the real reader does not list, unreadable with a rule", refusal.error
        if refusal is not None:
            return "gap", "an entry the real reader does not list, unreadable without a rule", refusal.error
        return "wrong", "a tensor the real reader does not list", ""
    if isinstance(want, NotTensor):
        if refusal is not None and refusal.rule:
            return "refused", f"{want.reason}", refusal.error
        if refusal is not None:
            return "gap", f"{want.reason}: refused without a rule: {normalise(refusal.error, path)}", refusal.error
        if name in ours.extracted:
            return "gap", f"read as a tensor where the real reader gives {want.reason}", want.detail
        return "gap", f"{want.reason}: not listed", want.detail
    if refusal is not None:
        if refusal.rule == "unknown-encoding" and "filter" in refusal.error:
            return "refused", "an HDF5 filter tensorfile does not decode", refusal.error
        return "gap", f"refused [{refusal.rule}]: {normalise(refusal.error, path)}", refusal.error
    if name not in ours.extracted:
        return "gap", "numbers the real reader reads, not listed", ""
    outcome, what = compare(want, ours.extracted[name], ours.rows.get(name, {}))
    return outcome, what, ""


def check_file(binary: Path, path: Path) -> tuple[str, list, str]:
    """(file outcome, [(outcome, class, entry name, detail)], format)."""
    try:
        reading: Reading = reader_of(path)(path)
    except Exception as e:  # noqa: BLE001 (the real reader fails on the whole file)
        reading = Reading("unreadable by its real reader", {"": NotTensor("the real reader cannot read it", str(e))})
    with tempfile.TemporaryDirectory() as tmp:
        try:
            ours = tool.read(binary, path, Path(tmp) / "out")
        except tool.Crash as e:
            return "crashed", [("crashed", "crash", "", str(e))], reading.format
        if ours.refused_file is not None:
            refusal = ours.refused_file
            if not reading.claimed and refusal.rule == "unknown-format":
                return "other format", [("other format", f"{reading.format}: {normalise(refusal.error, path)}", "", "")], reading.format
            numbers = [n for n, v in reading.entries.items() if not isinstance(v, NotTensor)]
            if refusal.rule and not numbers:
                what = ", ".join(sorted({v.reason for v in reading.entries.values()})) or "no tensors"
                return "refused", [("refused", f"whole file ({what})", "", refusal.error)], reading.format
            where = "whole file refused" if refusal.rule else "whole file refused without a rule"
            return "gap", [("gap", f"{where} [{refusal.rule}]: {normalise(refusal.error, path)}", "", refusal.error)], reading.format
        names = sorted(set(reading.entries) | set(ours.rows) | set(ours.extracted) | set(ours.refused))
        results = []
        for name in names:
            outcome, what, detail = entry_outcome(name, reading.entries.get(name), ours, path)
            results.append((outcome, what, name, detail))
    worst = min((OUTCOMES.index(r[0]) for r in results), default=OUTCOMES.index("exact"))
    return OUTCOMES[worst], results, reading.format


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary", type=Path)
    parser.add_argument("--only", default="", help="check only files whose path contains this")
    parser.add_argument("--verbose", action="store_true", help="print every file's outcome")
    args = parser.parse_args()
    found = [f for f in sources.files(Path(sys.executable)) if args.only in str(f[2])]
    counts = Counter()
    entries = Counter()
    by_format = defaultdict(Counter)
    classes = defaultdict(list)  # (outcome, format, class) -> [(file, entry, detail)]
    records = []
    for number, (source, root, path) in enumerate(found, 1):
        shown = f"{source.name}/{path.relative_to(root)}"
        outcome, results, fmt = check_file(args.binary, path)
        counts[outcome] += 1
        by_format[fmt][outcome] += 1
        for entry_outcome_, what, name, detail in results:
            entries[entry_outcome_] += 1
            if entry_outcome_ != "exact":
                classes[(entry_outcome_, fmt, what)].append((shown, name, detail))
        records.append({"file": shown, "outcome": outcome, "format": fmt,
                        "entries": [{"outcome": o, "class": c, "name": n, "detail": d} for o, c, n, d in results]})
        if args.verbose:
            print(f"{outcome:12} {shown}", flush=True)
        elif number % 250 == 0:
            print(f"  {number}/{len(found)} files", flush=True)
    (sources.CACHE / "results.json").write_text(json.dumps(records, indent=1))
    print_summary(len(found), counts, entries, by_format, classes)
    return 1 if counts["wrong"] or counts["crashed"] else 0


def print_summary(total: int, counts: Counter, entries: Counter, by_format: dict, classes: dict) -> None:
    print(f"\nreal files: {total} from {len(sources.SOURCES)} packages (results in {sources.CACHE / 'results.json'})")
    print("  files:   " + ", ".join(f"{o} {counts[o]}" for o in reversed(OUTCOMES)))
    print("  entries: " + ", ".join(f"{o} {entries[o]}" for o in reversed(OUTCOMES)))
    print("  (refused: with a reason of the allow-list; gap: refused, unlisted or refused without a rule where the")
    print("  real reader reads numbers; other format: a format tensorfile does not claim, refused as unknown)")
    for fmt, c in sorted(by_format.items()):
        print(f"  {fmt}: " + ", ".join(f"{o} {c[o]}" for o in reversed(OUTCOMES) if c[o]))
    for outcome in OUTCOMES[:-1]:
        found = [(k, v) for k, v in classes.items() if k[0] == outcome]
        if not found:
            continue
        print(f"\n{outcome} (by class: entries, files, an example):")
        for (_, fmt, what), items in sorted(found, key=lambda kv: -len(kv[1])):
            files = len({f for f, _, _ in items})
            file, name, detail = items[0]
            example = f"{file}" + (f' "{name}"' if name else "") + (f": {detail[:300]}" if detail else "")
            print(f"  [{fmt}] {what}: {len(items)} in {files} files; e.g. {example}")


if __name__ == "__main__":
    sys.exit(main())
