"""The records of an nccl-tests output: ranks, table rows and their halves, runs, and the log.

Bandwidths stay in nccl-tests units here (GB/s, 1e9 bytes per second);
:meth:`NcclRun.peak_busbw_gbps` converts to Gb/s for fabricdoc records.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricdoc.errors import ParseError


@dataclass(frozen=True)
class NcclRank:
    """One rank from the header: which host and GPU it ran on (``line_no`` of its device line)."""

    rank: int
    host: str
    device: int
    bus_id: str
    device_name: str
    pid: int
    group: int | None = None
    line_no: int = 0


@dataclass(frozen=True)
class NcclResult:
    """One half (out-of-place or in-place) of a table row. ``wrong`` is None for ``N/A``."""

    time_us: float
    algbw_gbs: float
    busbw_gbs: float
    wrong: int | None
    error: float | None = None  # old nccl-tests print a max error instead of #wrong


@dataclass(frozen=True)
class NcclRow:
    """One message size of the table."""

    size_bytes: int
    count: int
    dtype: str
    redop: str | None
    root: int | None
    out_of_place: NcclResult
    in_place: NcclResult | None
    line_no: int


@dataclass(frozen=True)
class NcclRun:
    """One test of a log: its ranks, rows, average bus bandwidth and data-check failures.

    ``problem`` says why the run cannot be used at all; ``ranks_problem`` why its
    ranks and hosts cannot be told (its figures may still be read).
    ``wrong_column`` is False for the old layout, whose ``error`` column is a
    max relative error, so only ``# Out of bounds values`` counts corruption.
    ``failed`` is the ``Test failure`` line when the run stopped on one (``problem`` is then
    that line too, unless an earlier problem came first): the rows read before it still count.
    """

    source: str
    test: str
    line_no: int = 0
    version: str | None = None
    ranks: tuple[NcclRank, ...] = ()
    rows: tuple[NcclRow, ...] = ()
    avg_busbw_gbs: float | None = None
    out_of_bounds: int | None = None
    nthread: int | None = None
    ngpus: int | None = None
    processes: int | None = None
    wrong_column: bool = True
    problem: ParseError | None = None
    ranks_problem: ParseError | None = None
    failed: ParseError | None = None  # nccl-tests' own ``Test failure`` line: the run stopped there

    @property
    def complete(self) -> bool:
        return self.problem is None

    @property
    def hosts(self) -> list[str]:
        """Hosts in rank order, each once."""
        return list(dict.fromkeys(r.host for r in self.ranks))

    @property
    def nranks(self) -> int | None:
        """The rank count the log states: JSON nthreads x ngpus x processes, else the highest rank + 1."""
        if self.processes is not None and self.nthread is not None and self.ngpus is not None:
            return self.nthread * self.ngpus * self.processes
        return max((r.rank for r in self.ranks), default=-1) + 1 or None

    @property
    def wrong(self) -> int:
        """Corrupted data the check saw: ``#wrong`` elements over all rows; in the old
        ``error`` layout, the out-of-bounds count (the only count it prints)."""
        if not self.wrong_column:
            return self.out_of_bounds or 0
        return sum(h.wrong or 0 for row in self.rows for h in (row.out_of_place, row.in_place) if h is not None)

    @property
    def corrupted(self) -> bool:
        """Whether the data check failed anywhere (``#wrong`` > 0 or out-of-bounds values)."""
        return self.wrong > 0 or (self.out_of_bounds or 0) > 0

    @property
    def peak(self) -> NcclRow | None:
        """The largest message size: the bandwidth regime, not the latency one."""
        return max(self.rows, key=lambda r: r.size_bytes, default=None)

    def peak_busbw_gbps(self) -> float | None:
        """Bus bandwidth at the largest size, out-of-place, in Gb/s (GB/s x 8)."""
        row = self.peak
        return None if row is None else row.out_of_place.busbw_gbs * 8.0

    def peak_algbw_gbps(self) -> float | None:
        """Algorithm bandwidth at the largest size, out-of-place, in Gb/s."""
        row = self.peak
        return None if row is None else row.out_of_place.algbw_gbs * 8.0


@dataclass(frozen=True)
class NcclLog:
    """Every run of one nccl-tests output, in the order they were written."""

    source: str
    runs: tuple[NcclRun, ...]
    fmt: str = "text"  # or "json"
