"""Remote files through the package: a real nginx on loopback, started here, serving files
by range. Counted with nginx's own access log ($body_bytes_sent)."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorfile

# The nginx the benchmark's remote rows use (scripts/benchlib/server.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
from benchlib.server import Nginx, nginx_binary  # noqa: E402


@pytest.fixture
def server(tmp_path):
    if nginx_binary() is None:
        if os.environ.get("TENSORFILE_REQUIRE_SERVERS") == "1":
            pytest.fail("nginx is needed for the remote tests: apt-get install nginx-light")
        pytest.skip("nginx not installed")
    s = Nginx(tmp_path)
    yield s
    s.stop()


def test_a_remote_file_reads_by_range(server):
    rng = np.random.default_rng(7)
    tensors = {"big": rng.standard_normal((1024, 1024), dtype=np.float32), "small": np.arange(10, dtype=np.int64)}
    for ext in ("safetensors", "zt"):
        path = server.root / f"model.{ext}"
        tensorfile.save_file(tensors, path)
        os.chmod(path, 0o644)
        before = server.sent()
        with tensorfile.open(server.url(path)) as f:
            assert sorted(f) == ["big", "small"]
            opened = server.sent() - before
            assert opened < 70_000, f"{ext}: listing moved {opened} bytes"
            np.testing.assert_array_equal(f["small"].numpy(), tensors["small"])
            before = server.sent()
            np.testing.assert_array_equal(f["big"].numpy(), tensors["big"])
            assert server.sent() - before == tensors["big"].nbytes
        # Fetched ahead, each tensor once: at most the whole file and one speculative read.
        before = server.sent()
        loaded = tensorfile.load_file(server.url(path))
        moved = server.sent() - before
        assert moved <= path.stat().st_size + 65_536, f"{ext}: load_file moved {moved} bytes"
        for name, array in tensors.items():
            np.testing.assert_array_equal(loaded[name], array)


def test_many_tensors_load_in_order_and_only_into_their_own_file(server):
    tensors = {f"layer.{k}": np.full((k + 1, 300), k, dtype=np.float32) for k in range(40)}
    path = server.root / "many.safetensors"
    tensorfile.save_file(tensors, path)
    os.chmod(path, 0o644)
    loaded = tensorfile.load_file(server.url(path))
    assert list(loaded) == list(tensors)
    for name, array in tensors.items():
        np.testing.assert_array_equal(loaded[name], array)
    with tensorfile.open(server.url(path)) as f, tensorfile.open(path) as local:
        with pytest.raises(tensorfile.UsageError, match="another file"):
            f._file.load_tensors([f["layer.0"], local["layer.1"]])


def test_remote_errors_name_the_url(server):
    url = server.url(Path("missing.safetensors"))
    with pytest.raises(tensorfile.FileError) as caught:
        tensorfile.open(url)
    assert url in str(caught.value)
    with pytest.raises(tensorfile.UnsupportedError):
        tensorfile.save_file({"x": np.zeros(2)}, server.url(Path("out.safetensors")))
