"""Observations from a directory of nccl-tests logs: each two-host log becomes pair results.

Each log names its own hosts (``# Rank  0 ... on HOST device  0``); they are
resolved against the fabric by id, label or GUID. Per log:

* a host the fabric does not know, or a truncated/garbled log: a
  :class:`ProbeRun` with status ``error`` naming the file and line; the other
  logs are still used;
* ``#wrong`` > 0 (or out-of-bounds values): ``PairResult(status="wrong")``;
  corruption is a different fault from a slow link;
* one host only (intra-node NVLink) or more than two hosts: ``skipped``, not a pair test.

Rank i of the first host is paired with rank i of the second (GPU d uses NIC
port d+1 when the host has that many ports in the fabric, else port 1), so an
8-GPU-per-host log yields one pair per rail, each carrying the log's bus
bandwidth divided by the rails. The expected bandwidth of a log is the median
over logs of the same collective and shape when there are at least three (the
fleet's own healthy figure: protocol efficiency differs per GPU/NIC), else the
path's bottleneck capacity. Logs are separate runs, so each gets its own round.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from pathlib import Path

from fabricdoc.errors import ParseError, TopologyError
from fabricdoc.model.paths import expected_gbps
from fabricdoc.model.records import Observations, PairResult, PortRef, ProbeRun
from fabricdoc.model.topology import Fabric
from fabricdoc.probes.bandwidth.nccl_tests import NcclRun, parse_nccl_tests

LOG_SUFFIXES = (".log", ".txt", ".out")


def nccl_test_name(run: NcclRun) -> str:
    """The PairResult.test of an nccl-tests log; every two-rank nccl-tests pattern is bidirectional."""
    return f"nccl-tests:{run.test}"


def _ports(fabric: Fabric, host: str, devices: list[int]) -> list[PortRef]:
    node = fabric.nodes[host]
    cabled = {p.port for p in fabric.host_ports(host)}
    out = []
    for d in devices:
        port = d + 1 if len(devices) > 1 and (d + 1) in cabled else min(cabled) if cabled else 1
        out.append(PortRef(node.id, port))
    return out


def observations_from_nccl_logs(fabric: Fabric, directory: str | Path) -> Observations:
    """Parse every log in ``directory`` (sorted by name) into pair results and probe records."""
    obs = Observations()
    root = Path(directory)
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix in LOG_SUFFIXES) if root.is_dir() else []
    if not root.is_dir():
        obs.probes.append(ProbeRun("nccl-logs", str(root), "error", 0.0, f"{root}: not a directory"))
        return obs
    pending: list[tuple[int, NcclRun, list[tuple[PortRef, PortRef]], float | None]] = []
    for round_no, path in enumerate(files):
        t0 = time.monotonic()
        target = str(path)
        try:
            run = parse_nccl_tests(path.read_text(errors="replace"), source=target)
        except ParseError as exc:
            obs.probes.append(ProbeRun("nccl-tests", target, "error", time.monotonic() - t0, str(exc)))
            continue
        by_host: dict[str, list[int]] = defaultdict(list)
        unknown = None
        text_lines = path.read_text(errors="replace").splitlines()
        for rank in run.ranks:
            try:
                node = fabric.resolve_node(rank.host)
            except TopologyError:
                line_no = next((i for i, ln in enumerate(text_lines, 1) if "Rank" in ln and f" {rank.host} " in f" {ln} "), 0)
                unknown = f"{target}:{line_no}: rank {rank.rank} ran on host {rank.host!r}, which the fabric does not know"
                break
            by_host[node].append(rank.device)
        if unknown:
            obs.probes.append(ProbeRun("nccl-tests", target, "error", time.monotonic() - t0, unknown))
            continue
        hosts = list(by_host)
        if len(hosts) != 2:
            why = "one host: the log measured NVLink/PCIe, not the fabric" if len(hosts) < 2 else f"{len(hosts)} hosts: not a pair test"
            obs.probes.append(ProbeRun("nccl-tests", target, "skipped", time.monotonic() - t0, why))
            continue
        a, b = hosts
        pa, pb = _ports(fabric, a, sorted(by_host[a])), _ports(fabric, b, sorted(by_host[b]))
        pairs = list(zip(pa, pb, strict=False))
        if not pairs or run.peak is None:
            obs.probes.append(ProbeRun("nccl-tests", target, "error", time.monotonic() - t0, f"{target}: no table rows"))
            continue
        bw = run.peak_busbw_gbps()
        per_rail = None if bw is None else bw / len(pairs)
        pending.append((round_no, run, pairs, per_rail))
        obs.probes.append(ProbeRun("nccl-tests", target, "ok", time.monotonic() - t0))

    classes: dict[tuple[str, int, int], list[float]] = defaultdict(list)
    for _, run, pairs, bw in pending:
        if bw is not None and not run.wrong:
            classes[(run.test, len(run.ranks), len(pairs))].append(bw)
    for round_no, run, pairs, bw in pending:
        healthy = classes.get((run.test, len(run.ranks), len(pairs)), [])
        for src, dst in pairs:
            if len(healthy) >= 3:
                expected = statistics.median(healthy)
            else:
                try:
                    expected = expected_gbps(fabric, src, dst, True)
                except TopologyError:
                    expected = None
            row = run.peak
            obs.pairs.append(
                PairResult(
                    src=src, dst=dst, status="wrong" if run.wrong else "ok", busbw_gbps=bw,
                    expected_gbps=expected,
                    algbw_gbps=None if run.peak_algbw_gbps() is None else run.peak_algbw_gbps() / len(pairs),  # type: ignore[operator]
                    size_bytes=row.size_bytes if row else None, wrong=run.wrong, round=round_no,
                    test=nccl_test_name(run), error=f"{run.wrong} wrong elements in {run.source}" if run.wrong else None,
                )  # fmt: skip
            )
    obs.extra["nccl_logs"] = len(files)
    return obs
