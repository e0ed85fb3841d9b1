"""The sweep history: every sweep's counters, link events, findings and drains in one SQLite file.

Raw counter values are kept under their vendor names (as probes read them) so
rates over days reuse :mod:`fabricdoc.model.counters` semantics (saturation, wrap,
reset). Queries return pandas DataFrames: counter rates between sweeps, flaps
per port per ISO week, and per-component and per-kind failure rates for the
impact and job-cost models. Appending the same report twice is a no-op.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from fabricdoc.errors import FabricdocError
from fabricdoc.impact.failure_rate import Snapshot, host_failure_rate
from fabricdoc.model.counters import deltas
from fabricdoc.model.records import LinkEvent, PortCounters
from fabricdoc.model.severity import rank as severity_rank
from fabricdoc.model.times import epoch
from fabricdoc.report.report import Report

SCHEMA_VERSION = "3"

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY, at REAL NOT NULL, generated_at TEXT NOT NULL, fabric TEXT NOT NULL,
    source TEXT, verdict TEXT NOT NULL, hosts INTEGER, switches INTEGER, links INTEGER,
    run_id TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS counters (
    sweep_id INTEGER NOT NULL REFERENCES sweeps(id), node TEXT NOT NULL, port INTEGER NOT NULL,
    ifname TEXT, label TEXT, guid TEXT, peer TEXT, timestamp REAL NOT NULL, name TEXT NOT NULL, value INTEGER,
    width_bits INTEGER, source TEXT);
CREATE INDEX IF NOT EXISTS counters_port ON counters (node, port, timestamp);
CREATE TABLE IF NOT EXISTS events (
    sweep_id INTEGER NOT NULL REFERENCES sweeps(id), node TEXT NOT NULL, port INTEGER NOT NULL,
    ifname TEXT, timestamp REAL NOT NULL, state TEXT NOT NULL, source TEXT);
CREATE TABLE IF NOT EXISTS findings (
    sweep_id INTEGER NOT NULL REFERENCES sweeps(id), finding_id TEXT NOT NULL, kind TEXT NOT NULL,
    component TEXT NOT NULL, name TEXT NOT NULL, fault TEXT NOT NULL, severity TEXT NOT NULL,
    confidence REAL NOT NULL, node_ids TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS drains (
    sweep_id INTEGER NOT NULL REFERENCES sweeps(id), node TEXT NOT NULL, reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tests (
    sweep_id INTEGER NOT NULL REFERENCES sweeps(id), src TEXT NOT NULL, dst TEXT NOT NULL, status TEXT NOT NULL,
    busbw_gbps REAL, expected_gbps REAL, ratio REAL, size_bytes INTEGER, test TEXT, slow INTEGER);
"""


def default_path() -> Path:
    """``$FABRICDOC_HISTORY``, else ``$XDG_DATA_HOME/fabricdoc/history.sqlite`` (``~/.local/share``)."""
    env = os.environ.get("FABRICDOC_HISTORY")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "fabricdoc" / "history.sqlite"


MIN_RATE_DAYS = 1.0  # failure rates are given only over at least this much history

