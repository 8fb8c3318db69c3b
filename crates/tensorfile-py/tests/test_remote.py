"""Remote files through the package: a real nginx on loopback, started here, serving files
by range. Counted with nginx's own access log ($body_bytes_sent)."""

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import tensorfile

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, root: Path, work: Path):
        self.root = root
        self.log = work / "access.log"
        self.port = _free_port()
        conf = work / "nginx.conf"
        temp = work / "temp"
        temp.mkdir()
        user = "user root;" if os.geteuid() == 0 else ""
        conf.write_text(
            f"""{user}
daemon off;
worker_processes 1;
pid {work / 'nginx.pid'};
error_log {work / 'error.log'};
events {{ worker_connections 64; }}
http {{
  log_format counted '$request_method $status $body_bytes_sent';
  access_log {self.log} counted;
  client_body_temp_path {temp}; proxy_temp_path {temp}; fastcgi_temp_path {temp};
  uwsgi_temp_path {temp}; scgi_temp_path {temp};
  server {{ listen 127.0.0.1:{self.port}; root {root}; }}
}}
"""
        )
        self.process = subprocess.Popen([NGINX, "-c", str(conf), "-p", str(work)], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"nginx did not start: {self.process.stderr.read().decode()}")
                time.sleep(0.05)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def sent(self) -> int:
        """Body bytes sent so far (nginx writes a request's line when it is done)."""
        time.sleep(0.05)
        if not self.log.exists():
            return 0
        return sum(int(line.split()[2]) for line in self.log.read_text().splitlines() if line.strip())

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


@pytest.fixture
def server(tmp_path):
    if NGINX is None:
        if os.environ.get("TENSORFILE_REQUIRE_SERVERS") == "1":
            pytest.fail("nginx is needed for the remote tests: apt-get install nginx-light")
        pytest.skip("nginx not installed")
    root = tmp_path / "root"
    root.mkdir()
    work = tmp_path / "nginx"
    work.mkdir()
    s = Server(root, work)
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
        with tensorfile.open(server.url(path.name)) as f:
            assert sorted(f) == ["big", "small"]
            opened = server.sent() - before
            assert opened < 70_000, f"{ext}: listing moved {opened} bytes"
            np.testing.assert_array_equal(f["small"].numpy(), tensors["small"])
            before = server.sent()
            np.testing.assert_array_equal(f["big"].numpy(), tensors["big"])
            assert server.sent() - before == tensors["big"].nbytes
        loaded = tensorfile.load_file(server.url(path.name))
        np.testing.assert_array_equal(loaded["big"], tensors["big"])


def test_remote_errors_name_the_url(server):
    url = server.url("missing.safetensors")
    with pytest.raises(tensorfile.FileError) as caught:
        tensorfile.open(url)
    assert url in str(caught.value)
    with pytest.raises(tensorfile.UnsupportedError):
        tensorfile.save_file({"x": np.zeros(2)}, server.url("out.safetensors"))
