"""BENCHMARKS.md is made of sections (`## Heading` to the next `## `); a part of the
benchmark run alone replaces its own and keeps the rest."""


def splice(document: str, section: str, heading: str) -> str:
    """`document` with its section under `heading` replaced by `section` (added at its end
    when it has none)."""
    lines = document.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip("\n") == heading), None)
    if start is None:
        return document + ("" if document.endswith("\n\n") or not document else "\n") + section
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    after = "".join(lines[end:])
    return "".join(lines[:start]) + section + ("\n" + after if after else "")