class History:
    """An open history store. Use as a context manager, or call :meth:`close`."""

    def __init__(self, path: str | Path | None = None, create: bool = True) -> None:
        self.path = Path(path) if path is not None else default_path()
        if not create and not self.path.is_file():
            raise FabricdocError(f"{self.path}: no history store there (a sweep with --history writes one)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.undecodable = 0  # text cells that were not UTF-8 (read with U+FFFD in place of the bad bytes)
        try:
            self.db = sqlite3.connect(self.path, timeout=10.0)
            self.db.text_factory = self._text
            has_meta = self.db.execute("SELECT name FROM sqlite_master WHERE name='meta'").fetchone()
            row = self.db.execute("SELECT value FROM meta WHERE key='schema'").fetchone() if has_meta else None
            if row is not None and row[0] == "1":
                self._migrate_from_1()
            if row is not None and row[0] in ("1", "2"):
                self._migrate_from_2()
            self.db.executescript(_DDL)
            if row is None:
                self.db.execute("INSERT INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
                self.db.commit()
            elif row[0] not in ("1", "2", SCHEMA_VERSION):
                raise FabricdocError(f"{self.path}: history schema {row[0]}, this fabricdoc reads {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            raise FabricdocError(f"{self.path}: not a usable fabricdoc history database: {exc}") from None

    def _text(self, data: bytes) -> str:
        """A text cell: UTF-8, or (a cell another tool or a disk fault garbled) its bytes with U+FFFD
        in place of the bad ones, counted in :attr:`undecodable` so the reader can say so; never an error
        that loses every other row."""
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self.undecodable += 1
            return data.decode("utf-8", "replace")

    def _migrate_from_1(self) -> None:
        """Schema 1 kept one sweep per (fabric, second): give every sweep a run id of its own."""
        with self.db:
            self.db.executescript("""
                CREATE TABLE sweeps_v2 (
                    id INTEGER PRIMARY KEY, at REAL NOT NULL, generated_at TEXT NOT NULL, fabric TEXT NOT NULL,
                    source TEXT, verdict TEXT NOT NULL, hosts INTEGER, switches INTEGER, links INTEGER,
                    run_id TEXT NOT NULL UNIQUE);
                INSERT INTO sweeps_v2 SELECT id, at, generated_at, fabric, source, verdict, hosts, switches, links,
                    'schema1-' || id FROM sweeps;
                DROP TABLE sweeps;
                ALTER TABLE sweeps_v2 RENAME TO sweeps;
                UPDATE meta SET value = '2' WHERE key = 'schema';
            """)

    def _migrate_from_2(self) -> None:
        """Schema 2 kept no test kind or slow flag per test: what a healthy test of each kind reaches is
        learned per kind, so older tests (kind unknown) are read only where the kind does not matter."""
        with self.db:
            has_tests = self.db.execute("SELECT name FROM sqlite_master WHERE name='tests'").fetchone()
            if has_tests:
                self.db.executescript("""
                    ALTER TABLE tests ADD COLUMN test TEXT;
                    ALTER TABLE tests ADD COLUMN slow INTEGER;
                """)
            self.db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    # -- writing ---------------------------------------------------------------
    def append(
        self,
        report: Report,
        counters: Iterable[PortCounters] = (),
        events: Iterable[LinkEvent] = (),
    ) -> int:
        """Store one sweep; returns its id. Every run is kept; the same report (run id) is stored once.

        A store that cannot be written (read-only, full, locked) is a FabricdocError.
        """
        try:
            return self._append(report, counters, events)
        except sqlite3.Error as exc:
            raise FabricdocError(f"{self.path}: cannot write the history store: {exc}") from None

    def _append(self, report: Report, counters: Iterable[PortCounters], events: Iterable[LinkEvent]) -> int:
        fab = report.fabric
        name = str(fab.get("name", ""))
        found = self.db.execute("SELECT id FROM sweeps WHERE run_id=?", (report.run_id,)).fetchone()
        if found:
            return int(found[0])
        labels, guids, peers = _port_facts(report)
        with self.db:
            cur = self.db.execute(
                "INSERT INTO sweeps (at, generated_at, fabric, source, verdict, hosts, switches, links, run_id) "
                "VALUES (?,?,?,?,?,?,?,?,?)",
                (epoch(report.generated_at, "report time"), report.generated_at, name, fab.get("source"), report.verdict,
                 fab.get("hosts"), fab.get("switches"), fab.get("links"), report.run_id),
            )
            sid = int(cur.lastrowid)
            self.db.executemany(
                "INSERT INTO counters VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (sid, c.node, c.port, c.ifname, labels.get(c.node, c.node), guids.get(c.node), peers.get((c.node, c.port)), c.timestamp,
                     k, v, c.width_bits.get(k), c.source)
                    for c in counters
                    for k, v in c.values.items()
                ],
            )
            self.db.executemany(
                "INSERT INTO events VALUES (?,?,?,?,?,?,?)",
                [(sid, e.node, e.port, e.ifname, e.timestamp, e.state, e.source) for e in events],
            )
            self.db.executemany(
                "INSERT INTO findings VALUES (?,?,?,?,?,?,?,?,?)",
                [
                    (sid, f.id, f.kind, f"{f.kind}:{f.component}", f.name, f.fault, f.severity, f.confidence, json.dumps(f.node_ids))
                    for f in report.findings
                ],
            )
            self.db.executemany("INSERT INTO drains VALUES (?,?,?)", [(sid, d.node, d.reason) for d in report.drain])
            self.db.executemany(
                "INSERT INTO tests VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(sid, f"{p.src[0]}[{p.src[1]}]", f"{p.dst[0]}[{p.dst[1]}]", p.status or "", p.busbw_gbps,
                  p.expected_gbps, p.ratio, p.size_bytes, p.test, None if p.slow is None else int(bool(p.slow)))
                 for p in report.pairs],
            )
        return sid

    # -- reading -----------------------------------------------------------------
    def test_pools(self, fabric: str, sweeps: int = 20) -> list[dict[str, Any]]:
        """The bandwidth tests of the newest ``sweeps`` sweeps of ``fabric``, one ``{"pairs": [...]}`` per
        sweep (status, busbw, expected, ratio, message size, test kind and slow flag where stored): what the
        expected busbw's efficiency and each test shape's healthy figure are learned from."""
        ids = [r[0] for r in self.db.execute(
            "SELECT id FROM sweeps WHERE fabric = ? ORDER BY at DESC, id DESC LIMIT ?", (fabric, max(0, sweeps)))]
        out = []
        for sid in ids:
            rows = self.db.execute("SELECT status, busbw_gbps, expected_gbps, ratio, size_bytes, test, slow FROM tests "
                                   "WHERE sweep_id = ?", (sid,))
            out.append({"pairs": [{"status": s, "busbw_gbps": b, "expected_gbps": e, "ratio": r, "size_bytes": z,
                                   **({"test": t} if t is not None else {}),
                                   **({"slow": bool(w)} if w is not None else {})}
                                  for s, b, e, r, z, t, w in rows]})
        return [pool for pool in out if pool["pairs"]]

    def recent_keys(self, fabric: str, n: int) -> list[set[str]]:
        """The finding keys of the newest ``n`` sweeps of ``fabric``, newest first (drain confirmation)."""
        if n <= 0:
            return []
        ids = [r[0] for r in self.db.execute(
            "SELECT id FROM sweeps WHERE fabric = ? ORDER BY at DESC, id DESC LIMIT ?", (fabric, n))]
        keys: dict[int, set[str]] = {sid: set() for sid in ids}
        if ids:
            marks = ",".join("?" * len(ids))
            for sid, comp, fault in self.db.execute(
                    f"SELECT sweep_id, component, fault FROM findings WHERE sweep_id IN ({marks})", ids):  # noqa: S608
                keys[sid].add(f"{comp}:{fault}")  # component is stored as kind:component
        return [keys[sid] for sid in ids]

    def sweeps(self) -> pd.DataFrame:
        """One row per sweep, oldest first: id, at (epoch s), generated_at, fabric, verdict, hosts, switches, links."""
        return pd.read_sql_query("SELECT * FROM sweeps ORDER BY at, id", self.db)

    def _samples(
        self, since: float | None, node: str | None, latest_n: int | None = None
    ) -> list[tuple[dict[str, Any], PortCounters]]:
        cols = "node, port, ifname, label, guid, peer, timestamp, name, value, width_bits, source, sweep_id"
        q = f"SELECT {cols} FROM counters"
        cond: list[str] = []
        args: list[Any] = []
        if latest_n is not None:
            # Only each port's newest samples, so a scrape does not read months of history.
            q = (
                "WITH ts AS (SELECT DISTINCT node, port, ifname, timestamp FROM counters), "
                "ranked AS (SELECT node, port, ifname, timestamp, ROW_NUMBER() OVER "
                "(PARTITION BY node, port, ifname ORDER BY timestamp DESC) AS rn FROM ts) "
                f"SELECT {', '.join('c.' + c.strip() for c in cols.split(','))} FROM counters c JOIN ranked r "
                "ON c.node = r.node AND c.port = r.port AND c.ifname IS r.ifname AND c.timestamp = r.timestamp"
            )
            cond.append("r.rn <= ?")
            args.append(latest_n)
        if since is not None:
            cond.append("c.timestamp >= ?" if latest_n else "timestamp >= ?")
            args.append(since)
        if node is not None:
            cond.append("c.node = ?" if latest_n else "node = ?")
            args.append(node)
        if cond:
            q += " WHERE " + " AND ".join(cond)
        q += " ORDER BY 1, 2, 3, 7"
        groups: dict[tuple, dict[str, Any]] = {}
        for nd, port, ifname, label, guid, peer, ts, name, value, width, source, sweep in self.db.execute(q, args):
            g = groups.setdefault(
                (nd, port, ifname, ts),
                {"label": label, "guid": guid, "peer": peer, "values": {}, "widths": {}, "source": source,
                 "sweep": sweep},
            )
            g["values"][name] = value
            if width:
                g["widths"][name] = width
        out = []
        for (nd, port, ifname, ts), g in groups.items():
            pc = PortCounters(nd, port, ts, g["values"], source=g["source"] or "history", width_bits=g["widths"], ifname=ifname)
            out.append(({"label": g["label"], "guid": g["guid"], "peer": g["peer"], "sweep": g["sweep"]}, pc))
        return out

    def counter_rates(self, since: float | None = None, node: str | None = None,
                      counter: str | None = None) -> pd.DataFrame:
        """Canonical counter deltas and rates between consecutive samples of each port.

        Columns: node, port, ifname, label, guid, peer, counter, t0, t1, interval_s,
        delta (canonical units), per_second, at_least, reset.
        """
        rows = []
        prev: dict[tuple, PortCounters] = {}
        for facts, pc in self._samples(since, node):
            # A simulated sweep counts from its own base: its samples pair only with each other.
            key = (pc.node, pc.port, pc.ifname, facts["sweep"] if _own_base(pc) else None)
            before = prev.get(key)
            prev[key] = pc
            if before is None or pc.timestamp <= before.timestamp:
                continue
            for d in deltas([before], [pc]):
                if counter is not None and d.name != counter:
                    continue
                rows.append(
                    {"node": pc.node, "port": pc.port, "ifname": pc.ifname, "label": facts["label"],
                     "guid": facts["guid"], "peer": facts["peer"],
                     "counter": d.name, "t0": before.timestamp, "t1": pc.timestamp, "interval_s": d.interval_s,
                     "delta": d.value, "per_second": d.per_second, "at_least": d.at_least, "reset": d.reset}
                )
        cols = ["node", "port", "ifname", "label", "guid", "peer", "counter", "t0", "t1", "interval_s", "delta", "per_second", "at_least", "reset"]
        return pd.DataFrame(rows, columns=cols)

    def newest_samples(self, n: int = 2) -> list[tuple[dict[str, Any], list[PortCounters]]]:
        """Each port's newest ``n`` samples, oldest first, with its label, guid and peer (from the newest).

        Only those rows are read (SQL picks them), never the store's whole past: this is
        what the exporter reads on every change of the store.
        """
        facts_of: dict[tuple, dict[str, Any]] = {}
        samples: dict[tuple, list[PortCounters]] = {}
        for facts, pc in self._samples(None, None, latest_n=n):  # oldest first within each port
            key = (pc.node, pc.port, pc.ifname)
            facts_of[key] = facts
            samples.setdefault(key, []).append(pc)
        return [(facts_of[key], pcs) for key, pcs in samples.items()]

    def node_ids(self, name: str) -> set[str]:
        """The fabric node ids a person's name for a node means: its id, its label (host or switch name)
        or its GUID, as any stored sweep recorded them (case-insensitive; ``0x`` optional on a GUID)."""
        want = name.strip().lower()
        bare = want.removeprefix("0x")
        out: set[str] = set()
        for node, label, guid in self.db.execute("SELECT DISTINCT node, label, guid FROM counters"):
            g = (guid or "").lower().removeprefix("0x")
            if want in (str(node).lower(), str(label or "").lower()) or (bare and g == bare):
                out.add(str(node))
        for (node,) in self.db.execute("SELECT DISTINCT node FROM events"):
            if str(node).lower() == want:
                out.add(str(node))
        for ids, fname in self.db.execute("SELECT DISTINCT node_ids, name FROM findings"):
            try:
                nodes = [str(x) for x in json.loads(ids)]
            except (ValueError, TypeError):
                continue
            if len(nodes) == 1 and str(fname).lower() == want:
                out.update(nodes)
            out.update(n for n in nodes if n.lower() == want)
        return out

    def labels(self) -> dict[str, str]:
        """Each stored node id's label, as its newest counter sample recorded it."""
        # SQLite takes a bare column from the row that MAX() picked.
        return {str(n): str(lbl) for n, lbl, _ in self.db.execute(
            "SELECT node, label, MAX(timestamp) FROM counters WHERE label IS NOT NULL GROUP BY node")}

    def sweep_count(self) -> int:
        """How many sweeps the store holds."""
        return int(self.db.execute("SELECT COUNT(*) FROM sweeps").fetchone()[0])

    def flaps_per_week(self, since: float | None = None) -> pd.DataFrame:
        """Link flaps per port per ISO week (``2026-W49``): down events, or LinkDownedCounter deltas where larger.

        Columns: node, label, port, week, flaps; port-weeks without a flap are left out.
        """
        q = "SELECT node, port, timestamp FROM events WHERE state='down'" + (" AND timestamp >= ?" if since else "")
        ev = pd.DataFrame(self.db.execute(q, (since,) if since else ()).fetchall(), columns=["node", "port", "timestamp"])
        ev["flaps"] = 1.0
        rates = self.counter_rates(since=since, counter="link_downed")
        ctr = rates.rename(columns={"t1": "timestamp", "delta": "flaps"})[["node", "port", "timestamp", "flaps"]]
        out = []
        for frame, src in ((ev, "events"), (ctr, "counter")):
            if frame.empty:
                continue
            f = frame.copy()
            f["week"] = [_iso_week(t) for t in f["timestamp"]]
            f["src"] = src
            out.append(f.groupby(["node", "port", "week", "src"], as_index=False)["flaps"].sum())
        if not out:
            return pd.DataFrame(columns=["node", "label", "port", "week", "flaps"])
        both = pd.concat(out)
        res = both.groupby(["node", "port", "week"], as_index=False)["flaps"].max()
        res["flaps"] = res["flaps"].astype(int)
        res = res[res["flaps"] > 0]
        labels = self.labels()
        res.insert(1, "label", [labels.get(str(n), str(n)) for n in res["node"]])
        return res.sort_values(["week", "node", "port"]).reset_index(drop=True)

    def component_failures(self, min_severity: str = "error") -> pd.DataFrame:
        """Fault episodes per component: a run of consecutive sweeps with a finding on it is one episode.

        ``component`` is ``kind:identity`` (fabric ids and ports, as in a finding's key), ``name``
        the label it had in its latest sweep, ``id`` the finding id of its most frequent fault as the
        latest sweep that found it gave it, ``node_ids`` the fabric nodes it spans. Columns: id,
        component, name, kind, fault, episodes, faulty_sweeps, sweeps, observed_days,
        episodes_per_day, node_ids.
        """
        sweeps = self.sweeps()
        cols = ["id", "component", "name", "kind", "fault", "episodes", "faulty_sweeps", "sweeps", "observed_days",
                "episodes_per_day", "node_ids"]
        if sweeps.empty:
            return pd.DataFrame(columns=cols)
        order = {sid: i for i, sid in enumerate(sweeps["id"])}
        span_days = max((sweeps["at"].iloc[-1] - sweeps["at"].iloc[0]) / 86400.0, 0.0)
        # A rate read off less than MIN_RATE_DAYS of history is noise (two sweeps 103 s apart gave
        # "838.83 episodes a day"): none is given then.
        rated = span_days >= MIN_RATE_DAYS
        floor = severity_rank(min_severity)
        seen: dict[str, dict[str, Any]] = {}
        rows_in = self.db.execute(
            "SELECT sweep_id, component, kind, fault, severity, name, finding_id, node_ids FROM findings ORDER BY sweep_id")
        for sid, comp, kind, fault, sev, name, fid, ids in rows_in:
            if severity_rank(sev) < floor:
                continue
            s = seen.setdefault(comp, {"kind": kind, "faults": {}, "idx": set(), "ids": {}})
            s["name"], s["node_ids"] = name, ids
            s["idx"].add(order[sid])
            s["faults"][fault] = s["faults"].get(fault, 0) + 1
            s["ids"][fault] = fid
        rows = []
        for comp, s in sorted(seen.items()):
            idx = sorted(s["idx"])
            episodes = 1 + sum(1 for a, b in zip(idx, idx[1:], strict=False) if b != a + 1)
            fault = max(s["faults"], key=s["faults"].get)
            rows.append(
                {"id": s["ids"][fault], "component": comp, "name": s["name"], "kind": s["kind"], "fault": fault,
                 "episodes": episodes, "faulty_sweeps": len(idx), "sweeps": len(sweeps), "observed_days": span_days,
                 "episodes_per_day": episodes / span_days if rated else None, "node_ids": _json_list(s["node_ids"])}
            )
        return pd.DataFrame(rows, columns=cols)

    def kind_failure_rates(self, min_severity: str = "error") -> pd.DataFrame:
        """Fault episodes per component-hour by kind (link, switch, host/nic/gpu), over the history's span.

        The population is the mean count in the stored sweeps (links for
        links and ports, switches for switches, hosts for host, nic and gpu).
        Columns: kind, episodes, population, hours, per_component_hour.
        """
        comps = self.component_failures(min_severity)
        sweeps = self.sweeps()
        hours = (sweeps["at"].iloc[-1] - sweeps["at"].iloc[0]) / 3600.0 if len(sweeps) > 1 else 0.0
        pop_col = {"link": "links", "port": "links", "switch": "switches", "host": "hosts", "nic": "hosts", "gpu": "hosts"}
        rows = []
        for kind, group in comps.groupby("kind") if not comps.empty else []:
            col = pop_col.get(kind, "hosts")
            pop = float(sweeps[col].dropna().mean()) if sweeps[col].notna().any() else None
            rate = group["episodes"].sum() / (pop * hours) if pop and hours >= MIN_RATE_DAYS * 24 else None
            rows.append({"kind": kind, "episodes": int(group["episodes"].sum()), "population": pop, "hours": hours, "per_component_hour": rate})
        return pd.DataFrame(rows, columns=["kind", "episodes", "population", "hours", "per_component_hour"])

    def host_failure_rate(self, fabric: str | None = None) -> tuple[float, str] | None:
        """Hosts entering the drain list per host-hour (:func:`fabricdoc.impact.failure_rate.host_failure_rate`).

        ``fabric`` keeps only that fabric's sweeps (a store may hold several).
        """
        sweeps = self.sweeps()
        if fabric is not None:
            sweeps = sweeps[sweeps["fabric"] == fabric]
        drained: dict[int, set[str]] = {}
        for sid, node in self.db.execute("SELECT sweep_id, node FROM drains"):
            drained.setdefault(sid, set()).add(node)
        return host_failure_rate(
            Snapshot(float(r.at), int(r.hosts or 0), frozenset(drained.get(r.id, ()))) for r in sweeps.itertuples()
        )



