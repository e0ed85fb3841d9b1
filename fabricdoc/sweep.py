"""The sweep: collect (simulator or real probes), plan and run bandwidth rounds, re-test
suspects, localize, add impact, and build the report. The CLI and the TUI both call
:func:`run_sweep`; neither touches a probe directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fabricdoc import counters as ctr
from fabricdoc.errors import ConfigError
from fabricdoc.localize import Options, localize
from fabricdoc.model import Finding, LinkKey, Observations, PortRef
from fabricdoc.report import Report
from fabricdoc.topology import Fabric

# progress(stage, done, total): stage is a short word ("plan", "bandwidth", "counters"...).
Progress = Callable[[str, int, int], None]


@dataclass
class SweepConfig:
    """Everything a sweep needs to know; the CLI fills it from its flags."""

    fabric: str = "demo"
    faults: str | None = None
    seed: int = 0
    interval_s: float = 10.0
    rules: str | None = None
    retest: bool = True
    baseline: str | None = None
    topology: str | None = None
    save_sample: str | None = None
    journal: str | None = None
    resume: bool = False
    include_topology: bool = True
    job_hosts: list[str] | None = None
    hours: float = 24.0
    checkpoint_minutes: float | None = None
    timeout_s: float = 60.0
    history: str | None = None
    hosts: list[str] | None = None
    launcher: str = "local"
    bandwidth: bool = True
    test_timeout_s: float = 120.0
    size_bytes: int = 1 << 24
    backend: str = "gloo"
    slow_ratio: float = 0.80
    nccl_tests: str | None = None  # path to sendrecv_perf / all_reduce_perf: run those instead of bwtest
    extra: dict = field(default_factory=dict)


def _noop(stage: str, done: int, total: int) -> None:
    return None


def run_sweep(cfg: SweepConfig, progress: Progress | None = None) -> Report:
    """Run one sweep as configured and return its report (not yet written anywhere)."""
    progress = progress or _noop
    started = time.monotonic()
    runs_tests = cfg.fabric == "roce" or (cfg.fabric == "ib" and cfg.launcher in ("srun", "mpirun"))
    if (cfg.journal or cfg.resume) and not (runs_tests and cfg.bandwidth):
        raise ConfigError("--journal/--resume keep bandwidth tests that take real time: they apply to "
                          "--fabric roce, or --fabric ib with --launcher srun|mpirun")
    if cfg.resume and not cfg.journal:
        raise ConfigError("--resume needs --journal FILE (the journal of the sweep to continue)")
    options = Options(slow_ratio=cfg.slow_ratio)
    if cfg.rules:
        options.rules = ctr.load_rules(cfg.rules)
    if cfg.fabric == "ib" or cfg.fabric.startswith("ibsim:"):
        fabric, obs, rounds = _ib(cfg, progress)
        if cfg.launcher in ("srun", "mpirun") and cfg.bandwidth:
            # A real cluster: bandwidth rounds between the HCAs' hosts through Slurm or MPI.
            rounds, findings = _measure(fabric, cfg, progress, options, obs)
        else:
            findings = localize(fabric, obs, options)
    elif cfg.fabric == "roce":
        fabric, obs, rounds, findings = _roce(cfg, progress, options)
    else:
        fabric, obs, rounds, findings = _simulated(cfg, progress, options)
    progress("impact", 0, 1)
    report = Report.build(
        fabric, findings, obs, duration_s=round(time.monotonic() - started, 3), rounds=rounds,
        include_topology=cfg.include_topology, slow_ratio=cfg.slow_ratio,
    )
    rates: dict = {}
    if cfg.history:
        from fabricdoc import history, jobcost

        # Stored first, so the failure rate the job cost uses includes this sweep.
        with history.History(cfg.history) as store:
            store.append(report, obs.before + obs.after, obs.events)
            rates = jobcost.observed_rates(store.host_failure_rate(report.fabric.get("name")))
    report.impact = _impact(fabric, findings, report, cfg, rates)
    progress("impact", 1, 1)
    return report


def _impact(fabric: Fabric, findings: list[Finding], report: Report, cfg: SweepConfig, rates: dict) -> dict | None:
    from fabricdoc.impact import impact_section

    return impact_section(
        fabric, findings, [d.node for d in report.drain], job_hosts=cfg.job_hosts, hours=cfg.hours,
        checkpoint_minutes=cfg.checkpoint_minutes, failure_rates=rates,
    )


# -- simulated fabrics ----------------------------------------------------------

def _simulated(cfg: SweepConfig, progress: Progress, options: Options):
    from fabricdoc.fabricfile import faults_from_yaml, load_fabric
    from fabricdoc.plan import plan_sweep, retest_plan
    from fabricdoc.sim import Simulator

    progress("load", 0, 1)
    fabric, faults = load_fabric(cfg.fabric)
    if cfg.faults:
        faults = faults_from_yaml(cfg.faults, fabric)
    if not fabric.hosts():
        raise ConfigError(f"{cfg.fabric}: the fabric has no hosts to test")
    progress("load", 1, 1)
    sim = Simulator(fabric, faults, seed=cfg.seed, interval_s=cfg.interval_s)
    observed = sim.truth  # what discovery shows: trained widths, down links
    progress("plan", 0, 1)
    plan = plan_sweep(observed)
    progress("plan", 1, 1)
    pairs = sim.bandwidth(plan.rounds, progress=lambda d, t: progress("bandwidth", d, t))
    before, after = sim.counters()
    progress("counters", 1, 1)
    obs = Observations(
        before=before, after=after, states=sim.port_states(), events=sim.events(), pairs=pairs,
        interval_s=cfg.interval_s,
    )
    findings = localize(observed, obs, options)
    rounds = len(plan.rounds)
    suspects = _suspects(observed, findings)
    if cfg.retest and suspects:
        again = retest_plan(observed, suspects)
        extra = sim.bandwidth(again.rounds, first_round=rounds,
                              progress=lambda d, t: progress("retest", d, t))
        obs.pairs.extend(extra)
        rounds += len(again.rounds)
        findings = localize(observed, obs, options)
    return observed, obs, rounds, findings


def _suspects(fabric: Fabric, findings: list[Finding]) -> list[LinkKey]:
    """Links blamed from bandwidth alone, and the links equally likely from the same
    tests: the ones worth a targeted second look."""
    out: dict[LinkKey, None] = {}
    for f in findings:
        if f.kind in ("link", "nic") and f.fault in ("degraded_bandwidth", "hung") and len(f.node_ids) == 2:
            ends = [PortRef(f.node_ids[0], f.endpoints[0][1])]  # type: ignore[index]
            for ev in f.evidence:
                ends += [PortRef(a[0], a[1]) for a, _ in ev.detail.get("alternatives", [])]
            for end in ends:
                link = fabric.link_at(end)
                if link is not None:
                    out[link.key] = None
    return list(out)


# -- InfiniBand -------------------------------------------------------------------

def _ib(cfg: SweepConfig, progress: Progress):
    from contextlib import nullcontext

    from fabricdoc import ibsource
    from fabricdoc.probes.ibdiags import IbRunner
    from fabricdoc.probes.ibsim import IbSim

    netfile = cfg.fabric[len("ibsim:"):] if cfg.fabric.startswith("ibsim:") else None
    if netfile is not None and not Path(netfile).is_file():
        raise ConfigError(f"{netfile}: no such ibsim net file")
    context = IbSim(netfile) if netfile else nullcontext()
    with context as sim:
        runner = IbRunner.for_sim(sim, timeout_s=cfg.timeout_s) if sim else IbRunner(timeout_s=cfg.timeout_s)
        # The expected fabric (--topology, else what is there now) with OpenSM's live LFTs.
        fabric = ibsource.expected_fabric(runner, cfg.topology, progress=progress)
        obs = ibsource.collect(runner, fabric, interval_s=cfg.interval_s, baseline=cfg.baseline, progress=progress)
        if cfg.save_sample:
            ibsource.save_sample(obs, cfg.save_sample)
    return fabric, obs, 0


# -- RoCE / Ethernet ------------------------------------------------------------------

def _pair_launcher(fabric: Fabric, cfg: SweepConfig):
    """The bandwidth-test launcher for ``cfg.launcher``, reading addresses from node attributes."""
    from fabricdoc.drain import host_name
    from fabricdoc.probes import launch

    def attr(port: PortRef, name: str) -> str:
        table = fabric.nodes[port.node].attrs.get(name) or {}
        value = table.get(port.port, table.get(str(port.port)))
        if value is None:
            raise ConfigError(f"host {fabric.label(port.node)!r} has no {name} entry for port {port.port} in the fabric file")
        return str(value)

    def hostname(port: PortRef) -> str:
        return host_name(fabric, port.node)  # an HCA's host on InfiniBand, the host itself on Ethernet

    has_ifnames = any(n.attrs.get("ifnames") for n in fabric.hosts())
    if cfg.launcher == "netns":
        return launch.NetnsLauncher(
            namespace=lambda p: str(fabric.nodes[p.node].attrs.get("netns") or p.node),
            address=lambda p: attr(p, "addresses"),
            ifname=lambda p: attr(p, "ifnames"),
        )
    if cfg.launcher == "srun":
        return launch.SrunLauncher(hostname=hostname, ifname=(lambda p: attr(p, "ifnames")) if has_ifnames else None)
    if cfg.launcher == "mpirun":
        return launch.MpirunLauncher(hostname=hostname, nccl_binary=cfg.nccl_tests)
    return launch.LocalLauncher()


def _measure(fabric: Fabric, cfg: SweepConfig, progress: Progress, options: Options, obs: Observations):
    """Planned rounds, then a targeted re-test around bandwidth suspects; journaled."""
    from fabricdoc.bandwidth import launcher_runner, run_plan
    from fabricdoc.plan import plan_sweep, retest_plan
    from fabricdoc.probes.launch import kill_running

    fields = {"size_bytes": cfg.size_bytes, "backend": cfg.backend}
    if cfg.nccl_tests:
        if cfg.launcher != "mpirun":
            raise ConfigError("--nccl-tests runs the binaries through MPI: use --launcher mpirun")
        fields["program"] = "nccl-tests"
        fields["test"] = f"nccl-tests:{Path(cfg.nccl_tests).name}"  # localization reads both directions
    runner = launcher_runner(_pair_launcher(fabric, cfg), timeout_s=cfg.test_timeout_s, **fields)
    # A two-rank nccl-tests run loads both directions of every cable on its path.
    bidirectional = bool(cfg.nccl_tests)

    def report(ev) -> None:
        progress(ev.phase, ev.done, ev.total)

    plan = plan_sweep(fabric, bidirectional=bidirectional)
    progress("plan", 1, 1)
    obs.pairs.extend(run_plan(fabric, plan, runner, journal=cfg.journal, resume=cfg.resume,
                              progress=report, on_interrupt=kill_running))
    findings = localize(fabric, obs, options)
    rounds = len(plan.rounds)
    suspects = _suspects(fabric, findings)
    if cfg.retest and suspects:
        again = retest_plan(fabric, suspects, bidirectional=bidirectional)
        extra = run_plan(fabric, again, runner, journal=cfg.journal, resume=cfg.resume,
                         progress=report, on_interrupt=kill_running)
        obs.pairs.extend(_renumber(extra, rounds))
        rounds += len(again.rounds)
        findings = localize(fabric, obs, options)
    return rounds, findings


def _renumber(pairs, offset: int):
    import dataclasses

    return [dataclasses.replace(p, round=p.round + offset) for p in pairs]


def _roce(cfg: SweepConfig, progress: Progress, options: Options):
    from fabricdoc import rocesource
    from fabricdoc.analyze import align
    from fabricdoc.fabricfile import load_fabric

    if not cfg.topology:
        raise ConfigError("--fabric roce needs --topology FILE: the fabric file naming hosts, ports and interfaces")
    fabric, _ = load_fabric(cfg.topology)
    obs = rocesource.collect(fabric, cfg.hosts, launcher=cfg.launcher, interval_s=cfg.interval_s,
                             timeout_s=cfg.timeout_s + cfg.interval_s, progress=progress)
    obs = align(fabric, obs)
    if cfg.bandwidth:
        rounds, findings = _measure(fabric, cfg, progress, options, obs)
    else:
        rounds, findings = 0, localize(fabric, obs, options)
    return fabric, obs, rounds, findings
