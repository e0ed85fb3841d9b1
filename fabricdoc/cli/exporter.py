"""``fabricdoc exporter``: serve Prometheus /metrics from a report file and/or the sweep history."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from fabricdoc.cli import args as a

EPILOG = """Both files are re-read when they change, so point REPORT at the file your
periodic sweep rewrites (fabricdoc writes reports atomically). A report file
that stops validating keeps the last good series and sets
fabricdoc_report_loaded to 0.

metrics (all prefixed fabricdoc_):
  verdict{verdict}, findings{severity,kind}, finding{id,kind,name,fault,severity,component},
  drain{node}, drain_nodes, pairs{status}, allreduce_busbw_gbps{basis},
  report_loaded, report_timestamp_seconds, history_sweeps,
  port_<counter>_total{node,port,guid,peer} and port_<counter>_per_second{...}

Binds to 127.0.0.1 unless --bind says otherwise: the labels name hosts and
links, so expose it deliberately (e.g. --bind 0.0.0.0 behind a firewall).
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "exporter",
        help="serve Prometheus metrics (verdict, findings, drain list, per-port counters and rates)",
        description="Serve /metrics for Prometheus from a fabricdoc report and/or the sweep history.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_report(p, required=False)
    a.add_history(p)
    p.add_argument("--bind", default="127.0.0.1", metavar="ADDR", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9877, metavar="N", help="TCP port (default 9877; 0 picks a free one)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.scheduler.exporter import FabricCollector, serve

    collector = FabricCollector(a.report_path(args), args.history)
    server = serve(collector, args.bind, args.port)
    host, port = server.server_address[:2]
    print(f"fabricdoc exporter: serving http://{host}:{port}/metrics", file=sys.stderr, flush=True)
    # SIGTERM (systemd, kubelet) stops the server cleanly, like Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