def _json_list(text: str) -> list[str]:
    try:
        value = json.loads(text)
    except (ValueError, TypeError):
        return []
    return [str(x) for x in value] if isinstance(value, list) else []


def _own_base(pc: PortCounters) -> bool:
    """Whether a sample counts from its own sweep's base: a simulator's do (each run starts its counters
    afresh, and two sweeps' samples may even interleave in time); a real fabric's registers carry on."""
    return str(pc.source).startswith("sim")

def snapshots_from_reports(reports: Iterable[Report]) -> list[Snapshot]:
    """Saved reports as failure-rate snapshots (their time, host count and drain list)."""
    return [Snapshot(epoch(r.generated_at, "report time"), int(r.fabric.get("hosts", 0)),
                     frozenset(d.node for d in r.drain)) for r in reports]


def _iso_week(ts: float) -> str:
    y, w, _ = datetime.fromtimestamp(float(ts), UTC).isocalendar()
    return f"{y}-W{w:02d}"


def _port_facts(report: Report) -> tuple[dict[str, str], dict[str, str], dict[tuple[str, int], str]]:
    """Node labels, GUIDs and each port's link peer (``label[port]``) from the report's topology."""
    topo = report.topology or {}
    labels = {n["id"]: n["label"] for n in topo.get("nodes", [])}
    guids = {n["id"]: n["guid"] for n in topo.get("nodes", []) if n.get("guid")}
    peers: dict[tuple[str, int], str] = {}
    for lk in topo.get("links", []):
        (an, ap), (bn, bp) = lk["a"], lk["b"]
        peers[(an, ap)] = f"{labels.get(bn, bn)}[{bp}]"
        peers[(bn, bp)] = f"{labels.get(an, an)}[{ap}]"
    return labels, guids, peers
