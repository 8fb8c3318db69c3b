"""The shipped type stubs (`_native.pyi`) describe the native module exactly: the same
classes, functions, methods and properties, and the same parameters."""

import ast
import inspect
from pathlib import Path

import tensorfile
from tensorfile import _native

STUB = Path(tensorfile.__file__).with_name("_native.pyi")
# What the stubs name that is not a member of the class's own namespace.
C_LEVEL = {"__new__"}
# Dunder members the stubs describe like any other (properties and methods).
DUNDERS = ("__len__", "__contains__", "__array_interface__")


def stub_tree() -> ast.Module:
    assert STUB.is_file(), "the stubs are shipped beside the module"
    return ast.parse(STUB.read_text())


def params(node: ast.FunctionDef) -> list:
    return [a.arg for a in node.args.args + node.args.kwonlyargs if a.arg not in ("self", "cls")]


def test_the_stubs_name_everything_the_module_has_and_nothing_else():
    tree = stub_tree()
    stub_names = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    stub_names |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)}
    module_names = {n for n in dir(_native) if not n.startswith("_") or n == "__version__"}
    assert stub_names == module_names


def test_classes_and_functions_match():
    for node in stub_tree().body:
        if isinstance(node, ast.FunctionDef):
            assert params(node) == list(inspect.signature(getattr(_native, node.name)).parameters), node.name
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(_native, node.name)
        stubbed = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
        real = {n for n in vars(cls) if not n.startswith("_") or n in DUNDERS}
        assert set(stubbed) - C_LEVEL == real, node.name
        for name, m in stubbed.items():
            if name in C_LEVEL:
                continue
            member = inspect.getattr_static(cls, name)
            is_property = any(isinstance(d, ast.Name) and d.id == "property" for d in m.decorator_list)
            assert is_property == (type(member).__name__ == "getset_descriptor"), f"{node.name}.{name}"
            if not is_property and not name.startswith("__"):
                signature = inspect.signature(getattr(cls, name))
                real_params = [p for p in signature.parameters if p not in ("self", "cls")]
                assert params(m) == real_params, f"{node.name}.{name}"


def test_the_package_stubs_name_what_all_names():
    """Type checkers read the package's names from `__init__.pyi` when it is shipped, else
    from `__init__.py` (with `py.typed`): either way the names they see bound at the top
    level, and the `__all__` they read, are the runtime's `__all__`."""
    assert Path(tensorfile.__file__).with_name("py.typed").is_file(), "py.typed is shipped"
    stub = Path(tensorfile.__file__).with_name("__init__.pyi")
    tree = ast.parse((stub if stub.is_file() else Path(tensorfile.__file__)).read_text())
    static_all = None
    bound = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    bound.add(target.id)
                    if target.id == "__all__":
                        static_all = ast.literal_eval(node.value)
    assert static_all == tensorfile.__all__, "__all__ is a literal list that type checkers read as it is"
    assert {n for n in bound if not n.startswith("_")} == {n for n in tensorfile.__all__ if not n.startswith("_")}
    assert set(tensorfile.__all__) <= bound
