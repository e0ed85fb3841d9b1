"""nccl-tests output (all_reduce_perf, sendrecv_perf, ...): text logs, ``-J`` JSON files, and the runner's argv.

:func:`parse_nccl_tests_log` is pure and returns every *run* in a log: wrapper
and Slurm scripts append one test after another to the same file, so a log is
split at each run's header (``# nccl-tests version``, ``# Collective test
starting``, ``# nThread``). Each run keeps its own name, rank lines, column
header, table, ``# Out of bounds values`` and ``# Avg bus bandwidth``. A run
that cannot be used carries a :class:`ParseError` in :attr:`NcclRun.problem`
(truncated, failed with ``Test NCCL failure``, a row that does not fit its
header, a non-finite or negative figure) while the other runs of the log stay
usable. :func:`parse_nccl_tests` is the strict form: every run must be complete.

The line and table layouts of each nccl-tests version are recognised in
:mod:`.nccl_tests_layout`, the ranks checked in :mod:`.nccl_tests_ranks`, the
``-J`` JSON file read in :mod:`.nccl_tests_json`; the records are in
:mod:`.nccl_tests_records`, the binaries and their argv in :mod:`.nccl_tests_binaries`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricdoc.probes.bandwidth.nccl_tests_json import parse_nccl_tests_json
from fabricdoc.probes.bandwidth.nccl_tests_layout import (
    _AVG,
    _CONCLUDED,
    _FAILURE,
    _HEADER_START,
    _HUGE_NUMBER,
    _NCCL_DEBUG,
    _OOB,
    _PARAMS,
    _PERF,
    _RANK,
    _RANK_START,
    _START,
    _USING,
    _VERSION,
    MAX_LINE,
    _count,
    _figure,
    _inside_run,
    _Layout,
    _layout,
    _opens_run,
    _rank,
    _row,
    _strip_prefix,
    _test_name,
    _test_of,
)
from fabricdoc.probes.bandwidth.nccl_tests_ranks import _with_ranks_checked
from fabricdoc.probes.bandwidth.nccl_tests_records import NcclLog, NcclRank, NcclRow, NcclRun

from fabricdoc.errors import ParseError


# -- one run of a text log -----------------------------------------------------------
@dataclass
class _Builder:
    """A run being read; :meth:`finish` freezes it into an :class:`NcclRun`."""

    source: str
    line_no: int
    named: str | None = None  # a binary named on a wrapper/command line before the run
    test: str | None = None
    version: str | None = None
    nthread: int | None = None
    ngpus: int | None = None
    ranks: list[NcclRank] = field(default_factory=list)
    rows: list[NcclRow] = field(default_factory=list)
    layout: _Layout | None = None
    in_table: bool = False
    avg: float | None = None
    oob: int | None = None
    using: tuple[int, str] | None = None
    cut_rank: tuple[int, str] | None = None
    failure: tuple[int, str] | None = None
    problem: ParseError | None = None
    last: tuple[int, str] = (0, "")

    def has(self, *what: str) -> bool:
        """Whether the run already got past the header parts named (a repeat starts the next run)."""
        seen = {
            "version": self.version is not None,
            "start": self.test is not None,
            "params": self.nthread is not None,
            "ranks": bool(self.ranks) or self.using is not None,
            "table": self.layout is not None or self.avg is not None,
        }
        return any(seen[w] for w in what)

    def comment(self, line: str, no: int, raw: str) -> None:
        """One ``#`` line of this run (``line``: prefix removed, indentation kept for the column positions)."""
        if self.problem is not None:
            return
        try:
            self._comment(line, no, raw)
        except ParseError as exc:
            self.problem = exc
            self.in_table = False

    def _comment(self, line: str, no: int, raw: str) -> None:
        s = line.strip()
        if m := _VERSION.match(s):
            self.version = m["v"]
        elif m := _START.match(s):
            self.test = _test_of(m["name"])
        elif m := _CONCLUDED.match(s):
            self.test = self.test or _test_of(m["name"])
        elif m := _PARAMS.match(s):
            self.nthread, self.ngpus = int(m["nthread"]), int(m["ngpus"])
        elif _USING.match(s):
            self.using = (no, raw)
        elif m := _RANK.match(s):
            if self.layout is not None:
                raise ParseError(self.source, no, raw, "a '# Rank' line after the results table: two logs interleaved?")
            self.ranks.append(_rank(m, no))
        elif _RANK_START.match(s):
            self.cut_rank = self.cut_rank or (no, raw)
        elif m := _AVG.match(s):
            self.avg = _figure(m["v"], "Avg bus bandwidth", self.source, no, raw)
            self.in_table = False
        elif m := _OOB.match(s):
            self.oob = _count(m["v"], "Out of bounds values", self.source, no, raw)
            self.in_table = False
        elif s.lstrip("#").split()[:2] == ["size", "count"]:
            if self.layout is not None:
                raise ParseError(self.source, no, raw, "a second column header in one run")
            self.layout = _layout(line, self.source, no, raw)
            self.in_table = True

    def row(self, line: str, no: int, raw: str) -> None:
        if self.problem is not None or self.layout is None:
            return
        try:
            self.rows.append(_row(line, self.layout, self.source, no, raw))
        except ParseError as exc:
            self.problem = exc
            self.in_table = False

    def finish(self) -> NcclRun:
        test = self.test or self.named or _test_name(self.source)
        problem = self.problem or self._incomplete(test)
        failed = None
        if self.failure is not None:
            failed = ParseError(self.source, self.failure[0], self.failure[1], f"{test} run failed")
        run = NcclRun(
            source=self.source, test=test, line_no=self.line_no, version=self.version, ranks=tuple(self.ranks),
            rows=tuple(self.rows), avg_busbw_gbs=self.avg, out_of_bounds=self.oob, nthread=self.nthread,
            ngpus=self.ngpus, wrong_column=self.layout.wrong_column if self.layout else True, problem=problem,
            failed=failed,
        )  # fmt: skip
        return _with_ranks_checked(run, self.using or (self.line_no, ""), self.cut_rank)

    def _incomplete(self, test: str) -> ParseError | None:
        if self.failure is not None:
            no, raw = self.failure
            return ParseError(self.source, no, raw, f"{test} run failed")
        if self.layout is None:
            no, raw = self.last
            if self.avg is not None:
                return ParseError(self.source, no, raw, f"{test} run has no results table: the log's start is missing")
            return ParseError(self.source, no, raw, f"{test} run ends before its results table (truncated?)")
        if self.avg is None:
            no, raw = self.last
            return ParseError(self.source, no, raw, f"{test} run ends before '# Avg bus bandwidth' (truncated?)")
        if not self.rows:
            no, raw = self.last
            return ParseError(self.source, no, raw, f"{test} run has no table rows")
        return None


