"""Observations from a directory of nccl-tests logs: every two-host run becomes per-rail pair results.

Every file named ``*.log``, ``*.txt``, ``*.out``, ``*.dat`` or ``*.json``
(optionally with a numeric suffix: ``output.dat.5``) is read through
:func:`fabricdoc.model.inputs.read_text` and split into its runs (wrapper and
Slurm scripts append several tests to one file). The directory itself must
exist and hold logs, else :class:`ConfigError`. Per run:

* a run that cannot be read (0-byte file, invalid UTF-8, truncated, ``Test NCCL
  failure``, a row that does not fit its header, a non-finite figure), whose
  ranks cannot be told (a trimmed or cut rank list, no rank lines), or whose
  host does not map onto the fabric: a :class:`ProbeRun` with status
  ``error`` and one line naming the file and line; the other runs are still
  used, and the report's coverage counts the failed one as not seen;
* one host only (NVLink/PCIe), more than two hosts, several NCCL_TESTS_SPLIT
  groups, or a non-ring test with several GPUs per host: ``skipped``, with why;
* a log that does not name its test (no binary name, no ``Collective test
  starting`` line, no test in the file name) with several GPUs per host: the
  test decides whether the figure splits per rail, so it is read as all_reduce
  only when its peak row's busbw/algbw is all_reduce's 2(n-1)/n for the n ranks
  the log states (within the printed rounding; no other nccl-tests test has
  that factor for n > 2), else ``skipped``: "does not name its test". With one
  GPU per host (2 ranks) every test's busbw is that one rail's figure, and
  2(n-1)/n = 1 is also sendrecv's, broadcast's and reduce's factor, so the run
  is used and keeps the name ``unknown``;
* ``#wrong`` > 0 or out-of-bounds values: ``PairResult(status="wrong")``;
  corruption is a different fault from a slow link. It counts also when the run
  then printed nccl-tests' own ``Test failure`` lines or was cut after the rows
  that show it (its figures are then not used);
* a run that stopped on a ``Test failure`` line (an init or network failure)
  with its ranks stated: one ``PairResult(status="error")`` per pair, naming
  the line: a test that could not run, never a hardware fault.

Ranks come from what the log states (see :mod:`fabricdoc.probes.bandwidth.nccl_tests`).
The k-th rank of the first host is paired with the k-th rank of the second
(rank order). A rank's GPU is mapped onto its host's rail by a stated rule:
the host's rails are, when the fabric has one node per HCA (``dgx01 mlx5_0``
... with ``attrs["host"] == "dgx01"``, resolved by
:func:`fabricdoc.fabric.identity.resolve_hosts`), the cabled ports of those
HCA nodes in rail order (identity's ``attrs["rail"]``: device-number order,
``mlx5_10`` after ``mlx5_9``, or a host map's rails; on a fabric identity did
not name, the device index in the names), else the cabled ports of the host's
one node in port order. GPU ``d`` (the device ordinal the log prints) uses the
port on rail ``d``: the HCA whose ``attrs["rail"]`` is ``d``, never the host's
``d``-th HCA, so a host missing one HCA (``HCA-1, HCA-2, HCA-6`` on rails 0, 1, 3)
still maps GPU 3 to HCA-6, and a GPU on a rail the host has no HCA on (GPU 2
there) is refused (``error``, naming file and line); on the two other orders a
port's rail is its place. Every GPU uses the one rail of a single-rail host.

A ring collective (all_reduce, all_gather, reduce_scatter) with G GPUs per
host on R rails moves its bus bandwidth over the R rails evenly, so each rail
pair carries the run's peak busbw / R. Other tests are per-rail pairs only with
one GPU per host: with more, their traffic crosses rails. With NCCL's tree
algorithm a 2-host all_reduce's busbw can exceed R x line rate (the a3-mega
log: 338.8 Gb/s per 200 Gb/s rail), so a ratio above 1 is not a fault; one
slow rail slows the whole collective, so every rail of that run reads slow.

The expected bandwidth of every pair is the path's line rate on today's routes
(:func:`fabricdoc.model.paths.expected_gbps`, both directions for nccl-tests): the
upper bound. Whether a run is slow is judged against what the healthy runs of the
same test, size and path class reach (:mod:`fabricdoc.model.expectation`): every
printed size is kept (``PairResult.sizes``), so a multi-size sweep is judged size by
size over its bandwidth-bound sizes. Runs are separate measurements, so each gets
its own round.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from pathlib import Path

from fabricdoc.errors import ConfigError, FabricdocError, ParseError, TopologyError
from fabricdoc.fabric.identity import resolve_hosts
from fabricdoc.model.inputs import read_text
from fabricdoc.model.paths import expected_gbps
from fabricdoc.model.records import Observations, PairResult, PortRef, ProbeRun
from fabricdoc.model.topology import Fabric
from fabricdoc.probes.bandwidth.nccl_tests import parse_nccl_tests_log
from fabricdoc.probes.bandwidth.nccl_tests_records import NcclRank, NcclRun

LOG_NAME = re.compile(r"\.(?:log|txt|out|dat|json)(?:\.\d+)?$")
RING_TESTS = frozenset({"all_reduce", "all_gather", "reduce_scatter"})
UNNAMED_TEST = "unknown"  # the parser's name for a run whose log and file name do not name its test
_INDEX = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*?[_-](\d+)$")  # mlx5_10, HCA-7, mlx5_bond_0; not ConnectX7


def nccl_test_name(run: NcclRun) -> str:
    """The PairResult.test of an nccl-tests run; every two-host nccl-tests pattern is bidirectional."""
    return f"nccl-tests:{run.test}"


class _Refused(Exception):
    """Why one run gives no pairs: ``status`` ``error`` (not seen) or ``skipped`` (not a pair test)."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Rails:
    """A host's NIC ports in rail order, the rail of each (``rails[i]`` is that of ``ports[i]``), and the
    rule that ordered them."""

    host: str
    ports: tuple[PortRef, ...]
    rule: str
    rails: tuple[int, ...]


