"""What a loaded report and the history's port samples become as Prometheus metric families.

Port counters use node_exporter's infiniband collector names and labels
(``node_infiniband_<suffix>{device,port}``) under the ``fabricdoc_`` prefix,
so an InfiniBand dashboard works after replacing ``node_`` with ``fabricdoc_``.
``device`` is the fabric node's label (an HCA's or a switch's description),
``port`` its port number; ``guid`` (the node GUID, the port's identity on IB)
and ``peer`` (``label[port]`` at the cable's other end) are added. Values are
the newest sample in the history, in base units (IB data words x 4 = bytes);
``..._per_second`` is the rate between the port's last two samples.

=====================================  ===========================================
fabricdoc counter (model.counters)     metric
=====================================  ===========================================
symbol_errors                          fabricdoc_infiniband_symbol_error_total
link_error_recovery                    fabricdoc_infiniband_link_error_recovery_total
link_downed                            fabricdoc_infiniband_link_downed_total
rcv_errors                             fabricdoc_infiniband_port_errors_received_total
rcv_remote_phys_errors                 fabricdoc_infiniband_port_receive_remote_physical_errors_total
rcv_switch_relay_errors                fabricdoc_infiniband_port_receive_switch_relay_errors_total
rx_discards / xmit_discards            fabricdoc_infiniband_port_discards_{received,transmitted}_total
rcv_/xmit_constraint_errors            fabricdoc_infiniband_port_constraint_errors_{received,transmitted}_total
local_link_integrity_errors            fabricdoc_infiniband_local_link_integrity_errors_total
buffer_overrun_errors                  fabricdoc_infiniband_excessive_buffer_overrun_errors_total
vl15_dropped                           fabricdoc_infiniband_vl15_dropped_total
xmit_wait_ticks                        fabricdoc_infiniband_port_transmit_wait_total
rcv_bytes / xmit_bytes                 fabricdoc_infiniband_port_data_{received,transmitted}_bytes_total
rcv_packets / xmit_packets             fabricdoc_infiniband_port_packets_{received,transmitted}_total
*_unicast_packets, *_multicast_packets fabricdoc_infiniband_{unicast,multicast}_packets_{received,transmitted}_total
any other counter C                    fabricdoc_port_C_total (``_us`` counters: ``fabricdoc_port_..._seconds_total``)
a gauge G (qdisc backlog)              fabricdoc_port_G
link state (report topology)           fabricdoc_infiniband_state_id (node_exporter's codes: 1 down, 4 active)
trained rate                           fabricdoc_infiniband_rate_bytes_per_second (0 when down)
trained / supported width, rate        fabricdoc_port_width_lanes, fabricdoc_port_supported_width_lanes,
                                       fabricdoc_port_supported_rate_bytes_per_second
=====================================  ===========================================
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from fabricdoc.model.findings import Finding, FindingKind
from fabricdoc.model.severity import SEVERITIES
from fabricdoc.model.verdict import Verdict
from fabricdoc.report.figures import BUSBW_KEYS
from fabricdoc.report.report import Report
from fabricdoc.scheduler.exporter_history import HistoryView, PortKey
from fabricdoc.scheduler.exposition import Exposition, labels

VERDICTS = tuple(v.value for v in Verdict)
PAIR_STATUSES = ("ok", "slow", "hung", "wrong", "error")

# fabricdoc's canonical counter -> node_exporter's infiniband collector suffix (same quantity).
NODE_EXPORTER_NAMES: dict[str, str] = {
    "symbol_errors": "symbol_error_total",
    "link_error_recovery": "link_error_recovery_total",
    "link_downed": "link_downed_total",
    "rcv_errors": "port_errors_received_total",
    "rcv_remote_phys_errors": "port_receive_remote_physical_errors_total",
    "rcv_switch_relay_errors": "port_receive_switch_relay_errors_total",
    "rx_discards": "port_discards_received_total",
    "xmit_discards": "port_discards_transmitted_total",
    "rcv_constraint_errors": "port_constraint_errors_received_total",
    "xmit_constraint_errors": "port_constraint_errors_transmitted_total",
    "local_link_integrity_errors": "local_link_integrity_errors_total",
    "buffer_overrun_errors": "excessive_buffer_overrun_errors_total",
    "vl15_dropped": "vl15_dropped_total",
    "xmit_wait_ticks": "port_transmit_wait_total",
    "rcv_bytes": "port_data_received_bytes_total",
    "xmit_bytes": "port_data_transmitted_bytes_total",
    "rcv_packets": "port_packets_received_total",
    "xmit_packets": "port_packets_transmitted_total",
    "rcv_unicast_packets": "unicast_packets_received_total",
    "xmit_unicast_packets": "unicast_packets_transmitted_total",
    "rcv_multicast_packets": "multicast_packets_received_total",
    "xmit_multicast_packets": "multicast_packets_transmitted_total",
}
_IB_STATE_ID = {"up": 4, "down": 1}  # node_exporter's state_id: 1 down, 4 active


@dataclass(frozen=True)
class CounterMetric:
    """How one canonical counter is exported: total and rate names, and the factor to base units."""

    total: str
    rate: str
    scale: float
    help: str


def counter_metric(canonical: str) -> CounterMetric:
    """The metric names of a canonical counter (node_exporter's where the quantity is the same)."""
    suffix = NODE_EXPORTER_NAMES.get(canonical)
    if suffix is not None:
        stem = f"fabricdoc_infiniband_{suffix.removesuffix('_total')}"
        return CounterMetric(f"{stem}_total", f"{stem}_per_second", 1.0,
                             f"{canonical} (node_exporter's node_infiniband_{suffix})")
    if canonical.endswith("_us"):  # microseconds: Prometheus wants seconds
        stem = f"fabricdoc_port_{canonical.removesuffix('_us')}_seconds"
        return CounterMetric(f"{stem}_total", f"fabricdoc_port_{canonical.removesuffix('_us')}_per_second",
                             1e-6, f"{canonical} in seconds")
    return CounterMetric(f"fabricdoc_port_{canonical}_total", f"fabricdoc_port_{canonical}_per_second", 1.0, canonical)


# -- what the report says about ports ------------------------------------------
@dataclass(frozen=True)
class TopologyPort:
    """One cabled port as the report's topology describes its link."""

    device: str
    guid: str
    peer: str
    state: str
    lanes: int
    lane_gbps: float
    max_lanes: int
    max_lane_gbps: float

    @property
    def degraded(self) -> bool:
        return self.state != "down" and (self.lanes < self.max_lanes or self.lane_gbps < self.max_lane_gbps)


def topology_ports(rep: Report) -> dict[PortKey, TopologyPort]:
    """Both ends of every link in the report's topology (empty without one)."""
    topo = rep.topology or {}
    nodes = {n["id"]: n for n in topo.get("nodes", [])}
    out: dict[PortKey, TopologyPort] = {}
    for lk in topo.get("links", []):
        ends = ((lk["a"][0], int(lk["a"][1])), (lk["b"][0], int(lk["b"][1])))
        lanes, gbps = int(lk["lanes"]), float(lk["lane_gbps"])
        max_lanes, max_gbps = int(lk.get("max_lanes") or lanes), float(lk.get("max_lane_gbps") or gbps)
        for (nid, port), (oid, oport) in (ends, ends[::-1]):
            node, other = nodes.get(nid, {}), nodes.get(oid, {})
            out[(nid, port)] = TopologyPort(
                str(node.get("label") or nid), str(node.get("guid") or ""), f"{other.get('label') or oid}[{oport}]",
                str(lk.get("state", "up")), lanes, gbps, max_lanes, max_gbps)
    return out


def finding_ports(f: Finding, by_node: dict[str, list[PortKey]]) -> list[PortKey]:
    """The ports a finding names: a cable's two ends, a port, or every cabled port of a node it names."""
    if f.endpoints and len(f.endpoints) == len(f.node_ids):
        ends = list(zip(f.node_ids, (int(p) for _, p in f.endpoints), strict=True))
        return ends[:1] if f.kind == "port" else ends
    if f.endpoints and f.kind == "port" and f.node_ids:
        return [(f.node_ids[0], int(f.endpoints[0][1]))]
    return [pk for nid in f.node_ids for pk in by_node.get(nid, [])]


# -- the families ----------------------------------------------------------------------
def report_metrics(out: Exposition, rep: Report) -> None:
    """The verdict, findings, drain list, tests and predicted busbw of a loaded, fresh report."""
    out.family("fabricdoc_verdict", "gauge", "The last sweep's verdict: 1 for the current one",
               [(labels(verdict=v), float(rep.verdict == v)) for v in VERDICTS])
    counts: dict[tuple[str, str], int] = {}
    for f in rep.findings:
        counts[(str(f.severity), f.kind)] = counts.get((str(f.severity), f.kind), 0) + 1
    combos = [(s, k) for s in SEVERITIES for k in get_args(FindingKind)]
    combos += sorted(set(counts) - set(combos))
    out.family("fabricdoc_findings", "gauge", "Findings in the report by severity and kind (sum() is their number)",
               [(labels(severity=s, kind=k), float(counts.get((s, k), 0))) for s, k in combos])
    out.family("fabricdoc_finding", "gauge", "One finding of the report; the value is its confidence (0..1)",
               [(labels(id=f.id, key=f.key, kind=f.kind, component=f.component, fault=f.fault, severity=str(f.severity)),
                 float(f.confidence)) for f in rep.findings])
    out.family("fabricdoc_drain", "gauge", "Hosts the report says to drain (1 each)",
               [(labels(node=d.node), 1.0) for d in rep.drain])
    out.gauge("fabricdoc_drain_nodes", "Number of hosts the report says to drain", float(len(rep.drain)))
    tests = {k: v for k, v in rep.tests.items() if isinstance(v, int | float)}
    if "pairs_tested" in tests:
        bad = {s: float(tests.get(f"pairs_{s}", 0)) for s in PAIR_STATUSES[1:]}
        ok = max(float(tests["pairs_tested"]) - sum(bad.values()), 0.0)
        out.family("fabricdoc_pairs", "gauge", "Bandwidth tests of the sweep by outcome (they add up to the tests run)",
                   [(labels(status=s), v) for s, v in {"ok": ok, **bad}.items()])
    bw = rep.impact.allreduce_busbw_gbps if rep.impact is not None else None
    figures = {b: bw.figure(b) for b in BUSBW_KEYS} if bw is not None else {}
    out.family("fabricdoc_allreduce_busbw_bytes_per_second", "gauge", "Predicted AllReduce bus bandwidth",
               [(labels(basis=b), float(v) * 1e9 / 8) for b, v in figures.items() if v is not None])
    links = (rep.topology or {}).get("links", [])
    if links:
        states = {"up": 0, "down": 0}
        degraded = 0
        for lk in links:
            state = str(lk.get("state", "up"))
            states[state] = states.get(state, 0) + 1
            degraded += state != "down" and (lk["lanes"] < (lk.get("max_lanes") or lk["lanes"])
                                             or lk["lane_gbps"] < (lk.get("max_lane_gbps") or lk["lane_gbps"]))
        out.family("fabricdoc_links", "gauge", "Links of the fabric by state",
                   [(labels(state=s), float(n)) for s, n in states.items()])
        out.gauge("fabricdoc_links_degraded", "Links up but trained below their supported width or speed",
                  float(degraded))


def _selected_ports(rep: Report | None, topo: dict[PortKey, TopologyPort], hist: HistoryView | None,
                    all_ports: bool) -> list[PortKey]:
    """The ports that get per-port series: every one, or those a finding, a counter or a link state flags."""
    hports = hist.ports if hist is not None else {}
    if all_ports:
        return sorted(set(topo) | set(hports))
    chosen = {pk for pk, hp in hports.items() if hp.alarm}
    chosen |= {pk for pk, tp in topo.items() if tp.state == "down" or tp.degraded}
    if rep is not None:
        by_node: dict[str, list[PortKey]] = {}
        for pk in set(topo) | set(hports):
            by_node.setdefault(pk[0], []).append(pk)
        for f in rep.findings:
            chosen.update(finding_ports(f, by_node))
    return sorted(chosen)


def port_metrics(out: Exposition, rep: Report | None, hist: HistoryView | None, all_ports: bool) -> int:
    """Per-port state, width, rate and counter families; returns how many ports got series."""
    topo = topology_ports(rep) if rep is not None else {}
    hports = hist.ports if hist is not None else {}
    chosen = _selected_ports(rep, topo, hist, all_ports)
    lab: dict[PortKey, str] = {}
    for pk in chosen:
        src = topo.get(pk) or hports.get(pk)
        if src is not None:
            lab[pk] = labels(device=src.device, port=pk[1], guid=src.guid, peer=src.peer)
    tps = [(lab[pk], tp) for pk in chosen if pk in lab and (tp := topo.get(pk)) is not None]
    if tps:
        out.family("fabricdoc_infiniband_state_id", "gauge", "Link state of the port (node_exporter's codes: 1 down, 4 active)",
                   [(la, float(_IB_STATE_ID.get(tp.state, 0))) for la, tp in tps])
        out.family("fabricdoc_infiniband_rate_bytes_per_second", "gauge", "Trained signal rate of the port (0 when down)",
                   [(la, 0.0 if tp.state == "down" else tp.lanes * tp.lane_gbps * 1e9 / 8) for la, tp in tps])
        out.family("fabricdoc_port_width_lanes", "gauge", "Lanes the port's link trained to (4 for 4X)",
                   [(la, float(tp.lanes)) for la, tp in tps])
        out.family("fabricdoc_port_supported_width_lanes", "gauge", "Lanes the port's link supports",
                   [(la, float(tp.max_lanes)) for la, tp in tps])
        out.family("fabricdoc_port_supported_rate_bytes_per_second", "gauge", "Signal rate the port's link supports",
                   [(la, tp.max_lanes * tp.max_lane_gbps * 1e9 / 8) for la, tp in tps])
    totals: dict[str, list[tuple[str, float]]] = {}
    rates: dict[str, list[tuple[str, float]]] = {}
    gauges: dict[str, list[tuple[str, float]]] = {}
    for pk in chosen:
        hp = hports.get(pk)
        if hp is None:
            continue
        la = lab[pk]
        for canon, value in hp.totals.items():
            totals.setdefault(canon, []).append((la, value))
        for canon, value in hp.rates.items():
            rates.setdefault(canon, []).append((la, value))
        for canon, value in hp.gauges.items():
            gauges.setdefault(canon, []).append((la, value))
    for canon in sorted(totals):
        m = counter_metric(canon)
        out.family(m.total, "counter", f"{m.help}: newest sample in the history",
                   [(la, v * m.scale) for la, v in totals[canon]])
    for canon in sorted(rates):
        m = counter_metric(canon)
        out.family(m.rate, "gauge", f"{m.help}: per second between the port's last two samples",
                   [(la, v * m.scale) for la, v in rates[canon]])
    for canon in sorted(gauges):
        out.family(f"fabricdoc_port_{canon}", "gauge", f"{canon}: newest sample in the history", gauges[canon])
    return len(lab)
