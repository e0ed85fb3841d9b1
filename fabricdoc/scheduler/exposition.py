"""Prometheus text format 0.0.4 and the HTTP server that serves a cached exposition.

The exporter renders its metrics once per change of its inputs (the first time on
a background thread, so the server answers while a large history is read); this module
writes the text (escaping labels once per port) and serves the cached bytes,
gzipped when the scraper accepts it, dropping idle or stalled connections.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable
from typing import Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.utils import floatToGoString

from fabricdoc.errors import FabricdocError
from fabricdoc.model.text import escape

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
CLIENT_TIMEOUT_S = 30.0  # an idle or stalled connection is dropped after this long
POLL_S = 1.0  # how often the source looks for changed inputs


class Source(Protocol):
    """What the server serves: a cached exposition, rebuilt by the source's own watcher."""

    def exposition(self, gzipped: bool = False) -> bytes: ...
    def refresh(self) -> Any: ...
    def start(self, poll_s: float) -> None: ...
    def stop(self) -> None: ...


# -- the text format -------------------------------------------------------------------
def _escape(value: str) -> str:
    """A label value: non-printable characters (ESC, bidi overrides, controls) made visible as
    ``\\x1b``/``\\u202e`` text first (names come from the fabric), then the text format's escapes."""
    shown = "\n".join(escape(part) for part in value.split("\n"))  # a newline keeps the format's own \\n
    return shown.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def labels(**kv: object) -> str:
    """``{a="x",b="y"}`` with the text format's escaping (backslash, quote, newline)."""
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in kv.items()) + "}" if kv else ""


class Exposition:
    """Prometheus text format 0.0.4 being written: each family's HELP and TYPE, then its samples.

    Label strings are passed in rendered (:func:`labels`) so a port's labels are
    escaped once and reused by every family it appears in.
    """

    def __init__(self) -> None:
        self._parts: list[str] = []
        self.series = 0

    def family(self, name: str, kind: str, help_text: str, samples: Iterable[tuple[str, float]]) -> None:
        help_text = help_text.replace("\\", "\\\\").replace("\n", "\\n")
        lines = [f"{name}{lab} {floatToGoString(value)}\n" for lab, value in samples]
        self._parts.append(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n")
        self._parts.extend(lines)
        self.series += len(lines)

    def gauge(self, name: str, help_text: str, value: float, **kv: object) -> None:
        self.family(name, "gauge", help_text, [(labels(**kv), value)])

    def text(self) -> str:
        return "".join(self._parts)


# -- HTTP ------------------------------------------------------------------------------
def make_app(collector: Source) -> Callable[..., Iterable[bytes]]:
    """A WSGI app: ``/metrics`` serves the collector's cached exposition (gzipped when accepted)."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path, method = environ.get("PATH_INFO", "/"), environ.get("REQUEST_METHOD", "GET")
        if method not in ("GET", "HEAD"):
            start_response("405 Method Not Allowed", [("Content-Type", "text/plain"), ("Allow", "GET, HEAD")])
            return [b"GET /metrics\n"]
        if path != "/metrics":
            start_response("404 Not Found" if path != "/" else "200 OK", [("Content-Type", "text/plain")])
            return [b"fabricdoc exporter: metrics at /metrics\n"]
        gz = "gzip" in environ.get("HTTP_ACCEPT_ENCODING", "")
        body = collector.exposition(gzipped=gz)
        headers = [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body))), ("Vary", "Accept-Encoding")]
        if gz:
            headers.append(("Content-Encoding", "gzip"))
        start_response("200 OK", headers)
        return [body] if method == "GET" else []

    return app


class _Handler(WSGIRequestHandler):
    """One connection: quiet, and dropped when the client is idle or stalls for ``client_timeout_s``."""

    def setup(self) -> None:
        self.timeout = getattr(self.server, "client_timeout_s", CLIENT_TIMEOUT_S)
        super().setup()

    def handle(self) -> None:
        try:
            super().handle()
        except (TimeoutError, ConnectionError):
            self.close_connection = True  # an idle or vanished client: drop it, nothing to report

    def get_stderr(self) -> io.StringIO:
        return io.StringIO()  # a client that stops reading mid-response is not worth a traceback

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass


class _Server(ThreadingWSGIServer):
    client_timeout_s = CLIENT_TIMEOUT_S
    collector: Source | None = None

    def server_close(self) -> None:
        super().server_close()
        if self.collector is not None:
            self.collector.stop()


def serve(collector: Source, bind: str = "127.0.0.1", port: int = 9877, *,
          client_timeout_s: float = CLIENT_TIMEOUT_S, poll_s: float = POLL_S, build_first: bool = True) -> _Server:
    """Listen (port 0 picks one), start the watcher; ``serve_forever`` it.

    With ``build_first`` the first exposition is built before this returns; without it
    (what ``fabricdoc exporter`` does) the watcher thread builds it, so the server answers
    at once and a scrape before the build ends gets the collector's starting exposition
    (``fabricdoc_exporter_ready 0``), never an error. ``shutdown`` then ``server_close``
    stop the server and the watcher.
    """
    try:
        server = make_server(bind, port, make_app(collector), server_class=_Server, handler_class=_Handler)
    except OSError as exc:
        raise FabricdocError(f"exporter: cannot listen on {bind}:{port}: {os.strerror(exc.errno) if exc.errno else exc}") from None
    server.client_timeout_s = client_timeout_s
    server.collector = collector
    if build_first:
        collector.refresh()
    collector.start(poll_s)
    return server
