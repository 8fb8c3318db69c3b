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


def section(document: str, heading: str):
    """The section of `document` under `heading` (its lines up to the next `## `, the
    heading's included), or None when it has none."""
    for h, text in all_sections(document):
        if h == heading:
            return text
    return None


def all_sections(document: str) -> list:
    """Every `## ` section of `document`, in order: (heading, text)."""
    lines = document.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
    out = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        out.append((lines[start].rstrip("\n"), "".join(lines[start:end]).rstrip("\n") + "\n"))
    return out


def ms(s, decimals: int = 1) -> str:
    """Seconds as milliseconds (`-` for none), or as seconds from 10 s."""
    return "-" if s is None else (f"{s * 1e3:.{decimals}f}" if s < 10 else f"{s:.1f} s")


def commands(results) -> list:
    """The lines that end a section: each row's process, as run."""
    lines = ["", "Each row's process, as run (from `scripts/`):", ""]
    return lines + [f"- {r['group']}, {r['label']}: `{r['command']}`" for r in results]
