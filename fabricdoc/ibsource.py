"""InfiniBand sweep source: discover the fabric and sample it with infiniband-diags (orchestration only).

How ``fabricdoc sweep --fabric ib`` / ``--fabric ibsim:NETFILE`` uses it::

    from fabricdoc import ibsource
    from fabricdoc.probes.ibdiags import IbRunner
    from fabricdoc.probes.ibsim import IbSim

    with IbSim(netfile) as sim:                       # only for ibsim:NETFILE
        runner = IbRunner.for_sim(sim, timeout_s=30)  # real host: IbRunner(timeout_s=30)
        fabric = ibsource.expected_fabric(runner, args.topology)  # discover(), or --topology + live LFTs
        obs = ibsource.collect(runner, fabric, interval_s=args.interval,
                               baseline=args.baseline, progress=callback)
        findings = localize(fabric, obs)

``discover`` runs ibnetdiscover, iblinkinfo and ibroute (one per switch) and
returns a Fabric whose node ids are GUIDs and whose paths follow OpenSM's
LFTs. ``collect`` discovers again (what is there *now*), reads link states,
and takes two whole-fabric counter samples ``interval_s`` apart (or one, against
``baseline``: a path written by :func:`save_sample` or a list of PortCounters).
Links the expected ``fabric`` has but the live one lacks come out as
``PortState(state="Down")`` at both ends. Every tool run becomes a
``ProbeRun`` in ``Observations.probes``; a tool that fails is recorded there
(one line naming the tool) and the other tools' results are kept.
``progress(step, done, total)`` is called as work advances (``step`` is a short
text such as ``"ibroute"`` or ``"interval"``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from fabricdoc import ibfabric
from fabricdoc.errors import FabricdocError, ParseError
from fabricdoc.model import Observations, PortCounters, PortRef, PortState, ProbeRun
from fabricdoc.probes import ibdiags
from fabricdoc.probes.ibdiags import IbRunner, IbTopology
from fabricdoc.topology import Fabric

Progress = Callable[[str, int, int], None]
# ibsim serves at most 10 clients and OpenSM is one of them.
MAX_PARALLEL = 4
SAMPLE_KIND = "fabricdoc-ib-sample"


class _Log:
    """The ProbeRuns of one discover/collect call."""

    def __init__(self, progress: Progress | None) -> None:
        self.runs: list[ProbeRun] = []
        self.progress = progress or (lambda step, done, total: None)
        self.tool_s = 0.0

    def call(self, probe: str, target: str, fn: Callable[[], Any]) -> Any:
        """Run one tool step; a FabricdocError is recorded and returned as None."""
        start = time.monotonic()
        try:
            result = fn()
        except FabricdocError as exc:
            status = getattr(exc, "status", "error")
            if isinstance(exc, ParseError):
                status = "error"
            self.runs.append(ProbeRun(probe, target, status, time.monotonic() - start, _one_line(exc)))  # type: ignore[arg-type]
            return None
        self.runs.append(ProbeRun(probe, target, "ok", time.monotonic() - start))
        return result


    def fail(self, probe: str, target: str, exc: FabricdocError) -> None:
        """Turn the ok ProbeRun of a tool whose output then failed to parse into an error."""
        for i in range(len(self.runs) - 1, -1, -1):
            r = self.runs[i]
            if r.probe == probe and r.target == target and r.status == "ok":
                self.runs[i] = replace(r, status="error", error=_one_line(exc))
                return
        self.runs.append(ProbeRun(probe, target, "error", 0.0, _one_line(exc)))

    def parse(self, probe: str, target: str, fn: Callable[[], Any]) -> Any:
        """Parse a finished run's output; a ParseError marks that run failed and gives None."""
        try:
            return fn()
        except FabricdocError as exc:
            self.fail(probe, target, exc)
            return None


def _epoch_mid(run: ibdiags.ToolRun) -> float:
    """Wall-clock time at the middle of a tool run (counters were read somewhere in it)."""
    return time.time() - (time.monotonic() - run.started - run.duration_s / 2)


def _one_line(exc: BaseException) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= 300 else text[:297] + "..."


def _tool_time(runner: IbRunner, since: int) -> float:
    return ibdiags.busy_time(runner.runs[since:])


# -- discovery ---------------------------------------------------------------


