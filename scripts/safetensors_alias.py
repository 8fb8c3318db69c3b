"""A pytest plugin (`-p safetensors_alias`, with scripts/ on PYTHONPATH) that makes
`import safetensors`, `safetensors.numpy` and `safetensors.torch` give tensorfile's drop-in
(`tensorfile.safetensors`), for running safetensors' own tests against it
(scripts/safetensors-suite). The real package is never imported: its other modules are
blocked, and the session fails if a module of its folder was loaded anyway.

Where torch is not installed, `torch` is a placeholder that fails on any use, so that the
cases of a test file that imports torch but never uses it (most of test_simple.py) run; the
suite's runner selects those cases alone there."""

import importlib.machinery
import importlib.util
import sys
import types
from pathlib import Path

import pytest

# Where the real safetensors is installed (None when it is not), found without importing it.
_REAL = importlib.machinery.PathFinder.find_spec("safetensors")
_REAL_DIR = None if _REAL is None or not _REAL.submodule_search_locations else Path(
    list(_REAL.submodule_search_locations)[0]
).resolve()


class _NoTorch(types.ModuleType):
    """`torch` where it is not installed: any use says so."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ModuleNotFoundError(f"torch is not installed (torch.{name} used): this case needs the full environment")


def _alias() -> None:
    already = sorted(m for m in sys.modules if m == "safetensors" or m.startswith("safetensors."))
    if already:
        raise RuntimeError(f"safetensors was imported before the alias: {already}")
    if importlib.util.find_spec("torch") is None:
        sys.modules["torch"] = _NoTorch("torch")
    import tensorfile.safetensors as ours
    import tensorfile.safetensors.numpy
    import tensorfile.safetensors.torch  # noqa: F401 (aliased below)

    sys.modules["safetensors"] = ours
    sys.modules["safetensors.numpy"] = ours.numpy
    sys.modules["safetensors.torch"] = ours.torch
    # The real package's other modules: importing one is an error, not the real package.
    for name in ("_safetensors_rust", "flax", "mlx", "paddle", "tensorflow"):
        sys.modules[f"safetensors.{name}"] = None


_alias()


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _REAL_DIR is None:
        return
    loaded = [
        name
        for name, module in list(sys.modules.items())
        if getattr(module, "__file__", None) and _REAL_DIR in Path(module.__file__).resolve().parents
    ]
    if loaded:
        print(f"\nsafetensors_alias: the real safetensors was imported: {loaded}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
