"""The package's namespace is its API: `dir(tensorfile)` shows what `__all__` names and
nothing else but dunders, private names (helpers, modules imported under names with a
leading underscore) and the public subpackages, once imported; every public name is
documented."""

import importlib
import inspect

import tensorfile

# Imported only when asked for (`import tensorfile.safetensors`): the package does not import
# them, and then they are attributes of it.
SUBPACKAGES = {"safetensors"}


def public(names) -> set:
    return {n for n in names if not n.startswith("_")}


def test_the_namespace_is_all():
    assert len(tensorfile.__all__) == len(set(tensorfile.__all__)), "a name twice in __all__"
    assert public(dir(tensorfile)) - SUBPACKAGES == public(tensorfile.__all__)


def test_the_subpackages_are_documented_and_their_namespaces_are_their_all():
    for name in SUBPACKAGES:
        module = importlib.import_module(f"tensorfile.{name}")
        assert inspect.getdoc(module), name
        for member in module.__all__:
            assert member == "__version__" or inspect.getdoc(getattr(module, member)), f"{name}.{member}"
        submodules = {m for m in public(dir(module)) if inspect.ismodule(getattr(module, m))}
        assert public(dir(module)) - submodules == public(module.__all__), name
    # Dunders in __all__ are the package's own (its version), not the interpreter's.
    assert {n for n in tensorfile.__all__ if n.startswith("_")} == {"__version__"}


def test_every_name_of_all_exists_and_is_documented():
    for name in tensorfile.__all__:
        assert hasattr(tensorfile, name), name
        value = getattr(tensorfile, name)
        if name == "__version__":
            assert isinstance(value, str) and value, value
            continue
        assert inspect.getdoc(value), f"tensorfile.{name} has no docstring"


def test_every_public_member_of_the_public_classes_is_documented():
    for name in public(tensorfile.__all__):
        cls = getattr(tensorfile, name)
        if not inspect.isclass(cls) or issubclass(cls, BaseException):
            continue
        for member in public(dir(cls)):
            # Members of the mapping protocol that `File` inherits keep their own documents.
            attribute = inspect.getattr_static(cls, member)
            assert inspect.getdoc(attribute), f"tensorfile.{name}.{member} has no docstring"


def test_helpers_are_private_and_modules_stay_importable():
    for helper in ("json", "os", "np", "contextlib", "importlib", "warnings", "Mapping", "Iterator", "Any",
                   "PathLike", "torch_uint8", "NativeFile", "NativeTensor"):
        assert not hasattr(tensorfile, helper), helper
    from tensorfile import _distributed, _dtypes, _errors, _native, _staging  # noqa: F401

    assert tensorfile.Tensor.__mro__[1] is _native.NativeTensor
