"""``fabricdoc gate``: exit 0 when a job's hosts are healthy enough by a policy, else say why and exit 1."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from fabricdoc.cli import args as a
from fabricdoc.errors import ConfigError
from fabricdoc.model.verdict import EXIT_FAULTS, EXIT_OK

EPILOG = """job hosts (the first that applies):
  --job-hosts FILE   one or more names per line (Slurm hostlists allowed, '#' comments; '-' = stdin)
  --job-nodelist EX  a Slurm hostlist such as 'gpu[001-016]'
  $SLURM_JOB_NODELIST  set for PrologSlurmctld (and in a job's own environment)
  in a node Prolog   (SLURMD_NODENAME and SLURM_JOB_ID set, no SLURM_JOB_NODELIST):
                     --prolog-scope node (default): this node alone, $SLURMD_NODENAME;
                     --prolog-scope job: the job's nodes from 'scontrol show job $SLURM_JOB_ID'

in Slurm (examples/slurm/ has both scripts):
  PrologSlurmctld (recommended): judges the whole job, its hosts and the links of its ring.
    A failing PrologSlurmctld requeues the job (held back until a fresh sweep says
    yes) and drains no node:
      fabricdoc gate /shared/fabricdoc/latest.json --policy /etc/fabricdoc/gate.toml
  Prolog (on each node): a failing node Prolog makes Slurm DRAIN that node ("Prolog
    error") and hold the job. So there the gate judges only its own node by default,
    and an error of the gate itself (no report, stale report, Slurm unreachable)
    passes with one line on stderr (--on-error pass is the default in a node Prolog):
    fabricdoc's own trouble never drains a node.

policy:
  --policy FILE is TOML with these keys (flags override them):
    max_severity = "warning"      # findings above this fail; "none": any finding fails
    min_confidence = 0.5          # less certain findings are ignored
    max_busbw_loss_pct = 10.0     # predicted AllReduce busbw loss allowed: of the job's own ring
                                  # (scope "job", report with topology), else the report's impact
    busbw_basis = "now"           # or "after_drain"
    missing_impact = "pass"       # report without impact: "pass" (with a note) or "fail"
    untested_hosts = "fail"       # job hosts missing from the report
    scope = "job"                 # "job": the job's hosts and the links/switches of its ring; "fabric": all
    max_report_age_h = 24         # an older report (or one dated in the future) cannot be judged on; 0: no limit
    ignore_faults = ["congestion"]

exit codes:
  0  the job's hosts are healthy enough (or: could not check, with --on-error pass)
  1  they are not: one line per reason on stdout
  2  could not check: unreadable, stale or future-dated report, bad policy, no job hosts
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "gate",
        help="exit 0 if a job's hosts are healthy enough to start on, else 1 with reasons",
        description="Check a job's hosts against a fabricdoc report and a policy: no findings above "
        "a severity on the job's hosts or paths, predicted busbw loss under a limit. For Slurm prologs "
        "and job launchers.",
        epilog=EPILOG + "\n" + a.FINDING_IDS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_report(p)
    hosts = p.add_mutually_exclusive_group()
    a.add_job_hosts(hosts)
    hosts.add_argument("--job-nodelist", metavar="HOSTLIST", help="a Slurm hostlist, e.g. 'gpu[001-016]'")
    a.add_policy(p)
    p.add_argument("--max-busbw-loss-pct", type=float, metavar="PCT", help="predicted AllReduce busbw loss allowed")
    p.add_argument("--busbw-basis", choices=("now", "after_drain"), help="judge the busbw loss now or after the drain")
    p.add_argument("--missing-impact", choices=("pass", "fail"), help="a report without an impact section")
    p.add_argument("--untested-hosts", choices=("pass", "fail"), help="job hosts the report did not cover")
    p.add_argument("--scope", choices=("job", "fabric"), help="count the job's hosts and ring paths, or every finding")
    a.add_max_report_age(p)
    p.add_argument("--ignore-fault", action="append", metavar="FAULT", help="fault name to ignore (repeatable)")
    p.add_argument("--prolog-scope", choices=("node", "job"), default="node",
                   help="in a node Prolog: judge this node alone (default) or the job's nodes from scontrol")
    p.add_argument("--on-error", choices=("fail", "pass"),
                   help="when the gate cannot check (exit 2): fail, or pass with one line on stderr "
                   "(default: pass in a node Prolog, where a failure drains the node; fail elsewhere)")
    p.add_argument("--scontrol", default="scontrol", metavar="PATH", help="scontrol to run (default: from PATH)")
    a.add_names(p)
    a.add_json(p)
    a.add_quiet(p)
    p.set_defaults(func=run)


def in_node_prolog(env: Any = None) -> bool:
    """Whether this runs as a node Prolog: slurmd sets SLURMD_NODENAME and the job id there,
    and (unlike PrologSlurmctld) no SLURM_JOB_NODELIST."""
    env = os.environ if env is None else env
    if env.get("SLURM_SCRIPT_CONTEXT"):
        return env["SLURM_SCRIPT_CONTEXT"] == "prolog_slurmd"
    return bool(env.get("SLURMD_NODENAME") and env.get("SLURM_JOB_ID") and not env.get("SLURM_JOB_NODELIST"))


_FLAG_KEYS = (
    "max_severity",
    "min_confidence",
    "max_busbw_loss_pct",
    "busbw_basis",
    "missing_impact",
    "untested_hosts",
    "scope",
    "max_report_age_h",
)


def policy_of(args: argparse.Namespace) -> Any:
    """The gate policy from ``--policy`` and the flags that override its keys."""
    from fabricdoc.scheduler import gate

    base = gate.load_policy(args.policy) if args.policy else gate.Policy()
    overrides = {k: getattr(args, k, None) for k in _FLAG_KEYS if getattr(args, k, None) is not None}
    if getattr(args, "ignore_fault", None):
        overrides["ignore_faults"] = tuple(base.ignore_faults) + tuple(args.ignore_fault)
    return gate.policy_from(overrides, "command line", base)


def job_hosts(args: argparse.Namespace) -> list[str]:
    """The job's hosts: --job-nodelist, --job-hosts FILE, $SLURM_JOB_NODELIST, else in a node Prolog
    this node ($SLURMD_NODENAME) or the job's nodes (scontrol show job $SLURM_JOB_ID)."""
    from fabricdoc.model.hostlist import expand_hostlist, read_host_list

    if args.job_nodelist is not None:
        return expand_hostlist(args.job_nodelist, "--job-nodelist")
    if args.job_hosts is not None:
        return read_host_list(args.job_hosts)
    env = os.environ.get("SLURM_JOB_NODELIST")
    if env:
        return expand_hostlist(env, "SLURM_JOB_NODELIST")
    node, job = os.environ.get("SLURMD_NODENAME"), os.environ.get("SLURM_JOB_ID")
    if node and args.prolog_scope == "node":
        return [node]
    if job:
        from fabricdoc.sources.slurm import SlurmTools

        nodelist = SlurmTools(scontrol=args.scontrol).job_nodelist(job)
        return expand_hostlist(nodelist, f"scontrol show job {job}")
    raise ConfigError("no job hosts: give --job-hosts FILE or --job-nodelist, or run as a Slurm Prolog or "
                      "PrologSlurmctld ($SLURM_JOB_NODELIST, $SLURMD_NODENAME or $SLURM_JOB_ID)")


def run(args: argparse.Namespace) -> int:
    """The gate; with --on-error pass (the default in a node Prolog) "could not check" passes, loudly."""
    import sys

    from fabricdoc.errors import FabricdocError
    from fabricdoc.model.text import escape

    on_error = args.on_error or ("pass" if in_node_prolog() else "fail")
    try:
        return _judge(args)
    except FabricdocError as exc:
        if on_error == "fail":
            raise
        print(f"fabricdoc gate: could not check, passing (--on-error pass): {escape(str(exc))}", file=sys.stderr)
        return EXIT_OK


def _judge(args: argparse.Namespace) -> int:
    from fabricdoc.cli.common import name_map
    from fabricdoc.model.text import escape
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler import gate
    policy = policy_of(args)
    report = Report.load(a.report_path(args))
    hosts = job_hosts(args)
    res = gate.evaluate(report, hosts, policy, name_map(args))
    if args.json:
        print(json.dumps(res.to_dict(), indent=2))
    elif not (res.ok and args.quiet):
        verdict = "PASS" if res.ok else "FAIL"
        line = (f"fabricdoc gate: {verdict}: {len(res.hosts)} job hosts; report of {escape(report.generated_at)}, "
                f"fabric verdict {report.verdict}, {len(res.findings)} of {len(report.findings)} findings on this job")
        if res.busbw_loss_pct is not None:
            whose = "the job's ring" if res.busbw_scope == "job" else "fabric-wide"
            line += f"; predicted busbw loss {res.busbw_loss_pct:.1f}% ({whose})"
        print(line)
        for r in res.reasons:
            print(f"  - {r}")
        for n in res.notes:
            print(f"  note: {n}")
    return EXIT_OK if res.ok else EXIT_FAULTS
