"""InfiniBand source: discover the fabric and sample it with infiniband-diags, or read saved outputs.

How ``fabricdoc sweep --fabric ib`` / ``--fabric ibsim:NETFILE`` uses it::

    health = HealthRecorder()
    with IbSim(netfile) as sim:                               # only for ibsim:NETFILE
        runner = IbRunner.for_sim(sim, timeout_s=30)          # real host: IbRunner(timeout_s=30)
        fabric = expected_fabric(runner, health, topology)    # discover(), or --topology + live LFTs
        obs = collect(runner, fabric, health, interval_s=10)  # states now, two counter samples

``discover`` runs ibnetdiscover, iblinkinfo and ibroute (one per switch) and
returns a Fabric whose node ids are GUIDs and whose paths follow OpenSM's
LFTs. ``collect`` discovers again (what is there *now*), reads link states,
and takes two whole-fabric counter samples ``interval_s`` apart (or one against
a baseline). For links the expected fabric has but the live one lacks, only what
was seen is recorded: iblinkinfo's own state of an end it read (Down is that tool's
word), ``NoResponse`` for the far end of a port iblinkinfo read up (the CA stopped
answering), ``NotDiscovered`` where nothing was read. Width and speed are judged
against the ports' own PortInfo when ibdiagnet's PORTS are at hand (the expected
fabric is an ibdiagnet run, or ``collect(ports=...)``: min(supported, enabled) of both
ends), the expected topology when one was given, else the tools' hints, the
majority rule last (``IbPortState.max_*_from`` says which). Every tool run is recorded in the
HealthRecorder; a tool that fails is recorded there (one line naming the
tool) and the other tools' results are kept. Saved outputs (an ibnetdiscover
file, concatenated ibroute dumps) are read here too.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricdoc.errors import FabricdocError, ParseError
from fabricdoc.fabric import infiniband as ibfabric
from fabricdoc.fabric.hostmap import HostMap
from fabricdoc.fabric.identity import identify
from fabricdoc.fabric.infiniband import SupportedPort
from fabricdoc.fabric.routes import apply_lfts
from fabricdoc.model.ib import (
    NO_RESPONSE,
    NOT_DISCOVERED,
    IbNodeRecord,
    IbPortState,
    IbRoute,
    IbRoutes,
    IbTopology,
    ToolWarning,
)
from fabricdoc.model.inputs import read_text
from fabricdoc.model.records import (
    Observations,
    PortCounters,
    PortRef,
    PortState,
    ProbeRun,
    ProbeStatus,
)
from fabricdoc.model.topology import Fabric
from fabricdoc.probes.health import HealthRecorder, one_line
from fabricdoc.probes.ib.ibdiagnet import parse_ibdiagnet_fdbs
from fabricdoc.probes.ib.iblinkinfo import parse_iblinkinfo
from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover, parse_ibnetdiscover_ports
from fabricdoc.probes.ib.ibqueryerrors import IBQUERYERRORS_ERRORS, parse_ibqueryerrors
from fabricdoc.probes.ib.ibroute import parse_ibroute, parse_routes
from fabricdoc.probes.ib.ibtracert import parse_ibtracert
from fabricdoc.probes.ib.runner import IbRunner, ToolRun, busy_time
from fabricdoc.sources.ibdiagnet import portinfo_of, read_ibdiagnet_dir

Progress = Callable[[str, int, int], None]
# ibsim serves at most 10 clients and OpenSM is one of them.
MAX_PARALLEL = 4
SAMPLE_KIND = "fabricdoc-ib-sample"
_PORTS_REPORT = re.compile(r"^\s*(?:SW|CA|RT)\s+\d+\s+\d+\s+0x[0-9a-fA-F]+\s")


class _Log(HealthRecorder):
    """The health recorder of one discover/collect call, with its progress callback."""

    def __init__(self, health: HealthRecorder, progress: Progress | None) -> None:
        self.runs = health.runs  # one list: every step lands in the sweep's recorder
        self.progress = progress or (lambda step, done, total: None)


def _epoch_mid(run: ToolRun) -> float:
    """Wall-clock time at the middle of a tool run (counters were read somewhere in it)."""
    return time.time() - (time.monotonic() - run.started - run.duration_s / 2)


def _tool_time(runner: IbRunner, since: int) -> float:
    return busy_time(runner.runs[since:])


# -- discovery ---------------------------------------------------------------


def _topology(runner: IbRunner) -> IbTopology:
    run = runner.ibnetdiscover()
    return parse_ibnetdiscover(run.stdout, source="ibnetdiscover")


def _linkinfo_parse(run: Any, topo: IbTopology, log: _Log) -> list[PortState]:
    """iblinkinfo's states; an output that covers fewer nodes than ibnetdiscover saw is
    recorded as an error (cut short at a line boundary) and what it did give is kept."""
    if run is None:
        return []
    states = log.parse("iblinkinfo", "fabric", lambda: parse_iblinkinfo(
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

    def one(node: IbNodeRecord) -> tuple[str, dict[int, int] | None]:
        def read() -> IbRoute:
            return parse_ibroute(runner.ibroute(node.lid or 0).stdout, source=f"ibroute {node.lid}",
                                 num_ports=node.num_ports)  # an egress port past the switch's is refused by line

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


def _record_warnings(log: _Log, probe: str, warnings: Sequence[ToolWarning]) -> None:
    """The tool's own warnings among its output (MAD timeouts, ibwarn): probe health, not errors."""
    for w in warnings:
        log.record(probe, "fabric", "warning", 0.0, str(w))


