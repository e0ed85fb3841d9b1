"""NCCL Inspector output (the profiler plugin, NCCL 2.28+): each communicator's measured bus bandwidth.

The plugin writes one file per process (``<dump dir>/<hostname>-pid<pid>.log``) of JSON
objects, one per completed collective (``inspector_json.cc``; one compact object per line,
its README shows them pretty-printed, and both are read)::

    {"header": {"id": "0x7f8c496ae9f661", "rank": 2, "n_ranks": 8, "nnodes": 1},
     "metadata": {"inspector_output_format_version": "v4.0", "hostname": "...", "pid": 1639453, ...},
     "coll_perf": {"coll": "AllReduce", "coll_sn": 1407, "coll_msg_size_bytes": 17179869184,
                   "coll_exec_time_us": 61974, "coll_algobw_gbs": 277.21, "coll_busbw_gbs": 485.12}}

``p2p_perf`` records (2.30+) are counted, not judged. Bandwidths are GB/s in the file and Gb/s
here. What comes out is, per communicator and collective, the hosts of its ranks and the median
bus bandwidth of its largest messages (:class:`CommPerf`); the plugin has no error fields, so a
rank whose file is missing is only visible as fewer ranks than ``n_ranks``.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from fabricdoc.errors import ParseError
from fabricdoc.model.inputs import json_values


@dataclass
class CommPerf:
    """One communicator's collective as the Inspector measured it: ranks -> hosts, and bus bandwidth."""

    comm: str  # the communicator id (hash) as printed
    name: str  # comm_name (2.30+) or ""
    coll: str  # AllReduce, AllGather, ...
    n_ranks: int
    nnodes: int
    size_bytes: int  # the largest message size seen, the one the busbw is for
    busbw_gbps: float  # median over ranks and operations at that size, Gb/s
    ops: int  # operations behind that median
    hosts: dict[int, str] = field(default_factory=dict)  # rank -> hostname
    sources: list[str] = field(default_factory=list)

    @property
    def missing_ranks(self) -> list[int]:
        """Ranks ``n_ranks`` promises that no file reported."""
        return [r for r in range(self.n_ranks) if r not in self.hosts]


def parse_inspector(text: str, source: str) -> list[tuple[int, dict]]:
    """``(line, record)`` of one Inspector file, in order (compact lines or pretty-printed objects)."""
    out = []
    for no, _, rec in json_values(text, source, "not an NCCL Inspector record"):
        header = rec.get("header") if isinstance(rec, dict) else None
        if not isinstance(header, dict) or not ("coll_perf" in rec or "p2p_perf" in rec):
            raise ParseError(source, no, json.dumps(rec)[:120],
                             "not an NCCL Inspector record (needs 'header' and 'coll_perf' or 'p2p_perf')")
        out.append((no, rec))
    return out


def _num(v: object, what: str, source: str, no: int) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or v != v or v < 0:
        raise ParseError(source, no, repr(v)[:80], f"{what} is not a non-negative number")
    return float(v)


def comm_perfs(files: Iterable[tuple[str, str]]) -> list[CommPerf]:
    """Every communicator's collectives from Inspector files given as ``(source, text)``, read in order."""
    # (comm, coll) -> size -> busbw samples; and the facts of the communicator.
    samples: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    facts: dict[tuple[str, str], CommPerf] = {}
    for f, text in files:
        for no, rec in parse_inspector(text, f):
            perf = rec.get("coll_perf")
            if not isinstance(perf, dict):
                continue  # p2p_perf: sends and receives between two ranks, not a communicator's figure
            h, meta = rec["header"], rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
            comm, coll = str(h.get("id", ""))[:40], str(perf.get("coll", ""))[:40]
            rank, n = h.get("rank"), h.get("n_ranks")
            if not isinstance(rank, int) or not isinstance(n, int) or not 0 <= rank < n:
                raise ParseError(f, no, json.dumps(h)[:120], "header needs integer rank and n_ranks, rank < n_ranks")
            size = int(_num(perf.get("coll_msg_size_bytes"), "coll_msg_size_bytes", f, no))
            busbw = _num(perf.get("coll_busbw_gbs"), "coll_busbw_gbs", f, no) * 8.0  # GB/s -> Gb/s
            key = (comm, coll)
            cp = facts.get(key)
            if cp is None:
                nnodes = h.get("nnodes") if isinstance(h.get("nnodes"), int) else 0
                cp = facts[key] = CommPerf(comm, str(h.get("comm_name", ""))[:80], coll, n, nnodes, 0, 0.0, 0)
            host = meta.get("hostname")
            if isinstance(host, str):
                cp.hosts.setdefault(rank, host[:253])
            if f not in cp.sources:
                cp.sources.append(f)
            samples[key][size].append(busbw)
    out = []
    for key, cp in facts.items():
        sizes = samples[key]
        cp.size_bytes = max(sizes)
        cp.busbw_gbps = statistics.median(sizes[cp.size_bytes])
        cp.ops = len(sizes[cp.size_bytes])
        out.append(cp)
    return sorted(out, key=lambda c: (c.comm, c.coll))
