"""The native module's Rust files (`src/`) import each other in one direction: no module
names, through `crate::`, a module that names it back (directly or around a circle)."""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def imports() -> dict:
    """Each module of `src/` (lib.rs, the root, aside) and the modules it names."""
    graph = {}
    for path in sorted(SRC.glob("*.rs")):
        if path.name == "lib.rs":
            continue
        code = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("//"))
        named = set(re.findall(r"\bcrate::(\w+)", code))
        for group in re.findall(r"\bcrate::\{([^}]*)\}", code):
            named |= set(re.findall(r"\b(\w+)\b", group))
        graph[path.stem] = named - {path.stem}
    return graph


def circle(graph: dict):
    """A circle of imports, as the list of its modules, or None."""
    state = {}

    def visit(module, path):
        state[module] = "open"
        for named in sorted(graph.get(module, ())):
            if state.get(named) == "open":
                return path[path.index(named):] + [named]
            if named not in state:
                found = visit(named, path + [named])
                if found:
                    return found
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module, [module])
            if found:
                return found
    return None


def test_the_reading_of_imports_finds_a_circle():
    assert circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert circle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_native_modules_form_no_circle():
    graph = imports()
    assert {"file", "tensor", "staging", "opened"} <= set(graph), graph
    assert graph["file"] >= {"tensor", "staging"}, "the reading of imports sees file.rs's"
    assert circle(graph) is None, f"modules of src/ import each other in a circle: {' -> '.join(circle(graph))}"