def discover(runner: IbRunner, health: HealthRecorder, *, progress: Progress | None = None,
             with_routes: bool = True) -> Fabric:
    """The live fabric: nodes and links from ibnetdiscover, maxima from iblinkinfo, routes from ibroute.

    Raises ProbeError/ParseError when ibnetdiscover itself fails (there is no
    fabric without it, and the failure is recorded first); iblinkinfo or ibroute
    failing only loses maxima or routes, recorded in ``health``.
    """
    log = _Log(health, progress)
    log.progress("ibnetdiscover", 0, 1)
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=1) as pool:
        link_run = pool.submit(log.call, "iblinkinfo", "fabric", runner.iblinkinfo)
        try:
            topo = _topology(runner)
        except FabricdocError as exc:
            link_run.result()
            log.record("ibnetdiscover", "fabric", getattr(exc, "status", "error"), time.monotonic() - start,
                       one_line(exc))
            raise
        log.record("ibnetdiscover", "fabric", "ok", time.monotonic() - start)
        _record_warnings(log, "ibnetdiscover", topo.warnings)
        states = _linkinfo_parse(link_run.result(), topo, log)
    lfts = _lfts(runner, topo, log) if with_routes else None
    return ibfabric.fabric_from_ib(
        topo, lfts, name="ib", source=runner.describe(), port_states=ibfabric.cap_supported(states),
    )


