"""An nginx on loopback serving a folder, for the benchmark's remote rows and the Python
package's remote tests; it logs the body bytes of every response, so that a row (or a test)
can say how many bytes crossed the network."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_binary() -> "str | None":
    """Debian's nginx, when installed."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    return binary if os.path.exists(binary) else None


class Nginx:
    def __init__(self, root: Path):
        binary = nginx_binary()
        if binary is None:
            raise RuntimeError("nginx is needed: apt-get install nginx-light")
        self.root = root
        self.work = Path(tempfile.mkdtemp(prefix="tensorfile-bench-nginx-"))
        self.log = self.work / "access.log"
        self.port = _free_port()
        temp = self.work / "temp"
        temp.mkdir()
        paths = " ".join(f"{k}_temp_path {temp};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        conf = self.work / "nginx.conf"
        conf.write_text(
            ("user root;\n" if os.geteuid() == 0 else "")
            + f"daemon off;\nworker_processes 2;\npid {self.work / 'nginx.pid'};\nerror_log {self.work / 'error.log'};\n"
            + "events { worker_connections 256; }\n"
            + "http { sendfile on; tcp_nopush on; keepalive_requests 100000;\n"
            + "  log_format counted '$request_method $status $body_bytes_sent $uri';\n"
            + f"  access_log {self.log} counted; {paths}\n"
            + f"  server {{ listen 127.0.0.1:{self.port}; root {root}; }}\n}}\n"
        )
        self.process = subprocess.Popen([binary, "-c", str(conf), "-p", str(self.work)], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"nginx did not start: {self.process.stderr.read().decode()}")
                time.sleep(0.05)

    def url(self, path: Path) -> str:
        return f"http://127.0.0.1:{self.port}/{path.name}"

    def sent(self, under: str = "") -> int:
        """Body bytes sent so far (for paths starting with `/under`, when given)."""
        time.sleep(0.05)  # a request's line is written when it completes
        if not self.log.exists():
            return 0
        lines = [line.split(" ", 3) + [""] for line in self.log.read_text().splitlines() if line.strip()]
        return sum(int(f[2]) for f in lines if not under or f[3].startswith(f"/{under}"))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        shutil.rmtree(self.work, ignore_errors=True)