def _starts_run(cur: _Builder | None, s: str) -> bool:
    """Whether header line ``s`` opens the next appended run rather than continuing ``cur``."""
    if cur is None:
        return True
    if _VERSION.match(s):
        return cur.has("version", "start", "params", "ranks", "table")
    if _START.match(s):
        return cur.has("start", "params", "ranks", "table")
    return cur.has("params", "ranks", "table")


def parse_nccl_tests_log(text: str, source: str = "nccl-tests") -> NcclLog:
    """Every run of one nccl-tests output (text, or the ``-J`` JSON file).

    Raises :class:`ParseError` only when nothing in ``text`` is nccl-tests
    output; a run that cannot be used carries its own error in ``problem``.
    """
    if text.lstrip().startswith("{"):
        return parse_nccl_tests_json(text, source)
    runs: list[NcclRun] = []
    cur: _Builder | None = None
    named: str | None = None  # a binary named on a command/wrapper line, for the next run
    first: tuple[int, str] | None = None
    pending: ParseError | None = None  # a garbled line before any run opened: the next run's error
    for no, raw in enumerate(text.splitlines(), start=1):
        if len(raw) > MAX_LINE or _HUGE_NUMBER.search(raw):
            why = (f"a line longer than {MAX_LINE:,} characters" if len(raw) > MAX_LINE
                   else "a number longer than any field nccl-tests prints (21 digits or more)")
            bad = ParseError(source, no, raw[:200], why)
            # It may be the line that opens the next run (its header): that run carries the error.
            opens = bool(_HEADER_START.match(_strip_prefix(raw[:200]).strip()))
            if cur is not None and cur.problem is None and not opens:
                cur.problem, cur.in_table = bad, False
            else:
                pending = pending or bad
            first = first or (no, raw[:200])
            continue
        line = _strip_prefix(raw)
        s = line.strip()
        if not s:
            continue
        first = first or (no, raw)
        if s.startswith("#"):
            if (_opens_run(s) and _starts_run(cur, s)) or (cur is None and _inside_run(s)):
                if cur is not None:
                    runs.append(cur.finish())
                cur, named = _Builder(source, no, named=named), None
                if pending is not None:
                    cur.problem, pending = pending, None
            if cur is not None:
                cur.comment(line, no, raw)
                cur.last = (no, raw)
        elif _FAILURE.search(s):
            if cur is not None:
                cur.failure = cur.failure or (no, raw)
                cur.last = (no, raw)
        elif cur is not None and cur.in_table and s[0].isdigit() and not _NCCL_DEBUG.match(s):
            cur.row(line, no, raw)
            cur.last = (no, raw)
        elif m := _PERF.search(s):
            named = m.group(1)
    if cur is not None:
        runs.append(cur.finish())
    if pending is not None and not runs:
        raise pending
    if not runs:
        if first is None:
            raise ParseError(source, 0, "", "empty: no nccl-tests output")
        raise ParseError(source, first[0], first[1], "no nccl-tests header, rank lines or results table: "
                                                     "not an nccl-tests log")  # fmt: skip
    return NcclLog(source, tuple(runs))


def parse_nccl_tests(text: str, source: str = "nccl-tests") -> list[NcclRun]:
    """Every run of one nccl-tests output; raise the first run's :class:`ParseError` if any is unusable."""
    runs = list(parse_nccl_tests_log(text, source).runs)
    for run in runs:
        if run.problem is not None:
            raise run.problem
    return runs
