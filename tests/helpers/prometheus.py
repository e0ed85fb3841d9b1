"""A real Prometheus server (Debian ``prometheus``) on a loopback port, started and stopped by a test.

The server gets its own config, TSDB directory and log file under the test's
temporary directory and listens on 127.0.0.1 only. It is stopped by its pid
(SIGTERM, then SIGKILL if it lingers); nothing else is touched. Readiness and
results are waited for through the HTTP API, never with a fixed sleep.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from tests.helpers.waiting import wait_for

MISSING = "prometheus binary not found (Debian package 'prometheus'; scripts/test.sh installs it)"


def prometheus_binary() -> str | None:
    """The server binary on PATH, or None (tests skip with :data:`MISSING`)."""
    return shutil.which("prometheus")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Prometheus:
    """One Prometheus scraping ``targets`` (job name -> ``host:port``) every ``interval``.

    With a 1 s interval the scrape timeout is 1 s too (Prometheus allows no more),
    so ``up == 1`` also says every scrape finished within a second.
    """

    def __init__(self, workdir: Path, targets: dict[str, str], interval: str = "1s") -> None:
        self.workdir = workdir
        self.targets = targets
        self.interval = interval
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.log = workdir / "prometheus.log"

    def _config(self) -> Path:
        jobs = "".join(
            f"  - job_name: {json.dumps(job)}\n    static_configs:\n      - targets: [{json.dumps(target)}]\n"
            for job, target in self.targets.items()
        )
        path = self.workdir / "prometheus.yml"
        path.write_text(f"global:\n  scrape_interval: {self.interval}\n  scrape_timeout: {self.interval}\n"
                        f"  evaluation_interval: {self.interval}\nscrape_configs:\n{jobs}")
        return path

    def start(self, timeout_s: float = 60.0) -> Prometheus:
        binary = prometheus_binary()
        if binary is None:
            raise RuntimeError(MISSING)
        config = self._config()
        for _ in range(3):  # a free port can be taken between the probe and the bind: try another
            self.port = free_port()
            with self.log.open("ab") as log:
                self.proc = subprocess.Popen(
                    [binary, f"--config.file={config}", f"--storage.tsdb.path={self.workdir / 'tsdb'}",
                     f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                )
            try:
                wait_for(lambda: self.proc.poll() is not None or self._ready(), timeout_s, "prometheus to be ready", 0.1)
            except AssertionError:
                self.stop()
                raise
            if self.proc.poll() is None:
                return self
        raise RuntimeError(f"prometheus did not start: {self.log.read_text()[-2000:]}")

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as resp:
                return resp.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        """End the server this object started (by pid) and wait for it."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self) -> Prometheus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the HTTP API ---------------------------------------------------------------
    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result vector (``[{"metric": {...}, "value": [t, "v"]}, ...]``)."""
        url = f"http://127.0.0.1:{self.port}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = json.load(resp)
        if body.get("status") != "success":
            raise AssertionError(f"query {expr!r} failed: {body}")
        return body["data"]["result"]

    def value(self, expr: str) -> float | None:
        """The one value an instant query gives, or None when it gives nothing."""
        result = self.query(expr)
        if not result:
            return None
        if len(result) != 1:
            raise AssertionError(f"query {expr!r} gave {len(result)} series, expected one: {result[:3]}")
        return float(result[0]["value"][1])

    def wait_value(self, expr: str, timeout_s: float = 30.0) -> float:
        """Wait until ``expr`` gives a value (a series exists), and return it."""
        def have() -> tuple[float] | None:
            value = self.value(expr)
            return None if value is None else (value,)

        return wait_for(have, timeout_s, f"prometheus to have {expr}", 0.2)[0]
