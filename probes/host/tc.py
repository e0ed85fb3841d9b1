"""Queueing-discipline stats (drops, overlimits, backlog, ECN marks) from rtnetlink via pyroute2.

A congested egress port shows as a root qdisc that drops and runs over its
rate limit (tbf, htb) with packets waiting in its backlog; an AQM qdisc with
``ecn`` (red, fq_codel, where the kernel has them) also counts ``marked``.
``collect_qdiscs`` returns plain dicts; ``parse_qdiscs`` makes one PortCounters
per interface (source ``tc``) named ``qdisc_`` + the kernel's gnet_stats field
(``qdisc_drops``, ``qdisc_overlimits``, ``qdisc_requeues``, ``qdisc_qlen``,
``qdisc_bytes``, ``qdisc_packets``; ``qdisc_backlog_bytes`` for ``backlog``, a
gauge; ``qdisc_marked`` for the AQM's ECN marks).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from fabricdoc.errors import ProbeError
from fabricdoc.model.records import PortCounters

TC_H_ROOT = 0xFFFFFFFF
TC_H_INGRESS = 0xFFFFFFF1
QUEUE_KEYS = ("drops", "overlimits", "requeues", "backlog", "qlen")
BASIC_KEYS = ("bytes", "packets")
# xstats names meaning "ECN-marked instead of dropped": red/choke/sfb "marked", fq_codel/codel "ecn_mark".
MARK_KEYS = ("marked", "ecn_mark")
RECORD_NAMES = {k: f"qdisc_{k}" for k in (*QUEUE_KEYS, *BASIC_KEYS)} | {"backlog": "qdisc_backlog_bytes"}


def _handle(h: int) -> str:
    if h == TC_H_ROOT:
        return "root"
    return f"{h >> 16:x}:{h & 0xFFFF:x}"


def qdisc_facts(msg: Any) -> dict[str, Any]:
    """One RTM_NEWQDISC message as a plain dict (the pyroute2 boundary)."""
    facts: dict[str, Any] = {
        "index": msg.get("index"),
        "kind": msg.get("kind"),
        "handle": _handle(msg["handle"]),
        "parent": _handle(msg["parent"]),
        "xstats": {},
    }
    stats2 = msg.get("stats2")
    attrs = stats2["attrs"] if stats2 is not None else []
    for name, value in attrs:
        if name == "TCA_STATS_BASIC":
            for k in BASIC_KEYS:
                facts[k] = value.get(k)
        elif name == "TCA_STATS_QUEUE":
            for k in QUEUE_KEYS:
                facts[k] = value.get(k)
        elif name == "TCA_STATS_APP" and isinstance(value, dict):
            facts["xstats"] = {k: v for k, v in value.items() if isinstance(v, int)}
    if "drops" not in facts:  # old kernels: only TCA_STATS
        old = msg.get("stats") or {}
        facts.update({"bytes": old.get("bytes"), "packets": old.get("packets"),
                      "drops": old.get("drop"), "overlimits": old.get("overlimits"),
                      "backlog": old.get("backlog"), "qlen": old.get("qlen"), "requeues": None})
    return facts


def collect_qdiscs(netns: str | None = None) -> list[dict[str, Any]]:
    """Facts for every qdisc in ``netns``, each with the interface's ``ifname``."""
    from fabricdoc.probes.host.netlink import _open

    ipr = _open(netns)
    try:
        names = {m["index"]: m.get("ifname") for m in ipr.get_links()}
        out = []
        for msg in ipr.get_qdiscs():
            facts = qdisc_facts(msg)
            facts["ifname"] = names.get(facts["index"])
            out.append(facts)
        return out
    except OSError as exc:
        raise ProbeError("tc", f"dumping qdiscs in {netns or 'this namespace'}: {exc}") from exc
    finally:
        ipr.close()


def parse_qdiscs(
    facts: Iterable[dict[str, Any]],
    node: str,
    port_of: dict[str, int] | None = None,
    timestamp: float | None = None,
) -> list[PortCounters]:
    """One sample per interface: the root qdisc's counters, plus ``qdisc_marked`` summed over
    every qdisc of the interface that reports ECN marks (``None`` when none does).

    ``port_of`` maps ifname to port number (interfaces it lacks are skipped);
    without it the ifindex is the port. Ingress/clsact qdiscs are not egress queues
    and are ignored.
    """
    ts = time.time() if timestamp is None else timestamp
    by_if: dict[int, list[dict[str, Any]]] = {}
    for f in facts:
        if f.get("parent") == _handle(TC_H_INGRESS) or f.get("kind") in ("ingress", "clsact"):
            continue
        by_if.setdefault(f["index"], []).append(f)
    out: list[PortCounters] = []
    for index, qdiscs in sorted(by_if.items()):
        ifname = qdiscs[0].get("ifname")
        port = index if port_of is None else port_of.get(ifname or "")
        if port is None:
            continue
        root = next((q for q in qdiscs if q.get("parent") == "root"), None)
        if root is None:
            continue
        values: dict[str, int | None] = {
            RECORD_NAMES[k]: root.get(k) for k in (*BASIC_KEYS, *QUEUE_KEYS)
        }
        marks = [q["xstats"][k] for q in qdiscs for k in MARK_KEYS if k in q.get("xstats", {})]
        values["qdisc_marked"] = sum(marks) if marks else None
        out.append(PortCounters(node=node, port=port, timestamp=ts, values=values,
                                source="tc", ifname=ifname))
    return out


def qdisc_kinds(facts: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """ifname -> qdisc kinds installed on it, root first (for reports)."""
    out: dict[str, list[str]] = {}
    for f in sorted(facts, key=lambda q: q.get("parent") != "root"):
        out.setdefault(f.get("ifname") or str(f.get("index")), []).append(f.get("kind") or "?")
    return out
