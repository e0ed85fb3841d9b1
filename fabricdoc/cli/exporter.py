"""``fabricdoc exporter``: serve Prometheus /metrics from a report file and/or the sweep history."""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from fabricdoc.cli import args as a
from fabricdoc.model.verdict import EXIT_OK

EPILOG = """The files are re-read (on a watcher thread, about once a second) only when they
change, and the text is rendered once per change: a scrape serves those bytes
(gzipped when asked), so it costs the same at 8,192 hosts as at 8. Point REPORT
at the file your periodic sweep rewrites (fabricdoc writes reports atomically).
It answers at once: until the first read of the files is rendered (seconds on a
large history) a scrape gets build_info and fabricdoc_exporter_ready 0 only.

A report that cannot be read or validated, or is older than --max-report-age-h,
dated in the future or undated, sets fabricdoc_report_loaded 0 (stale ones also
fabricdoc_report_stale 1) and serves no verdict, finding, drain or port-state
series at all, neither its own nor an earlier good report's. One line on stderr
says why each time that changes.

Per-port series by default only for ports a finding names, ports whose error or
link-down counters moved between the history's last two samples, and ports whose
link is down or trained below its supported width or speed; --all-ports exports
every port (~27 series per port: mind the size on large fabrics).

port metrics: node_exporter's infiniband collector names and labels under the
fabricdoc_ prefix (dashboards work after replacing node_ with fabricdoc_):
  fabricdoc_infiniband_<node_exporter suffix>{device,port,guid,peer}
  e.g. node_infiniband_symbol_error_total           -> fabricdoc_infiniband_symbol_error_total
       node_infiniband_port_data_received_bytes_total -> fabricdoc_infiniband_port_data_received_bytes_total
       (also port_data_transmitted_bytes, port_packets_*, port_errors_received,
       port_discards_*, port_transmit_wait, link_downed, link_error_recovery,
       port_receive_remote_physical_errors, excessive_buffer_overrun_errors, ...)
       node_infiniband_state_id (1 down, 4 active)  -> fabricdoc_infiniband_state_id
       node_infiniband_rate_bytes_per_second        -> fabricdoc_infiniband_rate_bytes_per_second
  device is the node's label (HCA or switch description), guid the node GUID,
  peer the other end of the cable; values are the history's newest sample in
  bytes, packets or ticks; <name>_per_second replaces _total for the rate between
  the port's last two samples. Counters node_exporter does not have:
  fabricdoc_port_<counter>_total; fabricdoc_port_width_lanes,
  fabricdoc_port_supported_width_lanes, fabricdoc_port_supported_rate_bytes_per_second.

other metrics (all prefixed fabricdoc_):
  build_info{version}; report_loaded, report_stale, report_load_errors_total,
  report_timestamp_seconds, report_info{producer,run_id};
  verdict{verdict}, findings{severity,kind} (sum() = number of findings),
  finding{key,kind,component,fault,severity} (value: confidence; key is stable
  across sweeps), drain{node}, drain_nodes, pairs{status} (ok, slow, hung, wrong,
  error: they add up to the tests run), allreduce_busbw_bytes_per_second{basis},
  links{state}, links_degraded; history_loaded, history_sweeps,
  history_timestamp_seconds; exporter_ready (0 while starting),
  exporter_ports_exported, exporter_refresh_duration_seconds,
  exporter_refresh_errors_total

Binds to 127.0.0.1 unless --bind says otherwise: the labels name hosts and
links, so expose it deliberately (e.g. --bind 0.0.0.0 behind a firewall).
A client idle for --client-timeout-s seconds is disconnected.
"""


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "exporter",
        help="serve Prometheus metrics (verdict, findings, drain list, port counters and states)",
        description="Serve /metrics for Prometheus from a fabricdoc report and/or the sweep history.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_report(p, required=False)
    a.add_history(p)
    p.add_argument("--bind", default="127.0.0.1", metavar="ADDR", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=9877, metavar="N", help="TCP port (default 9877; 0 picks a free one)")
    p.add_argument("--all-ports", action="store_true",
                   help="per-port series for every port, not only flagged ones (large on big fabrics)")
    a.add_max_report_age(p)
    p.add_argument("--client-timeout-s", type=_seconds, default=30.0, metavar="S",
                   help="drop a connection idle for S seconds (default %(default)g)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.scheduler.exporter import FabricCollector
    from fabricdoc.scheduler.exposition import serve

    def log(line: str) -> None:
        print(f"fabricdoc exporter: {line}", file=sys.stderr, flush=True)

    collector = FabricCollector(a.report_path(args), args.history, all_ports=args.all_ports,
                                max_age_h=a.max_report_age(args), log=log)
    server = serve(collector, args.bind, args.port, client_timeout_s=args.client_timeout_s, build_first=False)
    host, port = server.server_address[:2]
    log(f"serving http://{host}:{port}/metrics")
    # SIGTERM (systemd, kubelet) stops the server cleanly, like Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return EXIT_OK
