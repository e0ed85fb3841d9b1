"""NCCL RAS status reports (``ncclras``, NCCL 2.24+): which processes and ranks a job lost or left behind.

Both forms the client prints are read:

* **text** (``ncclras``, ``ncclras -v``; ``rasClientRunComms`` in NCCL's ``src/ras/client_support.cc``):
  the ``Errors`` and ``Warnings`` sections. ``INCOMPLETE`` / ``DEAD`` list job processes
  (``Process <pid> on node <host> managing GPU 3``); ``#<g>-<i> (<hash>) INCOMPLETE|ERROR|MISMATCH``
  blocks list ranks (``Rank 7 -- GPU 3 managed by process <pid> on node <host>``, or NCCL 2.24/2.25's
  ``The missing rank: 21``), grouped under lines such as ``30 ranks have launched up to operation 640``
  or ``2 ranks have status FINALIZE``; a group of one is printed on one line
  (``Rank 7 has launched up to operation 60 -- GPU 3 ...``).
* **monitor mode** (``ncclras -m``, NCCL 2.29+, text or ``-f json``; ``rasClientsNotifyEvent``): one
  event per peer change (``[2025-12-19 13:07:07] PEER_DEAD: Process <pid> on node <host> managing
  GPU 1``); a peer dead, unresponsive, stuck or disconnected is a signal, new or reconnecting ones are not.
* **JSON** (``ncclras -f json``, NCCL 2.28.7+; ``rasDumpCommsToJSON``): every communicator's ranks with
  their status and per-collective launch counts, and ``missing_ranks`` (``unresponsive``,
  ``considered_dead``). NCCL 2.28.7 and 2.28.9 omit the comma after ``"nvml_dev": N`` in
  ``missing_ranks`` entries (invalid JSON whenever a rank is missing; fixed in 2.29.2): that one
  defect is repaired and said so in ``notes``.

What comes out is what NCCL said, per rank or process: :class:`RankSignal` ``missing`` (no
communicator data), ``dead`` (unreachable via the RAS network), ``error`` (initialization or
asynchronous error), ``out_of_step`` (launched a different number of a collective than most ranks,
or has another status). Hosts are as NCCL printed them, usually IP addresses.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fabricdoc.errors import ParseError
from fabricdoc.model.inputs import check_depth, json_values
from fabricdoc.model.records import RankSignal

_BANNER = re.compile(r"^NCCL version (\S+)")
_COMM = re.compile(r"^#(\d+)-(\d+) \(([0-9a-fA-F]+)\) ([A-Z,]+)\s*$")
_PROCESS = re.compile(r"^Process (\d+) on node (\S+) managing GPUs? (.+?)\s*$")
_RANK = re.compile(r"^Rank (\d+) -- (?:GPU (.+?) managed by process (\d+) on node (\S+)|\[process information not found\])\s*$")
_RANK_ONE = re.compile(r"^Rank (\d+) (has launched up to operation (\d+)|has status (\S+)|reported (.+?)) -- "
                       r"GPU (.+?) managed by process (\d+) on node (\S+)\s*$")
_GROUP_OPS = re.compile(r"^(\d+) ranks? (?:has|have) launched up to operation (\d+)\s*$")
_GROUP_NONE = re.compile(r"^(\d+) ranks? (?:has|have) not launched any operations\s*$")
_GROUP_STATUS = re.compile(r"^(\d+) ranks? (?:has|have) status (\S+)\s*$")
_GROUP_ERR = re.compile(r"^(\d+) ranks? reported (.+?)\s*$")
_MISSING_OLD = re.compile(r"^The missing ranks?: ([\d, ]+)\s*$")
_DIFFERENT = re.compile(r"^Communicator ranks have different (.+?)\s*$")
_KNOWN = re.compile(r"^(Missing communicator data from \d+ .*|\d+ job process(es)? (is|are) considered dead.*|"
                    r"Encountered \d+ communication timeouts? .*|Initialization errors? on \d+ ranks?|"
                    r"Asynchronous errors? on \d+ ranks?|\[could not find information on \d+ process(es)?\])\s*$")
_EVENT = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] (PEER_[A-Z_]+): "
                    r"(?:Process (\d+) on node (\S+) managing GPUs? (\S+)|(\S+))\s*(.*)$")
# Monitor events that say a peer is gone or stuck (NCCL src/ras/rasnet.cc), and what each means.
EVENT_STATES = {"PEER_DEAD": "dead", "PEER_TIMEOUT_DEAD": "dead", "PEER_UNRESPONSIVE": "missing",
                "PEER_SEND_STUCK": "missing", "PEER_KEEPALIVE_TIMEOUT": "missing", "PEER_INIT_TIMEOUT": "missing",
                "PEER_DISCONNECTED": "missing"}
_JSON_BUG = re.compile(r'("nvml_dev": -?\d+)(\s*\n\s*")')


@dataclass
class RasReport:
    """One ``ncclras`` report: the NCCL version, what it said about ranks, and lines not understood."""

    source: str
    version: str | None = None
    signals: list[RankSignal] = field(default_factory=list)
    timeouts: int = 0
    notes: list[str] = field(default_factory=list)


def parse_ncclras(text: str, source: str = "ncclras") -> RasReport:
    """Parse ``ncclras`` output, text or JSON (decided by its first non-blank character)."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        head = stripped[:400]
        return _parse_events_json(text, source) if '"event"' in head and '"communicators"' not in head \
            else _parse_json(text, source)
    return _parse_text(text, source)