@dataclass(frozen=True)
class RunPairs:
    """The rail pairs of one two-host run: (port on the first host, port on the second)."""

    run: NcclRun
    pairs: tuple[tuple[PortRef, PortRef], ...]


def log_files(directory: str | Path) -> list[Path]:
    """The log files of ``directory``, sorted by name; a missing, non-directory or empty one is a ConfigError."""
    root = Path(directory)
    if not root.exists():
        raise ConfigError(f"{root}: no such directory (--nccl-logs)")
    if not root.is_dir():
        raise ConfigError(f"{root}: not a directory (--nccl-logs takes a directory of nccl-tests logs)")
    files = sorted(p for p in root.iterdir() if p.is_file() and LOG_NAME.search(p.name))
    if not files:
        raise ConfigError(f"{root}: no nccl-tests logs in it (*.log, *.txt, *.out, *.dat, *.json)")
    return files


def hca_index(label: str) -> int | None:
    """The device index of an HCA node's name (``dgx01 mlx5_10`` -> 10, ``h4-1-gpu HCA-7`` -> 7), or None."""
    words = label.split()
    m = _INDEX.search(words[1]) if len(words) > 1 else None
    return int(m.group(1)) if m else None


def rails_of(fabric: Fabric, host: str) -> Rails:
    """The rails of ``host`` (see the module docstring); TopologyError says why there are none.

    The host is resolved by :func:`fabricdoc.fabric.identity.resolve_hosts`; its HCA nodes
    are in the rail order identity gave them (``attrs["rail"]``: device order, or a host
    map's), else, on a fabric identity did not name, in the device-index order of their names.
    """
    found = resolve_hosts(fabric, [host])
    if host not in found.hosts:
        raise TopologyError(f"host {host!r} does not resolve: {found.unresolved.get(host, 'not in the fabric')}")
    nodes = found.hosts[host]
    if len(nodes) == 1:
        ordered, rule = nodes, f"ports of {fabric.label(nodes[0])} in port order"
    elif all(isinstance(fabric.nodes[n].attrs.get("rail"), int) for n in nodes):
        ordered = sorted(nodes, key=lambda n: fabric.nodes[n].attrs["rail"])
        rule = "HCAs in rail order: " + ", ".join(fabric.label(n) for n in ordered)
        on_rail = [(p, int(fabric.nodes[n].attrs["rail"])) for n in ordered for p in fabric.host_ports(n)]
        if not on_rail:
            raise TopologyError(f"host {host!r} has no cabled port in the fabric")
        return Rails(host, tuple(p for p, _ in on_rail), rule, tuple(r for _, r in on_rail))
    else:
        indexed = [(hca_index(fabric.label(n)), n) for n in nodes]
        if any(i is None for i, _ in indexed) or len({i for i, _ in indexed}) != len(indexed):
            labels = ", ".join(repr(fabric.label(n)) for n in nodes)
            raise TopologyError(f"host {host!r} has {len(nodes)} HCAs with no rail and no distinct device "
                                f"index in their names ({labels}): its rail order cannot be told")
        ordered = [n for _, n in sorted(indexed, key=lambda t: t[0] or 0)]
        rule = "HCAs by device index: " + ", ".join(fabric.label(n) for n in ordered)
    ports = tuple(p for n in ordered for p in fabric.host_ports(n))
    if not ports:
        raise TopologyError(f"host {host!r} has no cabled port in the fabric")
    return Rails(host, ports, rule, tuple(range(len(ports))))