def _topology(runner: IbRunner) -> IbTopology:
    run = runner.ibnetdiscover()
    return ibdiags.parse_ibnetdiscover(run.stdout, source="ibnetdiscover")


def _linkinfo_parse(run: Any, topo: IbTopology, log: _Log) -> list[PortState]:
    """iblinkinfo's states; an output that covers fewer nodes than ibnetdiscover saw is
    recorded as an error (cut short at a line boundary) and what it did give is kept."""
    if run is None:
        return []
    states = log.parse("iblinkinfo", "fabric", lambda: ibdiags.parse_iblinkinfo(
        run.stdout, source="iblinkinfo", port_guid_to_node=topo.port_guids(), lid_to_port=topo.lids()))
    if states is None:
        return []
    seen = {s.node for s in states}
    missing = [n for n in topo.nodes if n.guid not in seen]
    if topo.nodes and missing:
        first = missing[0].description or missing[0].guid
        log.fail("iblinkinfo", "fabric", ParseError(
            "iblinkinfo", 0, "", f"output ends early: lists {len(seen)} of {len(topo.nodes)} nodes (no {first!r})"))
    return states


def _lfts(runner: IbRunner, topo: IbTopology, log: _Log) -> dict[str, dict[int, int]] | None:
    switches = [n for n in topo.nodes if n.type == "Switch" and n.lid]
    done = 0
    lfts: dict[str, dict[int, int]] = {}

    def one(node: ibdiags.IbNodeRecord) -> tuple[str, dict[int, int] | None]:
        def read() -> ibdiags.IbRoute:
            return ibdiags.parse_ibroute(runner.ibroute(node.lid or 0).stdout, source=f"ibroute {node.lid}")

        route = log.call("ibroute", node.description or node.guid, read)
        return node.guid, (route.lft if route is not None else None)

    with ThreadPoolExecutor(max_workers=MAX_PARALLEL) as pool:
        for guid, lft in pool.map(one, switches):
            done += 1
            log.progress("ibroute", done, len(switches))
            if lft is not None:
                lfts[guid] = lft
    # Partial tables would route some pairs and fail others: use all of them or none.
    return lfts if len(lfts) == len(switches) else None


def discover(runner: IbRunner, *, progress: Progress | None = None, with_routes: bool = True) -> Fabric:
    """The live fabric: nodes and links from ibnetdiscover, maxima from iblinkinfo, routes from ibroute.

    Raises ProbeError/ParseError when ibnetdiscover itself fails (there is no
    fabric without it); iblinkinfo or ibroute failing only loses maxima or routes,
    recorded in ``runner.probe_runs``.
    """
    log = _Log(progress)
    log.progress("ibnetdiscover", 0, 1)
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=1) as pool:
        link_run = pool.submit(log.call, "iblinkinfo", "fabric", runner.iblinkinfo)
        try:
            topo = _topology(runner)
        except FabricdocError as exc:
            link_run.result()
            runner.probe_runs.append(
                ProbeRun("ibnetdiscover", "fabric", getattr(exc, "status", "error"), time.monotonic() - start,
                         _one_line(exc))
            )
            raise
        log.runs.append(ProbeRun("ibnetdiscover", "fabric", "ok", time.monotonic() - start))
        states = _linkinfo_parse(link_run.result(), topo, log)
    lfts = _lfts(runner, topo, log) if with_routes else None
    fabric = ibfabric.fabric_from_ib(
        topo,
        lfts,
        name="ib",
        source=runner.describe(),
        port_states=ibfabric.cap_supported(states),
    )
    runner.probe_runs.extend(log.runs)
    return fabric


def expected_fabric(
    runner: IbRunner, topology: str | Path | None = None, *, progress: Progress | None = None
) -> Fabric:
    """The fabric a sweep compares against: ``topology`` (a saved ibnetdiscover output or a
    net file) when given, else the live discovery; either way with OpenSM's live LFTs, so
    paths follow the routes the switches really use."""
    live = discover(runner, progress=progress)
    if topology is None:
        return live
    fabric = ibfabric.load_ibnetdiscover_file(topology)
    fabric.lfts = {sw: table for sw, table in live.lfts.items() if sw in fabric.nodes}
    if len(fabric.lfts) != len(fabric.switches()):
        fabric.lfts = {}  # a switch of the expected fabric is gone: fall back to up/down routing
    return fabric