# -- text ------------------------------------------------------------------------------------------


class _Block:
    """One block of the Errors or Warnings section, with the rank group being listed."""

    def __init__(self, head: str, comm: str = "", what: str = "") -> None:
        self.head, self.comm, self.what = head, comm, what
        self.group: tuple[str, str] | None = None  # (state, detail) of the rank lines that follow
        self.majority: int | None = None  # the op most ranks reached (MISMATCH of counts)
        self.groups: list[tuple[int, str, str]] = []  # (count, kind, value) seen in this block


def _parse_text(text: str, source: str) -> RasReport:
    rep = RasReport(source)
    lines = text.splitlines()
    section = ""
    block: _Block | None = None
    seen_any = False
    for no, raw in enumerate(lines, 1):
        line = raw.rstrip()
        body = line.strip()
        if not body or set(body) == {"="}:
            continue
        if (m := _BANNER.match(body)) and not line.startswith(" "):
            rep.version, seen_any = m.group(1), True
            continue
        if body in ("Errors", "Warnings") and no < len(lines) and set(lines[no].strip()) == {"="}:
            section, block, seen_any = body, None, True
            continue
        if body.startswith(("Communicators...", "Job summary", "No communicator data collected", "Group     Comms")):
            section, block, seen_any = "", None, True
            continue
        if m := _EVENT.match(body):
            _event(rep, m, source, no, body)
            seen_any = True
            continue
        if body.startswith("RAS Monitor Mode"):
            seen_any = True
            continue
        if not line.startswith(" ") and (m := _COMM.match(body)):
            section, block = section or "Warnings", _Block(m.group(4), m.group(3), "")
            continue
        if not section:
            continue  # the summary tables: counts, not ranks
        if not line.startswith(" "):
            if body in ("INCOMPLETE", "DEAD", "TIMEOUT"):
                block = _Block(body)
            elif body == "[...]":
                continue
            else:
                rep.notes.append(f"{source}:{no}: not understood: {body[:120]}")
                block = None
            continue
        if block is None:
            rep.notes.append(f"{source}:{no}: not understood: {body[:120]}")
            continue
        _block_line(rep, block, body, source, no, line)
    if not seen_any:
        first = next(((i, ln) for i, ln in enumerate(lines, 1) if ln.strip()), (0, ""))
        raise ParseError(source, first[0], first[1][:120],
                         "not an ncclras report (no 'NCCL version', 'Communicators...', 'Errors' or JSON object)")
    return rep