def _rail(rails: Rails, rank: NcclRank, source: str) -> PortRef:
    """The port GPU ``rank.device`` uses: the one on rail ``rank.device`` (see the module docstring)."""
    if len(rails.ports) == 1:
        return rails.ports[0]
    on_rail = [p for p, r in zip(rails.ports, rails.rails, strict=True) if r == rank.device]
    where = f"{source}:{rank.line_no}: rank {rank.rank} on host {rank.host!r} uses GPU {rank.device}"
    if not on_rail:
        have = ", ".join(str(r) for r in rails.rails)
        raise _Refused("error", f"{where}, but the host has {len(rails.ports)} rails and none is rail {rank.device} "
                                f"(its rails: {have}; {rails.rule})")  # fmt: skip
    if len(on_rail) > 1:
        raise _Refused("error", f"{where}, but the host has {len(on_rail)} cabled ports on rail {rank.device} "
                                f"({rails.rule}): which one it used cannot be told")  # fmt: skip
    return on_rail[0]


def _distinct_gpus(rails: Rails, ranks: list[NcclRank], source: str) -> None:
    """GPU ordinals pick rails only when they are the host's: ranks repeating one (each process
    sees its own CUDA_VISIBLE_DEVICES as device 0) are refused on a multi-rail host, not guessed."""
    seen: dict[int, NcclRank] = {}
    for rank in ranks:
        other = seen.setdefault(rank.device, rank)
        if other is not rank and len(rails.ports) > 1:
            raise _Refused("error", f"{source}:{rank.line_no}: ranks {other.rank} and {rank.rank} on host "
                                    f"{rank.host!r} both report GPU {rank.device} (CUDA_VISIBLE_DEVICES per "
                                    "process?): which rail each used cannot be told")  # fmt: skip


def _half_unit(value: float) -> float:
    """Half the last digit nccl-tests prints of a bandwidth (2 decimals below 1000, then 1, then 0)."""
    return 0.005 if value < 999.995 else 0.05 if value < 9999.95 else 0.5


def _unnamed_test(run: NcclRun) -> str:
    """The test of a run whose log does not name it: ``all_reduce`` when the peak row's busbw/algbw
    is 2(n-1)/n for the stated n ranks (within rounding), else ``_Refused`` ("does not name its test")."""
    where = (f"{run.source}:{run.line_no}: the run does not name its test (no binary name, no 'Collective test "
             "starting' line, no test in the file name)")
    n, row = run.nranks or 0, run.peak
    if row is None or n < 3 or row.out_of_place.algbw_gbs <= 0:
        raise _Refused("skipped", f"{where} and its figures cannot tell it: which rails its traffic used is unknown")
    alg, bus = row.out_of_place.algbw_gbs, row.out_of_place.busbw_gbs
    factor = 2 * (n - 1) / n
    if abs(bus - alg * factor) <= _half_unit(bus) + factor * _half_unit(alg) + 1e-9 * bus:
        return "all_reduce"
    raise _Refused("skipped", f"{where}, and at line {row.line_no} busbw/algbw = {bus / alg:.3f} is not "
                              f"all_reduce's 2(n-1)/n = {factor:.3f} for its {n} ranks: which rails its traffic "
                              "used cannot be told; keep the command line in the log or name the file after the test")  # fmt: skip


