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
        loaded = tensorfile.load_file(server.url(path))
        np.testing.assert_array_equal(loaded["big"], tensors["big"])


def test_remote_errors_name_the_url(server):
    url = server.url(Path("missing.safetensors"))
    with pytest.raises(tensorfile.FileError) as caught:
        tensorfile.open(url)
    assert url in str(caught.value)
    with pytest.raises(tensorfile.UnsupportedError):
        tensorfile.save_file({"x": np.zeros(2)}, server.url(Path("out.safetensors")))
