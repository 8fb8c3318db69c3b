"""Runs the tensorfile binary on one file, with a timeout: what `ls --json` lists and what
`extract --json` writes, or the whole file's refusal. A crash is an exit status other than
0, 1 or 2, a panic message, or a timeout."""

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT_S = 120


class Crash(Exception):
    """The binary crashed, panicked or hung on a file."""


@dataclass
class Refusal:
    """An entry (or the whole file) tensorfile does not read: its message and rule."""

    error: str
    rule: str | None


@dataclass
class Ours:
    """What tensorfile reads of a file: listed rows by name, extracted files by name, refused
    entries by name; or `refused_file` when the whole file is refused."""

    rows: dict = field(default_factory=dict)
    extracted: dict = field(default_factory=dict)
    refused: dict = field(default_factory=dict)
    refused_file: Refusal | None = None


def run(binary: Path, *args) -> subprocess.CompletedProcess:
    command = [str(binary), *map(str, args)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise Crash(f"`{' '.join(command[1:2])}` ran past {TIMEOUT_S} s") from None
    if done.returncode not in (0, 1, 2) or "panicked" in done.stderr:
        raise Crash(f"`{command[1]}` exit status {done.returncode}: {done.stderr.strip()[-300:]}")
    return done


def rule_of(message: str) -> str | None:
    """The rule a message ends with (`... [rule]`), if any."""
    found = re.search(r"\[([a-z0-9-]+)\]\s*$", message.strip())
    return found.group(1) if found else None


def read(binary: Path, path: Path, out: Path) -> Ours:
    ours = Ours()
    listed = run(binary, "ls", path, "--json")
    if listed.returncode != 0:
        message = listed.stderr.strip()
        ours.refused_file = Refusal(message, rule_of(message))
        return ours
    for row in json.loads(listed.stdout):
        ours.rows[row["name"]] = row
        if row["kind"] == "unreadable":
            ours.refused[row["name"]] = Refusal(row.get("error") or "", row.get("rule"))
    extracted = run(binary, "extract", path, "-o", out, "--json", "--dense")
    try:
        report = json.loads(extracted.stdout)
    except json.JSONDecodeError:
        message = extracted.stderr.strip()
        ours.refused_file = Refusal("extract: " + message, rule_of(message))
        return ours
    for item in report["extracted"]:
        ours.extracted[item["name"]] = [Path(f) for f in item["files"]]
    for item in report["failed"]:
        ours.refused.setdefault(item["name"], Refusal(item["error"], item.get("rule")))
    return ours