def _by_host(run: NcclRun) -> dict[str, list[NcclRank]]:
    out: dict[str, list[NcclRank]] = {}
    for rank in sorted(run.ranks, key=lambda r: r.rank):
        out.setdefault(rank.host, []).append(rank)
    return out


def _run_pairs(fabric: Fabric, run: NcclRun) -> RunPairs:
    """The rail pairs of one run, or _Refused saying why it gives none."""
    if run.ranks_problem is not None:
        raise _Refused("error", str(run.problem or run.ranks_problem))
    if run.problem is not None and run.failed is None and not run.corrupted:
        raise _Refused("error", str(run.problem))
    # A run that stopped on nccl-tests' own failure line is named per pair (it could not run, or the
    # corruption it printed first is evidence); a cut or garbled run is used only for the corruption
    # its rows already show.
    by_host = _by_host(run)
    where = f"{run.source}:{run.line_no}: {run.test} run"
    if len(by_host) == 1:
        raise _Refused("skipped", f"{where} ran on one host: it measured NVLink/PCIe, not the fabric")
    if len(by_host) > 2:
        raise _Refused("skipped", f"{where} spans {len(by_host)} hosts: a multi-host collective, not a pair test")
    if len({r.group for r in run.ranks}) > 1:
        raise _Refused("skipped", f"{where} is split into NCCL_TESTS_SPLIT groups: not one pair test")
    (a, ra), (b, rb) = by_host.items()
    if len(ra) != len(rb):
        raise _Refused("skipped", f"{where} has {len(ra)} GPUs on {a} and {len(rb)} on {b}: not a rail-matched pair test")
    if len(ra) > 1 and run.test == UNNAMED_TEST:
        run = replace(run, test=_unnamed_test(run))
        where = f"{run.source}:{run.line_no}: {run.test} run (inferred from busbw/algbw)"
    if len(ra) > 1 and run.test not in RING_TESTS and not (run.failed and not run.corrupted):
        why = "its corruption cannot be placed on one rail" if run.corrupted else "its figure says nothing per rail"
        raise _Refused("skipped", f"{where} has {len(ra)} GPUs per host: {run.test} traffic crosses rails, so {why}")
    rails: dict[str, Rails] = {}
    for host, ranks in by_host.items():
        try:
            rails[host] = rails_of(fabric, host)
        except TopologyError as exc:
            raise _Refused("error", f"{run.source}:{ranks[0].line_no}: rank {ranks[0].rank}: {exc}") from None
    for host, ranks in by_host.items():
        _distinct_gpus(rails[host], ranks, run.source)
    pairs = tuple(dict.fromkeys(
        (_rail(rails[a], x, run.source), _rail(rails[b], y, run.source)) for x, y in zip(ra, rb, strict=True)
    ))  # fmt: skip
    used_a, used_b = len({p for p, _ in pairs}), len({q for _, q in pairs})
    if used_a != len(pairs) or used_b != len(pairs):
        raise _Refused("error", f"{where} uses {used_a} rails on {a} and {used_b} on {b}: "
                                "its figure cannot be split per rail")  # fmt: skip
    return RunPairs(run, pairs)


