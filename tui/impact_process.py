"""The impact model in a process of its own, so building it never stalls the TUI.

Routing a 65,536-host job is seconds of pure Python: in a thread of the TUI it
holds the GIL and every tab and key press waits. :class:`ModelProcess` builds
:class:`fabricdoc.impact.busbw.ImpactModel` in a child process and forwards the
calls the impact tab makes (``busbw``, ``what_if``, ``job_hosts``); each call
blocks its caller (a worker thread) until the child answers. The child exits
when the app closes its end of the pipe (or with the app: it is a daemon).
"""

from __future__ import annotations

import multiprocessing
import sys
import threading
from typing import Any

from fabricdoc.report.report import Report


def _serve(conn: Any, report: Report) -> None:
    """The child: build the model, then answer ``(method, args)`` requests until the pipe closes."""
    try:
        from fabricdoc.impact.busbw import ImpactModel

        model = ImpactModel(report.fabric_model(), report.findings)
        conn.send(("ok", sorted(model.job_hosts)))
    except Exception as exc:  # sent to the app, which shows it
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            conn.send(("ok", getattr(model, method)(*args)))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class ModelProcess:
    """An :class:`ImpactModel` built and held by a child process; construction waits until it is built."""

    def __init__(self, report: Report) -> None:
        ctx = multiprocessing.get_context("spawn")  # fork is unsafe in a process with threads (the app's)
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(target=_serve, args=(child, report), daemon=True, name="fabricdoc-impact")
        # multiprocessing hands its helper sys.stderr's file descriptor; Textual's stand-in has none
        shown, sys.stderr = sys.stderr, sys.__stderr__ or sys.stderr
        try:
            self._process.start()
        finally:
            sys.stderr = shown
        child.close()
        self._lock = threading.Lock()
        self.job_hosts: list[str] = self._answer()

    def _answer(self) -> Any:
        try:
            status, value = self._conn.recv()
        except EOFError:
            raise RuntimeError("the impact model process ended") from None
        if status != "ok":
            raise RuntimeError(value)
        return value

    def _call(self, method: str, *args: Any) -> Any:
        with self._lock:
            self._conn.send((method, args))
            return self._answer()

    def busbw(self, hosts: Any = None, algorithm: str = "ring", state: str = "now") -> float:
        return self._call("busbw", hosts, algorithm, state)

    def what_if(self, drain_hosts: Any, *args: Any) -> dict[str, Any]:
        return self._call("what_if", list(drain_hosts), *args)

    def close(self) -> None:
        self._conn.close()
        self._process.join(timeout=2)
        if self._process.is_alive():
            self._process.terminate()