def expected_fabric(
    runner: IbRunner, health: HealthRecorder, topology: str | Path | None = None, *,
    progress: Progress | None = None,
) -> Fabric:
    """The fabric a sweep compares against: ``topology`` (a saved ibnetdiscover output, a net
    file, or an ibdiagnet output directory, whose PORTS then judge the live links in
    :func:`collect`) when given, else the live discovery; either way with OpenSM's live LFTs,
    so paths follow the routes the switches really use."""
    live = discover(runner, health, progress=progress)
    if topology is None:
        return live
    if Path(topology).is_dir():
        fabric = read_ibdiagnet_dir(topology).fabric
    else:
        fabric = load_ibnetdiscover_file(topology)
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
        err = log.parse("ibqueryerrors", label, lambda: parse_ibqueryerrors(
            err_run.stdout, source="ibqueryerrors", timestamp=_epoch_mid(err_run), port_guid_to_node=guids))
    if dat_run is not None:
        dat = log.parse("ibqueryerrors --counters", label, lambda: parse_ibqueryerrors(
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
    zero = dict.fromkeys(IBQUERYERRORS_ERRORS, 0 if err is not None else None)
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


_UP_STATES = ("Active", "Armed", "Init")


def missing_link_states(expected: Fabric, live: IbTopology | None, read: Sequence[PortState] = ()) -> list[PortState]:
    """What was observed about each expected link the live ibnetdiscover does not show, and only that.

    ``read`` are the states iblinkinfo reported. An end it read up (Active, Armed, Init) means
    the far end did not answer the discovery: the far end gets a ``NoResponse`` record naming
    what was read. An end it read down (Down/Polling, Disabled) needs nothing more: that state
    is the evidence. A link neither of whose ends was read gets ``NotDiscovered`` at both ends
    (missing from discovery, state unknown). No record here claims a state a tool did not report.
    """
    if live is None:
        return []
    cabled: dict[PortRef, PortRef] = {}
    for n in live.nodes:
        for p in n.ports:
            cabled[PortRef(n.guid, p.port)] = PortRef(p.remote_guid, p.remote_port)
    seen = {s.ref: s for s in read}
    out: list[PortState] = []
    for key in expected.links:
        if cabled.get(key.a) == key.b or cabled.get(key.b) == key.a:
            continue
        ends = ((key.a, key.b), (key.b, key.a))
        if not any(end in seen for end, _ in ends):
            for end, other in ends:
                out.append(IbPortState(end.node, end.port, NOT_DISCOVERED, peer=other,
                                       source="ibnetdiscover (not in the live discovery); iblinkinfo: not listed"))
            continue
        for end, other in ends:
            st = seen.get(end)
            if st is None or st.state not in _UP_STATES or other in seen:
                continue
            said = f"{st.state}/{st.phys_state}" if st.phys_state else st.state
            if getattr(st, "far_answered", None) is False:
                said += ', far end "Port not available"'
            out.append(IbPortState(
                other.node, other.port, NO_RESPONSE, peer=end,
                source=f"ibnetdiscover (not in the live discovery); iblinkinfo: "
                       f"{expected.label(end.node)}[{end.port}] {said}",
            ))
    return out


def judge_states(states: Sequence[PortState], fabric: Fabric, *, topology_given: bool,
                 ports: Sequence[SupportedPort] | None = None) -> list[PortState]:
    """What each live port should run at: the expected fabric's link (``topology_given``), then the
    ports' PortInfo, min(supported, enabled) of both ends (``ports``; by default the PORTS of the
    ibdiagnet run ``fabric`` was read from). PORTS read with the expected fabric describe the same
    ports more closely than its links, so they win there; ``ports`` given apart keep ``topology``."""
    out = list(states)
    if topology_given:
        out = ibfabric.expect_from_topology(out, fabric)
    own = ports is None
    rows = portinfo_of(fabric) if own else ports
    if rows:
        out = ibfabric.expect_from_ports(out, rows, keep=frozenset() if own else frozenset({"topology"}))
    return out


def _topology_given(fabric: Fabric, runner: IbRunner) -> bool:
    """Whether ``fabric`` is an expected topology (a file) rather than this runner's live discovery."""
    return fabric.source != runner.describe()


def collect(
    runner: IbRunner,
    fabric: Fabric,
    health: HealthRecorder,
    interval_s: float = 10.0,
    baseline: str | Path | Sequence[PortCounters] | None = None,
    progress: Progress | None = None,
    ports: Sequence[SupportedPort] | None = None,
) -> Observations:
    """Sample the fabric: states now, and counters twice ``interval_s`` apart (or once against ``baseline``).

    ``fabric`` is the expected fabric (the first discovery, or ``--topology``);
    node ids must be GUIDs. ``ports`` are PortInfo rows (ibdiagnet PORTS) judging what each
    live link should run at; by default those of the ibdiagnet run ``fabric`` was read from,
    if it was. Tool failures are recorded in ``health``, never raised;
    ``Observations.probes`` holds every run recorded so far.
    """
    log = _Log(health, progress)
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
            topo = log.parse("ibnetdiscover", "fabric", lambda: parse_ibnetdiscover(
                disc_run.stdout, source="ibnetdiscover"))
            _record_warnings(log, "ibnetdiscover", topo.warnings if topo is not None else ())
        log.progress("ibnetdiscover", 1, 4)
        states = ibfabric.cap_supported(_linkinfo_parse(link.result(), topo or IbTopology(()), log))
        states = judge_states(states, fabric, topology_given=_topology_given(fabric, runner), ports=ports)
        states += missing_link_states(fabric, topo, states)
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
        probes=list(health.runs),
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
    return obs


# -- baseline samples --------------------------------------------------------


def sample_text(obs: Observations | Sequence[PortCounters]) -> str:
    """The latest counter sample of ``obs`` as a records document, for ``--save-sample`` / ``--baseline``."""
    from fabricdoc.sources.records import records_to_json

    sample = (obs.after or obs.before) if isinstance(obs, Observations) else list(obs)
    return records_to_json(list(sample), extra={"kind": SAMPLE_KIND, "saved_at": time.time()}) + "\n"


def load_sample(path: str | Path) -> list[PortCounters]:
    """Read a sample written by ``--save-sample``; ParseError names the file when it is not one."""
    from fabricdoc.sources.records import records_from_json

    p = Path(path)
    records = records_from_json(read_text(p, "baseline"), source=str(p))
    counters = [r for r in records if isinstance(r, PortCounters)]
    if not counters:
        raise ParseError(str(p), 0, "", "baseline holds no port counters")
    return counters


# -- route cross-check ---------------------------------------------------------------


def check_routes(runner: IbRunner, fabric: Fabric, health: HealthRecorder, samples: int = 4) -> int:
    """Walk a few host-to-host routes with ``ibtracert`` and compare them with the LFT paths.

    Localization reasons over ``Fabric.path``; if the switches forward differently
    (LFTs read mid-change, a routing engine we mis-read), a wrong cable would be
    blamed. A mismatch is a probe-health error naming the pair; returns how many differ.
    """
    if not fabric.lfts:
        return 0
    ports = [p for p in fabric.host_ports() if p in fabric.port_lids]
    if len(ports) < 2:
        return 0
    step = max(1, len(ports) // samples)
    pairs = [(ports[i], ports[(i + len(ports) // 2) % len(ports)]) for i in range(0, len(ports), step)][:samples]
    guids = {guid: PortRef(node.id, int(port)) for node in fabric.hosts()
             for port, guid in (node.attrs.get("port_guids") or {}).items()}
    wrong = 0
    for src, dst in pairs:
        if src.node == dst.node:
            continue
        target = f"{fabric.label(src.node)} -> {fabric.label(dst.node)}"
        trace = health.call("ibtracert", target, lambda s=src, d=dst: parse_ibtracert(
            runner.ibtracert(fabric.port_lids[s], fabric.port_lids[d]).stdout, source="ibtracert"))
        if trace is None:
            continue
        walked, planned = set(trace.links(guids)), set(fabric.path(src, dst))
        if walked != planned:
            wrong += 1
            health.fail("ibtracert", target, f"ibtracert: the switches forward {target} over {len(walked)} "
                        f"cables that differ from the LFT path read with ibroute")
    return wrong


# -- a session ---------------------------------------------------------------------


@contextmanager
def session(netfile: str | Path | None = None, *, timeout_s: float = 60.0) -> Iterator[tuple[IbRunner, HealthRecorder]]:
    """The tools' runner and a health recorder: on this host's fabric, or on ibsim + OpenSM
    started for ``netfile`` (stopped, by pid, when the session ends)."""
    from fabricdoc.probes.ib.ibsim import IbSim

    health = HealthRecorder()
    with IbSim(netfile) if netfile else nullcontext() as sim:
        runner = IbRunner.for_sim(sim, timeout_s=timeout_s) if sim else IbRunner(timeout_s=timeout_s)
        try:
            yield runner, health
        finally:
            runner.close()


# -- saved outputs -------------------------------------------------------------


@dataclass
class SavedFabric:
    """A fabric read from a saved tool output, with the tools' warnings found in it as probe health."""

    fabric: Fabric
    probes: list[ProbeRun]


def warning_runs(probe: str, target: str, warnings: Sequence[ToolWarning]) -> list[ProbeRun]:
    """One ``warning`` ProbeRun per tool warning, naming the file and the line it stood on."""
    return [ProbeRun(probe, target, ProbeStatus.WARNING, 0.0, str(w)) for w in warnings]


def _is_ports_report(text: str) -> bool:
    """Whether the text is ``ibnetdiscover -p`` (one ``SW|CA|RT lid port guid`` line per port)."""
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return bool(_PORTS_REPORT.match(line))
    return False


def read_ibnetdiscover_file(path: str | Path, host_map: HostMap | None = None) -> SavedFabric:
    """A fabric from a saved ``ibnetdiscover`` output (the topology file, ``-f``, ``-g``, or the
    ``-p`` ports report), ibdiagnet's ``ibdiagnet2.ibnetdiscover``, or an ibsim net file, with
    the tool's warnings and the HCAs it could not name as ``warning`` probe runs."""
    p = Path(path)
    text = read_text(p, "ibnetdiscover output")
    parse = parse_ibnetdiscover_ports if _is_ports_report(text) else parse_ibnetdiscover
    records = parse(text, source=str(p))
    fabric = ibfabric.fabric_from_ib(records, name=p.stem, source=str(p), host_map=host_map)
    probes = warning_runs("ibnetdiscover", str(p), records.warnings)
    probes += identify(fabric, host_map).probe_runs(str(p))
    return SavedFabric(fabric, probes)


def load_ibnetdiscover_file(path: str | Path, host_map: HostMap | None = None) -> Fabric:
    """A fabric from a saved ``ibnetdiscover`` output (or an ibsim net file in that syntax)."""
    return read_ibnetdiscover_file(path, host_map).fabric


def read_routes_file(path: str | Path) -> IbRoutes:
    """Every switch's LFT from a saved routes file: concatenated ``ibroute`` dumps, ``dump_fts``
    output (warning lines between the switches kept), OpenSM's LFT dump, or ibdiagnet's
    ``ibdiagnet2.fdbs``. Each route carries the line its dump starts on; errors name the
    file and the line in it."""
    path = Path(path)
    text = read_text(path, "routes")
    first = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")), "")
    if "dump_ucast_routes: Switch" in first:
        return parse_ibdiagnet_fdbs(text, source=str(path))
    return parse_routes(text, source=str(path))


def apply_routes_file(fabric: Fabric, path: str | Path) -> list[ProbeRun]:
    """Load a saved routes file onto ``fabric`` so its paths follow the routes the subnet manager
    programmed; returns the tool warnings found in the file (``warning`` probe runs)."""
    routes = read_routes_file(path)
    for route in routes.routes:
        if route.switch_guid not in fabric.nodes:
            raise ParseError(str(path), route.line_no, "", f"switch {route.switch_guid} is not in the fabric")
    apply_lfts(fabric, routes.routes, source=str(path))
    return warning_runs("routes", str(path), routes.warnings)
