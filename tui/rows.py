"""Table rows: the lazy Row and Rows, and the findings, hosts, links, ports and what-if rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from fabricdoc.model.findings import Finding

from .actions import URGENCY_ORDER, action_cell, action_of
from .formatting import health_rank, health_text, port_name, safe, sev_text
from .index import ReportIndex, key_to_link, link_key


@dataclass
class Row:
    """One table row: a stable key, its cells, the lower-case text the filter matches, sort keys."""

    key: str
    cells: tuple[Text, ...]
    search: str
    sort: dict[str, Any]


class Rows(Sequence[Row]):
    """A table's rows, made on demand: the keys up front, each :class:`Row` (its Text cells)
    only when something reads it, so a 200,000-row table costs its keys until it is drawn.

    ``sort`` maps a sort name to a function of the key and ``search`` gives a key's filter
    text, so sorting and filtering need no cells; without them the built Row answers.
    :meth:`subset` shares the built rows (a filtered or sorted view of the same table).
    """

    def __init__(self, keys: Iterable[str], make: Callable[[str], Row], *,
                 sort: dict[str, Callable[[str], Any]] | None = None,
                 search: Callable[[str], str] | None = None) -> None:
        self.keys = list(keys)
        self._make = make
        self._sorts = sort or {}
        self._search = search
        self._built: dict[str, Row] = {}
        self._search_text: dict[str, str] = {}

    @classmethod
    def of(cls, rows: Iterable[Row]) -> Rows:
        """Rows already made (small tables)."""
        rows = list(rows)
        out = cls([r.key for r in rows], lambda key: out._built[key])
        out._built = {r.key: r for r in rows}
        return out

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self.row(k) for k in self.keys[i]]
        return self.row(self.keys[i])

    def row(self, key: str) -> Row:
        row = self._built.get(key)
        if row is None:
            row = self._built[key] = self._make(key)
        return row

    def search(self, key: str) -> str:
        text = self._search_text.get(key)
        if text is None:
            text = self._search_text[key] = self._search(key) if self._search else self.row(key).search
        return text

    def sort_value(self, key: str, name: str) -> Any:
        fn = self._sorts.get(name)
        return fn(key) if fn is not None else self.row(key).sort.get(name, 0)

    def subset(self, keys: Iterable[str]) -> Rows:
        """These rows in another order or fewer of them, sharing what was built."""
        out = Rows(keys, self._make, sort=self._sorts, search=self._search)
        out._built, out._search_text = self._built, self._search_text
        return out


FINDING_COLUMNS = ("id", "severity", "conf", "kind", "fault", "component", "action", "evidence")  # as the CLI's table
FINDING_SORTS = ("id", "severity", "confidence", "kind", "fault", "name", "action", "evidence")


def _urgency_rank(f: Finding) -> int:
    action = action_of(f)
    return URGENCY_ORDER.index(action.urgency) if action is not None and action.urgency in URGENCY_ORDER else -1


def finding_rows(index: ReportIndex) -> Rows:
    rows = []
    for f in index.report.findings:
        action = action_of(f)
        rows.append(Row(
            f.id,
            (safe(f.id, "bold"), sev_text(f.severity), safe(f"{f.confidence:.2f}"), safe(f.kind), safe(f.fault),
             safe(f.name), action_cell(f), safe(str(len(f.evidence)))),
            f"{f.id} {f.kind} {f.fault} {f.severity} {f.name} {action.do if action else ''}".lower(),
            {"severity": (f.severity.rank, f.confidence), "confidence": (f.confidence, f.severity.rank),
             "kind": f.kind, "fault": f.fault, "name": f.name, "action": (_urgency_rank(f), f.severity.rank),
             "id": f.id, "evidence": len(f.evidence)},
        ))
    return Rows.of(rows)


HOST_COLUMNS = ("host", "where", "ports", "health", "drain", "findings")


def host_rows(index: ReportIndex) -> Rows:
    """Every host, made as drawn; sorted by ``health`` the worst come first."""
    bad = index.unhealthy_nodes()

    def search(nid: str) -> str:
        n = index.nodes[nid]
        sev = bad.get(nid)
        drain = "drain" if index.is_drained(nid) else ""
        return f"{n['label']} {index.host_name[nid]} {nid} {index.place(nid)} {sev or 'ok'} {drain}".lower()

    def make(nid: str) -> Row:
        n = index.nodes[nid]
        sev = bad.get(nid)
        drain = "drain" if index.is_drained(nid) else ""
        return Row(
            nid,
            (health_text(sev, n["label"]), safe(index.place(nid)), safe(str(n["ports"])), sev_text(sev),
             safe(drain, "bold red"), safe(", ".join(f.id for f in index.findings_of_node(nid)))),
            search(nid),
            {"health": -health_rank(sev), "name": n["label"]},
        )

    return Rows(index.hosts, make, search=search,
                sort={"health": lambda nid: -health_rank(bad.get(nid)), "name": index.label})


LINK_COLUMNS = ("end a", "end b", "speed", "state", "health", "findings")


def link_rows(index: ReportIndex) -> Rows:
    """Every cable, made as drawn; sorted by ``health`` the worst come first."""
    bad = {link_key(lid): -health_rank(sev) for lid, sev in index.unhealthy_links().items()}

    def search(key: str) -> str:
        lid = key_to_link(key)
        fs = index.link_findings.get(lid, [])
        sev = index.link_health(lid) if key in bad else None
        return (f"{index.link_name(lid)} {index.links[lid].get('state', 'up')} {sev or 'ok'} "
                f"{' '.join(f.fault for f in fs)}").lower()

    def make(key: str) -> Row:
        lid = key_to_link(key)
        (a, pa), (b, pb) = lid
        lk = index.links[lid]
        sev = index.link_health(lid) if key in bad else None
        fs = index.link_findings.get(lid, [])
        state = lk.get("state", "up")
        return Row(
            key,
            (health_text(sev, port_name(index.label(a), pa)), safe(port_name(index.label(b), pb)),
             safe(index.speed(lk)), safe(state, "red" if state == "down" else ""), sev_text(sev),
             safe(", ".join(f.label for f in fs))),
            search(key),
            {"health": -health_rank(sev)},
        )

    return Rows(map(link_key, index.links), make, search=search, sort={"health": lambda key: bad.get(key, 1)})


PORT_COLUMNS = ("port", "peer", "speed", "state", "health", "findings")


def port_rows(index: ReportIndex, nid: str) -> Rows:
    """A node's cabled ports (its detail screen), keyed like :func:`link_rows`."""
    rows = []
    for lid, mine, other in index.ports_of(nid):
        lk = index.links[lid]
        sev = index.link_health(lid)
        fs = index.link_findings.get(lid, [])
        rows.append(Row(
            link_key(lid),
            (health_text(sev, str(mine[1])), safe(port_name(index.label(other[0]), other[1])), safe(index.speed(lk)),
             safe(lk.get("state", "up")), sev_text(sev), safe(", ".join(f.label for f in fs))),
            "", {},
        ))
    return Rows.of(rows)


WHATIF_COLUMNS = ("drain", "host", "where", "health")


def drain_mark(drained: bool) -> Text:
    return Text("[x] drain", style="bold red", end="") if drained else Text("[ ]", style="dim", end="")


def whatif_rows(index: ReportIndex, drained: set[str]) -> Rows:
    """Every host with its what-if drain mark (``drained`` is read as each row is made);
    sorted by ``health`` the drained come first, then the worst."""
    bad = index.unhealthy_nodes()

    def search(nid: str) -> str:
        return f"{index.label(nid)} {index.host_name[nid]} {index.place(nid)} {bad.get(nid) or 'ok'}".lower()

    def health(nid: str) -> tuple[bool, int]:
        return (nid not in drained, -health_rank(bad.get(nid)))

    def make(nid: str) -> Row:
        sev = bad.get(nid)
        return Row(
            nid,
            (drain_mark(nid in drained), health_text(sev, index.label(nid)), safe(index.place(nid)), sev_text(sev)),
            search(nid),
            {"health": health(nid)},
        )

    return Rows(index.hosts, make, search=search, sort={"health": health})
