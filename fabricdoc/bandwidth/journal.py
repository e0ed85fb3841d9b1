"""The journal of finished bandwidth tests: JSON lines, one PairResult (or GroupResult) each, fsynced as written.

The first line is a header naming the fabric, the plan's fingerprint and the
sweep id. A fresh sweep starts a fresh journal (the old file is replaced, never
appended to); ``--resume`` continues a journal only when its header matches
the plan the sweep would run now, and refuses one from another plan or fabric
with one line. A last line cut short by a kill is dropped; any other
unreadable line is a ParseError naming it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fabricdoc.bandwidth.plan import Plan
from fabricdoc.errors import ConfigError, ParseError
from fabricdoc.model.inputs import decode, read_bytes
from fabricdoc.model.records import GroupResult, PairResult, PortRef

JOURNAL_KIND = "fabricdoc-bandwidth-journal"
JOURNAL_VERSION = 2

Done = dict[tuple[str, int, PortRef, PortRef], PairResult]
# Finished group tests by (round, test, members).
DoneGroups = dict[tuple[int, str, tuple[PortRef, ...]], GroupResult]


def plan_fingerprint(plan: Plan) -> str:
    """A short hash of what a plan runs (fabric, purpose, direction, every test in order)."""
    h = hashlib.sha256()
    h.update(f"{plan.fabric_name}\0{plan.purpose}\0{plan.bidirectional}\0".encode())
    for r, src, dst in plan.tests():
        h.update(f"{r}:{src}>{dst};".encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class JournalHeader:
    """What a journal belongs to: the fabric, the sweep plan's fingerprint, and the sweep id."""

    fabric: str
    plan: str
    sweep_id: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "header", "journal": JOURNAL_KIND, "version": JOURNAL_VERSION, **asdict(self)}


def _port(text: str) -> PortRef:
    node, _, rest = text.rpartition("[")
    return PortRef(node, int(rest.rstrip("]")))


def result_to_json(phase: str, r: PairResult) -> dict[str, Any]:
    d = asdict(r)
    d["src"], d["dst"] = str(r.src), str(r.dst)
    return {"kind": "pair", "phase": phase, **d}


def result_from_json(d: dict[str, Any]) -> PairResult:
    fields = {k: v for k, v in d.items() if k not in ("kind", "phase")}
    fields["src"], fields["dst"] = _port(d["src"]), _port(d["dst"])
    fields["sizes"] = tuple((int(a), float(b)) for a, b in d.get("sizes") or ())
    return PairResult(**fields)


def group_to_json(g: GroupResult) -> dict[str, Any]:
    d = asdict(g)
    d["members"] = [str(m) for m in g.members]
    return {"kind": "group", **d}


def group_from_json(d: dict[str, Any]) -> GroupResult:
    fields = {k: v for k, v in d.items() if k != "kind"}
    fields["members"] = tuple(_port(m) for m in d["members"])
    return GroupResult(**fields)


def read_journal(path: str | os.PathLike[str]) -> tuple[JournalHeader | None, list[tuple[str, PairResult]]]:
    """The header and ``(phase, result)`` of every finished pair test; a missing file has neither."""
    header, pairs, _ = read_journal_all(path)
    return header, pairs


def read_journal_all(
    path: str | os.PathLike[str],
) -> tuple[JournalHeader | None, list[tuple[str, PairResult]], list[GroupResult]]:
    """The header, every finished pair test ``(phase, result)`` and every finished group test."""
    p = Path(path)
    if not p.exists():
        return None, [], []
    lines = decode(read_bytes(p, "journal"), str(p)).splitlines()
    header: JournalHeader | None = None
    out: list[tuple[str, PairResult]] = []
    groups: list[GroupResult] = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            if d.get("kind") == "header":
                if d.get("journal") != JOURNAL_KIND or d.get("version") != JOURNAL_VERSION:
                    raise ParseError(str(p), no, line, f"not a version {JOURNAL_VERSION} {JOURNAL_KIND}")
                header = JournalHeader(str(d["fabric"]), str(d["plan"]), str(d["sweep_id"]))
                continue
            if d.get("kind") == "group":
                groups.append(group_from_json(d))
                continue
            out.append((d["phase"], result_from_json(d)))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            if no == len(lines):
                break  # the sweep was killed while writing this line
            raise ParseError(str(p), no, line, f"bad journal line ({exc})") from None
    return header, out, groups


class Journal:
    """An open journal: append-only, every line flushed and fsynced when written."""

    def __init__(self, path: Path, header: JournalHeader, done: Done, done_groups: DoneGroups | None = None) -> None:
        self.path = path
        self.header = header
        self.done = done  # finished tests of the run being resumed, by (phase, round, src, dst)
        self.done_groups: DoneGroups = done_groups or {}  # finished group tests, by (round, test, members)
        self._lock = threading.Lock()
        self._f = path.open("a", encoding="utf-8")

    @classmethod
    def start(cls, path: str | os.PathLike[str], header: JournalHeader) -> Journal:
        """A new journal for a new sweep: any old file at ``path`` is replaced (atomically)."""
        p = Path(path)
        tmp = p.with_name(f".{p.name}.new")
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            with tmp.open("w", encoding="utf-8") as fh:
                fh.write(json.dumps(header.to_dict(), sort_keys=True) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, p)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise ConfigError(f"{p}: cannot write journal: {exc.strerror or exc}") from None
        return cls(p, header, {})

    @classmethod
    def resume(cls, path: str | os.PathLike[str], fabric: str, plan: str) -> Journal:
        """Continue the journal at ``path``; refuse it unless it belongs to this fabric and plan."""
        p = Path(path)
        if not p.exists():
            raise ConfigError(f"{p}: no journal to resume (run without --resume to start one)")
        header, results, groups = read_journal_all(p)
        if header is None:
            raise ConfigError(f"{p}: not a fabricdoc journal (no header line): cannot resume it")
        if header.fabric != fabric or header.plan != plan:
            raise ConfigError(
                f"{p}: journal of another sweep (fabric {header.fabric!r}, plan {header.plan}); this sweep "
                f"plans {plan} on {fabric!r}: run without --resume to start a new journal")
        data = p.read_bytes()
        if data and not data.endswith(b"\n"):  # a line cut by a kill: not a finished test
            with p.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)
        done: Done = {(ph, r.round, r.src, r.dst): r for ph, r in results}
        return cls(p, header, done, {(g.round, g.test, g.members): g for g in groups})

    def append(self, phase: str, result: PairResult) -> None:
        with self._lock:
            self._f.write(json.dumps(result_to_json(phase, result), sort_keys=True) + "\n")
            self._f.flush()
            os.fsync(self._f.fileno())

    def append_group(self, result: GroupResult) -> None:
        """Journal one finished group test (fsynced), so a resumed sweep replays it instead of rerunning."""
        with self._lock:
            self._f.write(json.dumps(group_to_json(result), sort_keys=True) + "\n")
            self._f.flush()
            os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()