def _pair_results(fabric: Fabric, rp: RunPairs, round_no: int) -> list[PairResult]:
    """One PairResult per rail: the run's peak busbw split evenly over its rails, expected at line rate."""
    run, n = rp.run, len(rp.pairs)
    row = run.peak
    bw, alg = run.peak_busbw_gbps(), run.peak_algbw_gbps()
    error, status = None, "ok"
    if run.corrupted:
        status = "wrong"
        what = f"{run.wrong} wrong elements" if run.wrong_column else f"{run.out_of_bounds} values out of bounds"
        bad = [r.line_no for r in run.rows if (r.out_of_place.wrong or 0) or (r.in_place and r.in_place.wrong)]
        error = f"{run.source}:{bad[0] if bad else run.line_no}: {run.test} run: data check failed ({what})"
    elif run.failed is not None:
        status, bw, alg = "error", None, None  # it could not run: no figure, and never a hardware fault
        error = f"{run.failed.source}:{run.failed.line_no}: {run.test} run failed, so it could not test this pair: {run.failed.line.strip()}"
    if run.problem is not None and status == "wrong":
        bw = alg = None  # the rows stop early: the corruption counts, the figures do not
    sizes = _sizes(run, n) if bw is not None else ()
    out = []
    for src, dst in rp.pairs:
        try:
            expected = expected_gbps(fabric, src, dst, True)
        except TopologyError as exc:
            raise _Refused("error", f"{run.source}:{run.line_no}: no route {src} -> {dst} in the fabric ({exc})") from None
        out.append(PairResult(
            src=src, dst=dst, status=status,
            busbw_gbps=None if bw is None else bw / n, expected_gbps=expected,
            algbw_gbps=None if alg is None else alg / n, size_bytes=row.size_bytes if row else None,
            wrong=run.wrong, round=round_no, test=nccl_test_name(run), error=error, sizes=sizes,
        ))  # fmt: skip
    return out


def _sizes(run: NcclRun, rails: int) -> tuple[tuple[int, float], ...]:
    """Every printed size's busbw per rail (Gb/s; the mean of out-of-place and in-place where both ran):
    each is judged against what healthy runs reach at that size, so a multi-size sweep is its own repetition."""
    out: dict[int, float] = {}
    for row in run.rows:
        figures = [r.busbw_gbs for r in (row.out_of_place, row.in_place) if r is not None and r.busbw_gbs > 0]
        if row.size_bytes > 0 and figures:
            out[row.size_bytes] = sum(figures) / len(figures) * 8.0 / rails
    return tuple(sorted(out.items())) if len(out) > 1 else ()


def _read_log(path: Path) -> list[NcclRun]:
    """The runs of one file; a file that cannot be read at all raises FabricdocError naming it."""
    text = read_text(path, "nccl-tests log")
    if not text:
        raise ParseError(str(path), 0, "", "empty file (0 bytes): no nccl-tests output")
    return list(parse_nccl_tests_log(text, str(path)).runs)


def observations_from_nccl_logs(fabric: Fabric, directory: str | Path) -> Observations:
    """Parse every log in ``directory`` (sorted by name) into per-rail pair results and probe records."""
    obs = Observations()
    files = log_files(directory)
    round_no = 0
    for path in files:
        t0 = time.monotonic()
        try:
            runs = _read_log(path)
        except FabricdocError as exc:
            obs.probes.append(ProbeRun("nccl-tests", str(path), "error", time.monotonic() - t0, str(exc)))
            continue
        for run in runs:
            try:
                obs.pairs.extend(_pair_results(fabric, _run_pairs(fabric, run), round_no))
                # A run that stopped early still names its pairs (could not run, or corrupted): said once here.
                status, why = ("error", str(run.problem)) if run.problem is not None else ("ok", None)
                obs.probes.append(ProbeRun("nccl-tests", str(path), status, time.monotonic() - t0, why))
                round_no += 1
            except _Refused as exc:
                obs.probes.append(ProbeRun("nccl-tests", str(path), exc.status, time.monotonic() - t0, str(exc)))
    if not obs.pairs and not any(p.status == "error" for p in obs.probes):
        obs.probes.append(ProbeRun("nccl-logs", str(directory), "error", 0.0, f"{directory}: none of its {len(files)} "
                                   "logs holds a two-host test, so it says nothing about the fabric's links"))  # fmt: skip
    obs.extra["nccl_logs"] = len(files)
    return obs
