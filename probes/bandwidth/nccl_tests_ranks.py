"""What the ranks of an nccl-tests run are, checked against what the log states.

Ranks are taken from what the log states, never from how many rank lines were
printed: the rank numbers of the device lines (every rank 0..N-1 exactly once,
in process blocks of nThread x nGpus), or the JSON's nthreads x ngpus x
processes; for all_reduce the printed figures must agree (busbw = algbw x
2(n-1)/n). A run whose rank list is trimmed, cut or contradicted carries that in
:attr:`NcclRun.ranks_problem` and names no hosts to pair.
"""

from __future__ import annotations

from dataclasses import replace

from fabricdoc.probes.bandwidth.nccl_tests_records import NcclRank, NcclRun

from fabricdoc.errors import ParseError


def _with_ranks_checked(run: NcclRun, using: tuple[int, str], cut: tuple[int, str] | None) -> NcclRun:
    return replace(run, ranks_problem=_ranks_problem(run, using, cut))


def _ranks_problem(run: NcclRun, using: tuple[int, str], cut: tuple[int, str] | None) -> ParseError | None:
    """Why this run's ranks and hosts cannot be told from the log, or None."""
    src = run.source
    if cut is not None:
        return ParseError(src, cut[0], cut[1], "a rank line is cut short: nccl-tests truncates a process's device "
                                               "list past 2048 characters, so ranks are missing")  # fmt: skip
    if not run.ranks:
        what = "config.devices is empty" if run.processes is not None else "no '# Rank' lines"
        return ParseError(src, using[0], using[1], f"{run.test} run has {what}: its ranks and hosts are not in the log")
    by_rank: dict[int, NcclRank] = {}
    for r in run.ranks:
        if r.rank in by_rank:
            return ParseError(src, r.line_no, "", f"rank {r.rank} is listed twice")
        by_rank[r.rank] = r
        if not r.host:
            return ParseError(src, r.line_no, "", f"rank {r.rank} names no host")
    n = run.nranks or 0
    if run.processes is None and len(by_rank) != n:
        return _gap(run, by_rank, n)
    if run.processes is None and (bad := _process_blocks(run)) is not None:
        return bad
    return _bus_factor_problem(run, n)


def _gap(run: NcclRun, by_rank: dict[int, NcclRank], n: int) -> ParseError:
    """The first run of missing rank numbers, named at the rank line that follows it."""
    first = next(r for r in range(n) if r not in by_rank)
    after = min(r for r in by_rank if r > first)
    return ParseError(run.source, by_rank[after].line_no, "", f"the rank list names {len(by_rank)} of {n} ranks "
                      f"(ranks {first}..{after - 1} are missing): it was trimmed or cut, so its hosts are not known")


def _process_blocks(run: NcclRun) -> ParseError | None:
    """Each process prints nThread x nGpus consecutive ranks; a block of another size means lines were lost."""
    if run.nthread is None or run.ngpus is None:
        return None
    per = run.nthread * run.ngpus
    ranks = sorted(run.ranks, key=lambda r: r.rank)
    start = 0
    for i in range(1, len(ranks) + 1):
        if i == len(ranks) or (ranks[i].host, ranks[i].pid) != (ranks[start].host, ranks[start].pid):
            if i - start != per and per > 0:
                r = ranks[start]
                return ParseError(run.source, r.line_no, "", f"process {r.pid} on {r.host} lists {i - start} ranks, "
                                                             f"nThread x nGpus is {per}: rank lines are missing")  # fmt: skip
            start = i
    return None


def _decimals_half_unit(value: float) -> float:
    """Half the last printed digit of a bandwidth (``getFloatStr``: 2 decimals below 1000, then 1, then 0)."""
    return 0.005 if value < 999.995 else 0.05 if value < 9999.95 else 0.5


def _bus_factor_problem(run: NcclRun, n: int) -> ParseError | None:
    """all_reduce prints busbw = algbw x 2(n-1)/n: a rank list that disagrees was shortened."""
    row = run.peak
    if run.test != "all_reduce" or row is None or n < 2 or row.out_of_place.algbw_gbs <= 0:
        return None
    if len({r.group for r in run.ranks}) > 1:  # NCCL_TESTS_SPLIT: the factor is the group's, not the log's
        return None
    alg, bus = row.out_of_place.algbw_gbs, row.out_of_place.busbw_gbs
    factor = 2 * (n - 1) / n
    slack = max(_decimals_half_unit(bus) + factor * _decimals_half_unit(alg), 1e-5 * (1 + bus))
    if abs(bus - alg * factor) <= slack:
        return None
    ratio = bus / alg
    implied = f" (the figures imply about {2 / (2 - ratio):.0f})" if 1 <= ratio < 2 else ""
    return ParseError(run.source, row.line_no, "", f"busbw {bus:g} is not algbw {alg:g} x 2(n-1)/n for the {n} ranks "
                                                   f"listed{implied}: the rank list does not match the figures")  # fmt: skip
