"""The impact model in a process of its own, so building it never stalls the TUI.

Routing a 65,536-host job is seconds of pure Python: in a thread of the TUI it
holds the GIL and every tab and key press waits. :class:`ModelProcess` builds
:class:`fabricdoc.impact.busbw.ImpactModel` in a child process and forwards the
calls the impact tab makes (``busbw``, ``what_if``, ``job_hosts``); each call
blocks its caller (a worker thread) until the child answers. The child exits
when the app closes its end of the pipe (or with the app: it is a daemon).
"""

from __future__ import annotations

import gc
import multiprocessing
import sys
import threading
from pathlib import Path
from typing import Any

from fabricdoc.model.memory import gc_paused
from fabricdoc.report.report import Report


def _serve(conn: Any, report: Report | str) -> None:
    """The child: build the model (from the report, or the report file at that path), send the
    report's run id and the job's hosts, then answer ``(method, args)`` requests until the pipe closes."""
    try:
        from fabricdoc.impact.busbw import ImpactModel

        with gc_paused():  # it only allocates: no collection pass over the growing fabric meanwhile
            if isinstance(report, str):
                report = Report.load(report, keep_columns=True)  # only its fabric is rebuilt here
            model = ImpactModel(report.fabric_model(), report.findings)
            gc.freeze()  # the model lives as long as the process: no collection pass walks its objects again
        conn.send(("ok", (report.run_id, sorted(model.job_hosts))))
    except Exception as exc:  # sent to the app, which shows it
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            conn.send(("ok", route(model, *args) if method == "route" else getattr(model, method)(*args)))
        except Exception as exc:
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


def route(model: Any, src: tuple[str, int], dst: tuple[str, int]) -> list[tuple[tuple[str, int], tuple[str, int]]]:
    """The cables from host port ``src`` to ``dst`` on the model's fabric (its routing is warm here)."""
    from fabricdoc.model.records import PortRef

    return [((k.a.node, k.a.port), (k.b.node, k.b.port)) for k in model.fabric_path(PortRef(*src), PortRef(*dst))]


class ModelProcess:
    """An :class:`ImpactModel` built and held by a child process. Construction only starts it;
    the first call (or :attr:`job_hosts`) waits until it is built, and :meth:`close` during the
    build ends the child at once, so quitting the app never waits for a model.

    Given ``path`` (the file ``report`` was loaded from), the child reads the file itself:
    copying a 65,536-host Report to it costs the app seconds of pickling under the GIL.
    :meth:`from_file` starts the child before the app has read the file (both read it at
    once); :meth:`expect` then names the run the app read, and a file that changed in
    between is refused when the model is first used.
    """

    def __init__(self, report: Report | None, path: str | Path | None = None) -> None:
        if report is None and path is None:
            raise ValueError("ModelProcess needs a report or the path of its file")
        ctx = multiprocessing.get_context("spawn")  # fork is unsafe in a process with threads (the app's)
        self._conn, child = ctx.Pipe()
        self._path = str(path) if path is not None else None
        self._run_id = report.run_id if report is not None else None
        args = (child, self._path) if self._path is not None else (child, report)
        self._process = ctx.Process(target=_serve, args=args, daemon=True, name="fabricdoc-impact")
        # multiprocessing hands its helper sys.stderr's file descriptor; Textual's stand-in has none
        shown, sys.stderr = sys.stderr, sys.__stderr__ or sys.stderr
        try:
            self._process.start()
        finally:
            sys.stderr = shown
        child.close()
        self._lock = threading.Lock()
        self._job_hosts: list[str] | None = None

    @classmethod
    def from_file(cls, path: str | Path) -> ModelProcess:
        """Start building from the report file at ``path`` now; name the run with :meth:`expect`."""
        return cls(None, path)

    def expect(self, run_id: str) -> None:
        """The run the app read from the file: the model must have been built from it."""
        self._run_id = run_id

    @property
    def job_hosts(self) -> list[str]:
        """The job's hosts, once the model is built (waits for it)."""
        with self._lock:
            return self._ready()

    def _ready(self) -> list[str]:
        if self._job_hosts is None:
            run_id, hosts = self._answer()
            if self._run_id is not None and run_id != self._run_id:
                raise RuntimeError(f"{self._path} changed since the TUI opened it (now run {run_id})")
            self._job_hosts = hosts
        return self._job_hosts

    def _answer(self) -> Any:
        try:
            status, value = self._conn.recv()
        except (EOFError, OSError):
            raise RuntimeError("the impact model process ended") from None
        if status != "ok":
            raise RuntimeError(value)
        return value

    def _call(self, method: str, *args: Any) -> Any:
        with self._lock:
            self._ready()
            self._conn.send((method, args))
            return self._answer()

    def busbw(self, hosts: Any = None, algorithm: str = "ring", state: str = "now") -> float:
        return self._call("busbw", hosts, algorithm, state)

    def what_if(self, drain_hosts: Any, *args: Any) -> dict[str, Any]:
        return self._call("what_if", list(drain_hosts), *args)

    def route(self, src: tuple[str, int], dst: tuple[str, int]) -> list[tuple[tuple[str, int], tuple[str, int]]]:
        """A host pair's path on the model's fabric, as ``((node, port), (node, port))`` cables."""
        return self._call("route", src, dst)

    def close(self) -> None:
        """End the child: at once while it is still building (a caller waiting gets RuntimeError),
        else by closing the pipe it serves."""
        if self._job_hosts is None and self._process.is_alive():
            self._process.terminate()
        self._conn.close()
        self._process.join(timeout=2)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(timeout=2)