# -- sampling ----------------------------------------------------------------


def _sample_runs(runner: IbRunner, log: _Log, label: str, pool: ThreadPoolExecutor) -> tuple[Any, Any]:
    """Start one whole-fabric counter sample: ibqueryerrors for errors, ``--counters`` for data."""
    err = pool.submit(log.call, "ibqueryerrors", label, runner.ibqueryerrors)
    dat = pool.submit(log.call, "ibqueryerrors --counters", label, lambda: runner.ibqueryerrors(counters=True))
    return err, dat


def _sample_merge(err_run: Any, dat_run: Any, topo: IbTopology | None, log: _Log, label: str) -> list[PortCounters]:
    """Merge one sample's two scans into one PortCounters per cabled port.

    Error counters of a port ibqueryerrors checked but did not list are zero
    (thresholds are all zero); if the error scan failed they stay unknown
    (``None``). Switch port 0 (the management port) is dropped.
    """
    guids = topo.port_guids() if topo is not None else {}
    err = dat = None
    if err_run is not None:
        err = log.parse("ibqueryerrors", label, lambda: ibdiags.parse_ibqueryerrors(
            err_run.stdout, source="ibqueryerrors", timestamp=_epoch_mid(err_run), port_guid_to_node=guids))
    if dat_run is not None:
        dat = log.parse("ibqueryerrors --counters", label, lambda: ibdiags.parse_ibqueryerrors(
            dat_run.stdout, source="ibqueryerrors --counters", timestamp=_epoch_mid(dat_run),
            port_guid_to_node=guids))
    now = time.time()
    # (node, port) tuples as keys: hashing them is much cheaper than hashing PortRef dataclasses.
    ports: dict[tuple[str, int], dict[str, int | None]] = {}
    if topo is not None:
        for n in topo.nodes:
            for p in n.ports:
                ports[(n.guid, p.port)] = {}
    data_of: dict[tuple[str, int], PortCounters] = {}
    if dat is not None:
        for c in dat.counters:
            data_of[(c.node, c.port)] = c
            ports.setdefault((c.node, c.port), {})
    listed: dict[tuple[str, int], PortCounters] = {}
    if err is not None:
        for c in err.counters:
            listed[(c.node, c.port)] = c
            ports.setdefault((c.node, c.port), {})
    zero = dict.fromkeys(ibdiags.IBQUERYERRORS_ERRORS, 0 if err is not None else None)
    out: list[PortCounters] = []
    for key in ports:
        if key[1] == 0:
            continue
        vals: dict[str, int | None] = dict(zero)
        d = data_of.get(key)
        e = listed.get(key)
        if d is not None:
            vals.update(d.values)
        if e is not None:
            vals.update(e.values)
        stamp = d.timestamp if d is not None else e.timestamp if e is not None else now
        out.append(
            PortCounters(
                node=key[0],
                port=key[1],
                timestamp=stamp,
                values=vals,
                source="ibqueryerrors",
                width_bits=dict(d.width_bits) if d is not None else {},
            )
        )
    return out