def _block_line(rep: RasReport, block: _Block, body: str, source: str, no: int, line: str) -> None:
    def add(state: str, rank: int | None, host: str | None, pid: int | None, gpu: str | None, detail: str) -> None:
        rep.signals.append(RankSignal(host, rank, block.comm, state, detail, pid, gpu, source, no, line.strip()))

    head = block.head
    if head == "TIMEOUT":
        m = re.search(r"Encountered (\d+) communication timeout", body)
        if m:
            rep.timeouts += int(m.group(1))
        return
    if m := _PROCESS.match(body):
        state = "dead" if head == "DEAD" else "missing"
        detail = ("considered dead: unreachable via the RAS network" if state == "dead"
                  else "no communicator data from this process")
        add(state, None, m.group(2), int(m.group(1)), m.group(3), detail)
        return
    if m := _DIFFERENT.match(body):
        block.what, block.group, block.majority, block.groups = m.group(1), None, None, []
        return
    if m := _GROUP_OPS.match(body):
        _group(block, int(m.group(1)), "ops", m.group(2))
        return
    if m := _GROUP_NONE.match(body):
        _group(block, int(m.group(1)), "ops", "0")
        return
    if m := _GROUP_STATUS.match(body):
        _group(block, int(m.group(1)), "status", m.group(2))
        return
    if (m := _GROUP_ERR.match(body)) and "ERROR" in head:
        block.group = ("error", f"reported {m.group(2)}")
        return
    if m := _RANK_ONE.match(body):
        rank, host, pid, gpu = int(m.group(1)), m.group(8), int(m.group(7)), m.group(6)
        if m.group(3) is not None:
            add("out_of_step", rank, host, pid, gpu, _ops_detail(block, int(m.group(3))))
        elif m.group(4) is not None:
            add("out_of_step", rank, host, pid, gpu, f"status {m.group(4)} while others differ")
        else:
            add("error", rank, host, pid, gpu, f"reported {m.group(5)}")
        return
    if m := _RANK.match(body):
        rank = int(m.group(1))
        host, pid, gpu = m.group(4), int(m.group(3)) if m.group(3) else None, m.group(2)
        if "INCOMPLETE" in head and block.group is None:
            add("missing", rank, host, pid, gpu, f"no data for communicator {block.comm}")
        elif block.group is not None:
            add(block.group[0], rank, host, pid, gpu, block.group[1])
        else:
            rep.notes.append(f"{source}:{no}: a rank listed outside any group: {body[:120]}")
        return
    if m := _MISSING_OLD.match(body):
        for r in m.group(1).replace(" ", "").split(","):
            if r:
                add("missing", int(r), None, None, None, f"no data for communicator {block.comm}")
        return
    if _KNOWN.match(body):
        return
    rep.notes.append(f"{source}:{no}: not understood: {body[:120]}")


def _group(block: _Block, count: int, kind: str, value: str) -> None:
    """A ``N ranks have ...`` line: the rank lines after it belong to this group."""
    block.groups.append((count, kind, value))
    if kind == "ops":
        # The most common group comes first in NCCL's output only by chance: keep the largest.
        best = max((g for g in block.groups if g[1] == "ops"), key=lambda g: g[0])
        block.majority = int(best[2])
        block.group = ("out_of_step", _ops_detail(block, int(value)))
    else:
        big = max(block.groups, key=lambda g: g[0])
        block.group = ("out_of_step", f"status {value} while {big[0]} ranks have status {big[2]}")


def _ops_detail(block: _Block, op: int) -> str:
    what = block.what.replace(" operation counts", "") or "collective"
    if block.majority is not None and block.majority != op:
        n = max(g[0] for g in block.groups if g[1] == "ops" and int(g[2]) == block.majority)
        return f"launched {what} up to operation {op} while {n} ranks reached {block.majority}"
    return f"launched {what} up to operation {op}"


def _event(rep: RasReport, m: re.Match[str], source: str, no: int, line: str) -> None:
    state = EVENT_STATES.get(m.group(2))
    if state is None:
        return
    host = m.group(4) or (m.group(6) or "").rsplit(":", 1)[0] or None
    detail = f"{m.group(2)} at {m.group(1)}" + (f": {m.group(7)}" if m.group(7) else "")
    rep.signals.append(RankSignal(host, None, "", state, detail, int(m.group(3)) if m.group(3) else None,
                                  m.group(5), source, no, line))


def _parse_events_json(text: str, source: str) -> RasReport:
    """Monitor-mode JSON: pretty-printed event objects one after another."""
    rep = RasReport(source)
    for no, pos, ev in json_values(text, source, "not a monitor-mode JSON event"):
        if not isinstance(ev, dict) or not isinstance(ev.get("event"), str):
            raise ParseError(source, no, text[pos:pos + 80], "not a monitor-mode JSON event (no 'event')")
        state = EVENT_STATES.get(ev["event"])
        peer = ev.get("peer") if isinstance(ev.get("peer"), dict) else {}
        if state is not None:
            host = peer.get("host") if isinstance(peer.get("host"), str) else None
            if host is None and isinstance(peer.get("addr"), str):
                host = peer["addr"].rsplit(":", 1)[0]
            devs = peer.get("cuda_devs") if isinstance(peer.get("cuda_devs"), list) else []
            details = ev.get("details") if isinstance(ev.get("details"), str) else ""
            detail = f"{ev['event']} at {ev.get('timestamp', '?')}" + (f": {details}" if details else "")
            rep.signals.append(RankSignal(host, None, "", state, detail, _int(peer.get("pid")),
                                          ",".join(str(d) for d in devs) or None, source, no,
                                          json.dumps(ev, separators=(",", ":"))[:300]))
    return rep


