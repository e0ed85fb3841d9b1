"""``fabricdoc impact``: what the report's faults cost an AllReduce job, and what draining buys back."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from fabricdoc.cli import args as a
from fabricdoc.errors import FabricdocError

if TYPE_CHECKING:
    from fabricdoc.impact.records import ImpactSection, JobCost, Remedy

EPILOG = """The model: NCCL ring and double-binary-tree AllReduce over the fabric's own routes,
rail by rail; a ring runs at its slowest hop and links shared by several flows split their
capacity. busbw follows nccl-tests (algbw x 2(n-1)/n). "now" applies the findings (down parts
routed around, degraded links at their measured or trained rate); "after drain" also removes
the report's drain list. "recommended" is the remedy predicting the most job throughput (hosts x
busbw): the drain list plus switch-to-switch ports taken out of service (routes recomputed as the
fabric would: OpenSM minhop over read forwarding tables, else up/down / ECMP) and further drains.
--isolate / --drain add your own what-if as the first row ("given").
Expected busbw = each figure x the fabric's efficiency (median measured/expected of healthy tests
per message size, or --efficiency). Job cost: hosts fail independently; checkpoint interval by Young/Daly.

exit codes (the report's verdict, as every command gives it):
  0  the report passed: the table (or JSON) was printed
  1  the report found faults (fail or degraded): the table shows what they cost
  2  could not run (unreadable report, report without topology, unknown job host), or the report
     did not see everything it planned (incomplete): one line on stderr says why
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "impact",
        help="predict AllReduce bus bandwidth and job failure cost from a report",
        description="Predict the AllReduce bus bandwidth a job gets on the report's fabric: "
        "nominal, now (with the findings), after draining the report's drain list, and the "
        "best alternative drains; and what failures cost a job of that size.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_report(p)
    a.add_job_hosts(p)
    a.add_job_cost(p)
    p.add_argument("--restart-minutes", type=float, default=0.0, metavar="MIN",
                   help="minutes to restart after a failure, lost on top of the work since the checkpoint")
    p.add_argument("--host-mtbf-hours", type=float, default=None, metavar="H",
                   help="mean hours between failures of one host (default: observed in --history or "
                   "--history-reports, else the Llama 3 fleet rate, about 6,300 h)")
    # One of three failure-rate sources that exclude each other: a default from the environment
    # would clash with --host-mtbf-hours, so impact reads a history only when asked.
    a.add_history(p, "--history-db", from_env=False)
    p.add_argument("--history-reports", nargs="+", metavar="REPORT", default=None,
                   help="earlier reports of the same fabric: hosts newly drained between them give the failure rate")
    p.add_argument("--alternatives", type=int, default=3, metavar="K",
                   help="alternative remedies (drains, ports out of service) to list, at most K, none the same as "
                   "the recommendation or only tying it (default 3)")
    p.add_argument("--efficiency", metavar="SPEC", default=None,
                   help="the fabric's efficiency for the expected busbw: one fraction (0.85) or SIZE=FRACTION pairs "
                   "(1M=0.6,256M=0.9); default: learned from the healthy tests of the report and of --calibrate-from "
                   "(or, without it, of the sweeps in --history)")
    p.add_argument("--calibrate-from", nargs="+", metavar="REPORT", default=None,
                   help="earlier reports of the same fabric whose healthy tests (ok, not slow) give the efficiency per message size")
    p.add_argument("--isolate", action="append", metavar="NODE[PORT]", default=[],
                   help="what if this cable (named by either end, e.g. 'leaf02[5]') were out of service: "
                   "routed around, listed as the 'given' what-if (repeatable)")
    p.add_argument("--drain", action="append", metavar="HOST", default=[],
                   help="drain this host too (besides the report's drain list) in the 'given' what-if (repeatable)")
    p.add_argument("--sharp", action="store_true",
                   help="the fabric does in-network reduction (InfiniBand SHARP / CollNet): add its busbw figures")
    p.add_argument("--write", action="store_true", help="also store the impact section in the report file (atomic)")
    a.add_json(p)
    p.set_defaults(func=run)




def failure_rates(args: argparse.Namespace, fabric_name: str | None = None) -> dict[str, Any]:
    """The job cost's failure-rate inputs from the command line (--host-mtbf-hours, --history, --history-reports)."""
    from fabricdoc.impact.failure_rate import host_failure_rate
    from fabricdoc.impact.jobcost import observed_rates
    from fabricdoc.report.history import History, snapshots_from_reports
    from fabricdoc.report.report import Report

    given = [flag for flag, v in (("--host-mtbf-hours", args.host_mtbf_hours), ("--history", args.history),
                                  ("--history-reports", args.history_reports)) if v is not None]
    if len(given) > 1:
        raise FabricdocError(f"give one failure-rate source, not {' and '.join(given)}")
    rates: dict[str, Any] = {"restart_minutes": args.restart_minutes}
    if args.host_mtbf_hours is not None:
        if args.host_mtbf_hours <= 0:
            raise FabricdocError("--host-mtbf-hours must be positive")
        rates["host_mtbf_hours"] = args.host_mtbf_hours
        rates["source"] = "given (--host-mtbf-hours)"
    elif args.history_reports:
        reports = [Report.load(p) for p in args.history_reports]
        observed = host_failure_rate(snapshots_from_reports(reports), "reports")
        if observed is None:
            raise FabricdocError("--history-reports: the reports span no time; give at least two from different times")
        rates.update(observed_rates(observed))
    elif args.history:
        with History(args.history, create=False) as store:
            observed = store.host_failure_rate(fabric_name)
        if observed is None:
            raise FabricdocError(f"--history {args.history}: fewer than two sweeps of fabric "
                                 f"{fabric_name!r} at different times")
        rates.update(observed_rates(observed))
    return rates


def efficiency(args: argparse.Namespace, report: Any) -> Any:
    """The expected busbw's efficiency: given (--efficiency), else learned from the healthy tests of the
    report and of --calibrate-from reports; None when there are none."""
    from fabricdoc.impact.calibration import given_efficiency, learned_efficiency
    from fabricdoc.report.report import Report

    if args.efficiency is not None:
        if args.calibrate_from:
            raise FabricdocError("give --efficiency or --calibrate-from, not both")
        return given_efficiency(args.efficiency)
    earlier = [Report.load(p) for p in args.calibrate_from or []]
    pools = [r.test_pool() for r in [report, *earlier]]
    what = f"this report and {len(earlier)} earlier" if earlier else "this report"
    if not earlier and args.history:
        from fabricdoc.report.history import History

        with History(args.history, create=False) as store:
            stored = store.test_pools(str(report.fabric.get("name", "")))
        pools += stored
        what = f"this report and {len(stored)} sweeps in the history store"
    return learned_efficiency(pools, what)


def given_what_if(fabric: Any, report: Any, args: argparse.Namespace) -> Remedy:
    """The what-if the user asked for (--isolate, --drain), on the report's findings, as a ``given`` row."""
    from fabricdoc.errors import TopologyError
    from fabricdoc.fabric.fabricfile import parse_port
    from fabricdoc.impact.busbw import ImpactModel
    from fabricdoc.impact.reroute import resolve_link
    from fabricdoc.impact.section import what_if_row
    from fabricdoc.model.hostlist import read_host_list

    model = ImpactModel(fabric, report.findings,
                        read_host_list(args.job_hosts) if args.job_hosts else None)
    links = []
    for text in args.isolate:
        node, port = parse_port(text, "--isolate")
        try:
            links.append(resolve_link(fabric, [node, port]))
        except TopologyError as e:
            raise FabricdocError(f"--isolate {text}: {e}") from None
    unknown = [h for h in args.drain if h not in model.host_ports]
    if unknown:
        try:
            model.resolve_hosts(unknown)
        except TopologyError as e:
            raise FabricdocError(f"--drain: {e}") from None
    drain = sorted({*args.drain, *(d.node for d in report.drain)})
    return what_if_row({"choice": "given", **model.what_if(drain, ("ring",), links)})


def run(args: argparse.Namespace) -> int:
    from fabricdoc.cli import common
    from fabricdoc.impact.section import impact_section
    from fabricdoc.model.hostlist import read_host_list
    from fabricdoc.report.report import Report

    path = a.report_path(args)
    report = Report.load(path)
    fabric = report.fabric_model()
    if args.hours < 0 or (args.checkpoint_minutes is not None and args.checkpoint_minutes < 0):
        raise FabricdocError("--hours and --checkpoint-minutes must not be negative")
    section = impact_section(
        fabric,
        report.findings,
        [d.node for d in report.drain],
        job_hosts=read_host_list(args.job_hosts) if args.job_hosts else None,
        hours=args.hours,
        checkpoint_minutes=args.checkpoint_minutes,
        failure_rates=failure_rates(args, report.fabric.get("name")),
        alternatives=max(0, args.alternatives),
        efficiency=efficiency(args, report),
        sharp=args.sharp,
    )
    if args.isolate or args.drain:
        section = replace(section, what_if=(given_what_if(fabric, report, args), *(section.what_if or ())))
    if args.write:
        report.impact = section
        report.save(path)
    if args.json:
        sys.stdout.write(json.dumps(section.as_dict(), indent=2, allow_nan=False) + "\n")
    else:
        print_section(section, common.stdout_console())
    return common.verdict_exit(report, args.command)


def _names(items: list[str], limit: int = 6) -> str:
    from fabricdoc.model.text import escape

    return ", ".join(escape(n) for n in items[:limit]) + (f" (+{len(items) - limit})" if len(items) > limit else "")


def _gbps(x: float | None) -> str:
    return "-" if x is None else f"{x:,.1f}"


def print_section(section: ImpactSection, console: Any) -> None:
    """The impact section as three rich tables: busbw, what-if drains, job cost. Names are escaped."""
    from rich.table import Table
    from rich.text import Text

    from fabricdoc.model.text import escape
    from fabricdoc.report.figures import BUSBW_KEYS, THROUGHPUT_BASIS, busbw_figures, cable_text

    rails = section.rails
    what_if = section.what_if or ()
    bw = Table(title=f"AllReduce busbw, Gb/s ({section.job_hosts} hosts, {rails} rail{'s' if rails != 1 else ''})")
    drained = len(next((w.drain for w in what_if if w.choice == "report"), ()))
    heads = [f.label for f in busbw_figures(section.allreduce_busbw_gbps, drained)]  # as the summary and TUI say them
    for col in ("algorithm", *heads):
        bw.add_column(col, justify="left" if col == "algorithm" else "right")
    bottlenecks = []
    for alg, row in (section.by_algorithm or {}).items():
        if row.skipped is not None:
            bw.add_row(alg, *["-"] * len(heads))
            bottlenecks.append(f"{alg}: skipped: {escape(row.skipped)}")
            continue
        b = row.bottleneck_now
        where = (b.direction or b.reason or "") if b is not None else ""
        if where and b is not None and b.flows:
            n = b.flows
            where += (f" ({_gbps(b.capacity_gbps)} Gb/s link, {n} flows share it)" if n != 1
                      else f" ({_gbps(b.capacity_gbps)} Gb/s link, this flow alone)")
        bw.add_row(alg, *[_gbps(getattr(row, k)) for k in BUSBW_KEYS[:len(heads)]])
        if where:
            bottlenecks.append(f"{alg} bottleneck now: {escape(where)}")
    console.print(bw)
    for line in bottlenecks:
        console.print(Text(line))
    if "recommended" in heads:
        console.print(Text("recommended: the first what-if row below"))
    expected = section.expected_busbw
    for alg, exp in ((expected.by_algorithm if expected else None) or {}).items():
        shown = list(exp.expected.items()) if exp.expected is not None else []
        if shown:
            console.print(Text(f"expected {alg} (x{exp.efficiency:.2f}): " + " / ".join(
                f"{k} {_gbps(v)}" for k, v in shown) + f" Gb/s; assumes {escape(exp.assumes)}"))
    if expected is not None and expected.efficiency_source:
        console.print(Text(f"efficiency: {escape(expected.efficiency_source)}"))

    wi = Table(title="What if we drain hosts / take ports out of service ... (busbw in Gb/s; ranked by job "
                     f"throughput: {THROUGHPUT_BASIS})")
    for col in ("choice", "drain (and out of service)", "hosts", "busbw", "vs nominal", "job throughput"):
        wi.add_column(col, justify="left" if col in ("choice", "drain (and out of service)") else "right")
    for w in what_if:
        what = _names(list(w.drain)) or "(nothing)"
        if w.isolate:
            what += "\nout of service: " + _names([cable_text(k) for k in w.isolate])
        wi.add_row(w.choice, Text(what), str(w.hosts),
                   _gbps(w.busbw_gbps), f"{w.vs_nominal:.1%}", f"{w.throughput_fraction:.1%}")
    console.print(wi)
    if section.routing_engine:
        console.print(Text(f"ports out of service are routed around by {escape(section.routing_engine)}"))

    if section.job is not None:
        _print_job(section.job, console)
    if section.unmapped_findings:
        console.print(Text(f"findings not placed on a link: {', '.join(escape(f) for f in section.unmapped_findings)}"))
    for u in section.uncosted_findings or ():
        console.print(Text(f"not in the figures: {escape(u.finding)}: {escape(u.why)}"))


def _print_job(job: JobCost, console: Any) -> None:
    """The job cost table."""
    from rich.table import Table
    from rich.text import Text

    from fabricdoc.model.text import escape

    jt = Table(title=f"Job cost: {job.n_hosts} hosts for {job.hours:g} h", show_header=False)
    jt.add_column("what")
    jt.add_column("value", justify="right")
    mtbf = job.mtbf_hours
    ckpt = job.recommended_checkpoint_minutes
    jt.add_row("P(at least one failure)", f"{job.failure_probability:.1%}")
    jt.add_row("expected failures", f"{job.expected_failures:.2f}")
    jt.add_row("job MTBF", "-" if mtbf is None else f"{mtbf:,.1f} h")
    jt.add_row("checkpoint every (Young/Daly)", "-" if ckpt is None else f"{ckpt:,.0f} min")
    jt.add_row("expected lost work", f"{job.expected_lost_hours:.2f} h")
    jt.add_row("expected goodput", f"{job.expected_goodput:.1%}")
    jt.add_row("failure rate", Text(escape(job.rate_source)))
    console.print(jt)