def sample_counters(runner: IbRunner, topo: IbTopology | None, log: _Log, label: str) -> list[PortCounters]:
    """One whole-fabric counter sample (both scans side by side), merged per port."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        err, dat = _sample_runs(runner, log, label, pool)
        err_run, dat_run = err.result(), dat.result()
    return _sample_merge(err_run, dat_run, topo, log, label)


def missing_link_states(expected: Fabric, live: IbTopology | None) -> list[PortState]:
    """``Down`` states for both ends of every expected link the live fabric does not show."""
    if live is None:
        return []
    cabled: dict[PortRef, PortRef] = {}
    for n in live.nodes:
        for p in n.ports:
            cabled[PortRef(n.guid, p.port)] = PortRef(p.remote_guid, p.remote_port)
    out: list[PortState] = []
    for key in expected.links:
        if cabled.get(key.a) == key.b or cabled.get(key.b) == key.a:
            continue
        for end, other in ((key.a, key.b), (key.b, key.a)):
            out.append(
                PortState(end.node, end.port, "Down", phys_state=None, peer=other, source="ibnetdiscover (link missing)")
            )
    return out


def collect(
    runner: IbRunner,
    fabric: Fabric,
    interval_s: float = 10.0,
    baseline: str | Path | Sequence[PortCounters] | None = None,
    progress: Progress | None = None,
) -> Observations:
    """Sample the fabric: states now, and counters twice ``interval_s`` apart (or once against ``baseline``).

    ``fabric`` is the expected fabric (the first discovery, or ``--topology``);
    node ids must be GUIDs. Tool failures are recorded, never raised.
    """
    log = _Log(progress)
    first_run = len(runner.runs)
    t0 = time.monotonic()
    before: list[PortCounters] = []
    if baseline is not None:
        before = load_sample(baseline) if isinstance(baseline, str | Path) else list(baseline)
    # The fabric-wide scans are independent: run them side by side (4 ibsim clients at most)
    # and parse each once ibnetdiscover has given the GUID and LID maps.
    with ThreadPoolExecutor(max_workers=MAX_PARALLEL) as pool:
        disc = pool.submit(log.call, "ibnetdiscover", "fabric", runner.ibnetdiscover)
        link = pool.submit(log.call, "iblinkinfo", "fabric", runner.iblinkinfo)
        first = _sample_runs(runner, log, "sample 1", pool) if baseline is None else None
        disc_run = disc.result()
        topo = None
        if disc_run is not None:
            topo = log.parse("ibnetdiscover", "fabric", lambda: ibdiags.parse_ibnetdiscover(
                disc_run.stdout, source="ibnetdiscover"))
        log.progress("ibnetdiscover", 1, 4)
        states = ibfabric.cap_supported(_linkinfo_parse(link.result(), topo or IbTopology(()), log))
        states += missing_link_states(fabric, topo)
        log.progress("iblinkinfo", 2, 4)
        if first is not None:
            before = _sample_merge(first[0].result(), first[1].result(), topo, log, "sample 1")
    if baseline is None:
        log.progress("interval", 2, 4)
        deadline = time.monotonic() + max(interval_s, 0.0)
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, 0.5))
    log.progress("counters", 3, 4)
    after = sample_counters(runner, topo, log, "sample 2" if baseline is None else "sample")
    log.progress("done", 4, 4)
    interval = None
    if before and after:
        interval = max(after[0].timestamp - min(c.timestamp for c in before), 0.0)
    obs = Observations(
        before=before,
        after=after,
        states=states,
        probes=[*runner.probe_runs, *log.runs],
        interval_s=interval,
        extra={
            "ib": {
                "tool_s": round(_tool_time(runner, first_run), 6),
                "wall_s": round(time.monotonic() - t0, 6),
                "live_nodes": len(topo.nodes) if topo is not None else None,
                "baseline": str(baseline) if isinstance(baseline, str | Path) else (baseline is not None),
            }
        },
    )
    runner.probe_runs.clear()
    return obs


# -- baseline samples --------------------------------------------------------


def save_sample(obs: Observations | Sequence[PortCounters], path: str | Path) -> Path:
    """Write the latest counter sample of ``obs`` to ``path`` (temp file + rename) for ``--baseline``."""
    from fabricdoc.records_io import records_to_json
    from fabricdoc.report import write_atomic

    sample = (obs.after or obs.before) if isinstance(obs, Observations) else list(obs)
    text = records_to_json(list(sample), extra={"kind": SAMPLE_KIND, "saved_at": time.time()})
    return write_atomic(path, text + "\n")


def load_sample(path: str | Path) -> list[PortCounters]:
    """Read a sample written by :func:`save_sample`; ParseError names the file when it is not one."""
    from fabricdoc.records_io import records_from_json

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParseError(str(p), 0, "", f"cannot read baseline: {exc.strerror}") from exc
    records = records_from_json(text, source=str(p))
    counters = [r for r in records if isinstance(r, PortCounters)]
    if not counters:
        raise ParseError(str(p), 0, "", "baseline holds no port counters")
    return counters


def tool_failures(obs: Observations) -> list[str]:
    """One line per failed tool run, naming the tool (what the CLI prints)."""
    return [
        f"{r.probe}: {r.error}" if r.error and not r.error.startswith(r.probe.split()[0]) else (r.error or r.probe)
        for r in obs.probes
        if r.status != "ok"
    ]