# -- JSON ------------------------------------------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


def _strict_json(text: str, source: str) -> Any:
    """JSON as :func:`fabricdoc.model.inputs.loads_json` reads it (bounded nesting, no 5,000-digit
    integers, no NaN), keeping json's own decode error so the NCCL 2.28 comma repair can be tried."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ParseError(source, 0, "", "nested too deeply") from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # an integer beyond Python's digit limit
        raise ParseError(source, 0, "", f"not valid JSON: {exc}") from None
    return check_depth(value, source)


def _parse_json(text: str, source: str) -> RasReport:
    rep = RasReport(source)
    try:
        data = _strict_json(text, source)
    except json.JSONDecodeError as exc:
        fixed, n = _JSON_BUG.subn(r"\1,\2", text)
        try:
            data = _strict_json(fixed, source) if n else None
        except json.JSONDecodeError:
            data = None
        if data is None:
            line = text.splitlines()[exc.lineno - 1] if 0 < exc.lineno <= len(text.splitlines()) else ""
            raise ParseError(source, exc.lineno, line[:120], f"not valid JSON: {exc.msg}") from None
        rep.notes.append(f"{source}: repaired {n} missing comma(s) after \"nvml_dev\" (a defect of NCCL 2.28.7/2.28.9)")
    if not isinstance(data, dict) or not isinstance(data.get("communicators"), list):
        raise ParseError(source, 1, text.lstrip()[:80], "not an ncclras JSON report (no 'communicators' list)")
    version = data.get("nccl_version")
    rep.version = version if isinstance(version, str) else None
    ras = data.get("ras")
    if isinstance(ras, dict) and isinstance(ras.get("timeouts_count"), int):
        rep.timeouts = ras["timeouts_count"]
    for ci, comm in enumerate(data["communicators"]):
        if not isinstance(comm, dict):
            raise ParseError(source, 0, f"communicators[{ci}]", "not an object")
        _json_comm(rep, comm, ci, source)
    return rep


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _json_comm(rep: RasReport, comm: dict, ci: int, source: str) -> None:
    chash = str(comm.get("hash", ""))[:40].removeprefix("0x")
    ranks = [r for r in comm.get("ranks") or [] if isinstance(r, dict)]
    where = f"communicators[{ci}]"

    def add(state: str, r: dict, detail: str) -> None:
        host = r.get("host") if isinstance(r.get("host"), str) and r.get("host") != "unknown" else None
        gpu = _int(r.get("cuda_dev"))
        pid = _int(r.get("pid"))
        rep.signals.append(RankSignal(host, _int(r.get("rank")), chash, state, detail,
                                      pid if pid is None or pid >= 0 else None,
                                      None if gpu is None else str(gpu), source, 0,
                                      f"{where}: " + json.dumps(r, separators=(",", ":"))[:300]))

    for r in comm.get("missing_ranks") or []:
        if not isinstance(r, dict):
            continue
        status = r.get("status") if isinstance(r.get("status"), dict) else {}
        if status.get("considered_dead") is True:
            add("dead", r, "considered dead: unreachable via the RAS network")
        else:
            add("missing", r, f"no data for communicator {chash}" + (" (did not answer)" if status.get("unresponsive") else ""))
    for r in ranks:
        status = r.get("status") if isinstance(r.get("status"), dict) else {}
        init, asyn = _int(status.get("init_state")), _int(status.get("async_error"))
        if init not in (None, 0, 7):
            add("error", r, f"initialization error (ncclResult_t {init})")
        elif asyn not in (None, 0, 7):
            add("error", r, f"asynchronous error (ncclResult_t {asyn})")
        elif status.get("abort_flag") is True:
            add("error", r, "communicator aborted")
    counts = [(r, r.get("collective_counts")) for r in ranks if isinstance(r.get("collective_counts"), dict)]
    names = sorted({k for _, c in counts for k in c})
    for name in names:
        values = Counter(c.get(name) for _, c in counts if _int(c.get(name)) is not None)
        if len(values) < 2:
            continue
        (common, n), = values.most_common(1)
        for r, c in counts:
            v = _int(c.get(name))
            if v is not None and v != common:
                add("out_of_step", r, f"launched {name} up to operation {v} while {n} ranks reached {common}")
