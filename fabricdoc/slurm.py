"""Slurm actions from a report: fabric names to Slurm node names, drain and resume commands.

Node names come from the fabric (untrusted text): they are mapped to Slurm
names by a user map and hostname rules, then checked against a strict hostname
charset; a name that fails is refused, never passed on. Commands are argv lists
run without a shell, each with a timeout. Drain reasons are sanitized and start
with ``fabricdoc:`` so resume only ever undoes fabricdoc's own drains.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml

from fabricdoc.errors import ConfigError, FabricdocError, ParseError, ProbeError
from fabricdoc.report import Report

REASON_PREFIX = "fabricdoc: "
REASON_MAX_CHARS = 128
# Letters, digits, '.', '_' and '-', starting with a letter or digit: what a
# Slurm NodeName and a hostname share. No brackets or commas (hostlist syntax),
# no '=' or spaces (scontrol argument syntax), nothing a shell would read.
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_RESERVED = {"all"}  # scontrol/sinfo give these special meanings
_REASON_OK = re.compile(r"[^A-Za-z0-9 _.,:;/()+#@%\[\]-]")
_DEFAULT_TIMEOUT_S = 30.0


class UnsafeNodeName(FabricdocError):
    """A node name that is not a valid Slurm hostname; it is refused, never executed."""


def check_node_name(name: str) -> str:
    """Return ``name`` when it is a plain Slurm hostname, else raise :class:`UnsafeNodeName`."""
    if not isinstance(name, str) or not _NODE_NAME.fullmatch(name):
        raise UnsafeNodeName(
            f"refusing node name {name!r}: a Slurm node name is letters, digits, '.', '_' and '-' "
            "(starting with a letter or digit, at most 253 characters)"
        )
    if name.lower() in _RESERVED:
        raise UnsafeNodeName(f"refusing node name {name!r}: reserved word in Slurm")
    return name


def sanitize_reason(text: str, limit: int = REASON_MAX_CHARS) -> str:
    """A drain reason safe for ``scontrol`` and a terminal: prefixed, plain charset, bounded length."""
    body = _REASON_OK.sub("_", " ".join(str(text).split()))
    reason = REASON_PREFIX + body
    if len(reason) > limit:
        reason = reason[: limit - 3].rstrip() + "..."
    return reason


# -- name mapping ----------------------------------------------------------


@dataclass(frozen=True)
class HostRule:
    """Rewrite a fabric name that fully matches ``pattern`` with ``replacement`` (``\\1``, ``\\g<name>``)."""

    pattern: re.Pattern[str]
    replacement: str

    @staticmethod
    def of(pattern: str, replacement: str, where: str = "--host-rule") -> HostRule:
        try:
            return HostRule(re.compile(pattern), replacement)
        except re.error as exc:
            raise ConfigError(f"{where}: invalid regular expression {pattern!r}: {exc}") from None

    def apply(self, name: str) -> str | None:
        m = self.pattern.fullmatch(name)
        if m is None:
            return None
        try:
            return m.expand(self.replacement)
        except (re.error, IndexError) as exc:
            raise ConfigError(f"host rule {self.pattern.pattern!r}: bad replacement {self.replacement!r}: {exc}") from None


@dataclass(frozen=True)
class NameMap:
    """Fabric host name -> Slurm node name: exact map entries first, then the first matching rule, else unchanged."""

    names: Mapping[str, str] = field(default_factory=dict)
    rules: tuple[HostRule, ...] = ()

    def to_slurm(self, fabric_name: str) -> str:
        """The Slurm name for a fabric host name (not yet checked: see :func:`check_node_name`)."""
        if fabric_name in self.names:
            return self.names[fabric_name]
        for rule in self.rules:
            out = rule.apply(fabric_name)
            if out is not None:
                return out
        return fabric_name

    def with_rules(self, rules: Iterable[HostRule]) -> NameMap:
        return NameMap(dict(self.names), tuple(self.rules) + tuple(rules))


_MAP_KEYS = {"names", "rules"}
_RULE_KEYS = {"match", "replace"}


def load_name_map(path: str | Path) -> NameMap:
    """Read a map file: YAML (``names:`` mapping, ``rules:`` list of ``{match, replace}``) or two-column text.

    Text form: one ``FABRIC_NAME SLURM_NAME`` per line, ``#`` comments; the
    Slurm name is the last column, so fabric names may contain spaces
    (InfiniBand node descriptions such as ``node0001 mlx5_0``).
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read name map: {exc.strerror}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        return _parse_yaml_map(text, str(path))
    return parse_text_map(text, str(path))


def parse_text_map(text: str, source: str = "name map") -> NameMap:
    """Parse the two-column text form of a name map."""
    names: dict[str, str] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.rsplit(None, 1)
        if len(parts) != 2:
            raise ParseError(source, no, raw, "expected 'FABRIC_NAME SLURM_NAME'")
        fabric, slurm = parts[0].strip(), parts[1]
        if fabric in names and names[fabric] != slurm:
            raise ParseError(source, no, raw, f"{fabric!r} is mapped twice")
        names[fabric] = slurm
    return NameMap(names)


def _parse_yaml_map(text: str, source: str) -> NameMap:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ParseError(source, (mark.line + 1) if mark else 0, "", f"not valid YAML: {exc}") from None
    if data is None:
        return NameMap()
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with keys 'names' and/or 'rules'")
    unknown = set(data) - _MAP_KEYS
    if unknown:
        raise ConfigError(f"{source}: unknown key {sorted(map(str, unknown))[0]!r} (allowed: names, rules)")
    names = data.get("names") or {}
    if not isinstance(names, dict):
        raise ConfigError(f"{source}: key 'names' must be a mapping of fabric name to Slurm name")
    for k, v in names.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ConfigError(f"{source}: names.{k}: fabric and Slurm names must be strings")
    rules = []
    for i, r in enumerate(data.get("rules") or []):
        where = f"{source}: rules[{i}]"
        if not isinstance(r, dict):
            raise ConfigError(f"{where}: expected {{match: REGEX, replace: TEXT}}")
        bad = set(r) - _RULE_KEYS
        if bad:
            raise ConfigError(f"{where}: unknown key {sorted(map(str, bad))[0]!r} (allowed: match, replace)")
        if not isinstance(r.get("match"), str) or not isinstance(r.get("replace"), str):
            raise ConfigError(f"{where}: 'match' and 'replace' are both required strings")
        rules.append(HostRule.of(r["match"], r["replace"], where))
    return NameMap(dict(names), tuple(rules))


# -- planning --------------------------------------------------------------


@dataclass(frozen=True)
class SlurmAction:
    """One scontrol call to make: the Slurm node, why, and the exact argv."""

    action: Literal["drain", "resume"]
    node: str
    fabric_name: str
    reason: str
    findings: tuple[str, ...]
    argv: tuple[str, ...]

    def display(self) -> str:
        return format_argv(self.argv)


@dataclass(frozen=True)
class Skipped:
    """A node fabricdoc will not act on, and why (unsafe name, still faulty, not tested)."""

    fabric_name: str
    node: str | None
    why: str
    refused: bool = False  # True for unsafe names: an input problem, not a decision


def drain_argv(node: str, reason: str, scontrol: str = "scontrol") -> tuple[str, ...]:
    return (scontrol, "update", f"nodename={check_node_name(node)}", "state=drain", f"reason={reason}")


def resume_argv(node: str, scontrol: str = "scontrol") -> tuple[str, ...]:
    return (scontrol, "update", f"nodename={check_node_name(node)}", "state=resume")


def format_argv(argv: Iterable[str]) -> str:
    """The argv as one copy-pasteable shell line: ``reason="..."`` in double quotes, the rest quoted only if needed."""
    out = []
    for arg in argv:
        key, eq, value = arg.partition("=")
        if eq and key == "reason" and not _REASON_OK.search(value):
            out.append(f'reason="{value}"')  # the sanitized charset has nothing a shell expands
        else:
            out.append(shlex.quote(arg))
    return " ".join(out)


def plan_drain(report: Report, names: NameMap | None = None, scontrol: str = "scontrol") -> tuple[list[SlurmAction], list[Skipped]]:
    """The drain commands for a report's drain list; unsafe names come back refused, not planned."""
    names = names or NameMap()
    actions: list[SlurmAction] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for entry in report.drain:
        node = names.to_slurm(entry.node)
        try:
            check_node_name(node)
        except UnsafeNodeName as exc:
            skipped.append(Skipped(entry.node, node, str(exc), refused=True))
            continue
        if node in seen:
            continue
        seen.add(node)
        ids = tuple(entry.findings)
        why = entry.reason + (f" [{','.join(ids)}]" if ids else "")
        reason = sanitize_reason(why)
        actions.append(SlurmAction("drain", node, entry.node, reason, ids, drain_argv(node, reason, scontrol)))
    return actions, skipped


def report_hosts(report: Report) -> set[str] | None:
    """Fabric host names the report covered (from its topology), or None when it has no topology."""
    if not report.topology:
        return None
    return {
        str(n.get("attrs", {}).get("host") or n["label"])
        for n in report.topology.get("nodes", [])
        if n.get("kind") == "host"
    }


def plan_resume(
    later: Report,
    candidates: Iterable[str],
    names: NameMap | None = None,
    scontrol: str = "scontrol",
) -> tuple[list[SlurmAction], list[Skipped]]:
    """Resume the candidate Slurm nodes the later report no longer drains and did test.

    ``candidates`` are Slurm node names (fabricdoc's drained nodes from
    ``sinfo -R``, or an earlier report's drain list mapped). A node still in
    the later drain list, or absent from the later report's hosts, stays drained.
    """
    names = names or NameMap()
    still = {names.to_slurm(d.node): d for d in later.drain}
    tested_fabric = report_hosts(later)
    tested = None if tested_fabric is None else {names.to_slurm(h): h for h in tested_fabric}
    actions: list[SlurmAction] = []
    skipped: list[Skipped] = []
    for node in sorted(dict.fromkeys(candidates)):
        try:
            check_node_name(node)
        except UnsafeNodeName as exc:
            skipped.append(Skipped(node, node, str(exc), refused=True))
            continue
        if node in still:
            d = still[node]
            skipped.append(Skipped(d.node, node, f"still faulty in the later report: {d.reason}"))
            continue
        if tested is None:
            skipped.append(Skipped(node, node, "the later report has no topology, so it cannot show this node was tested"))
            continue
        if node not in tested:
            skipped.append(Skipped(node, node, "not in the later report's fabric: not tested, kept drained"))
            continue
        actions.append(SlurmAction("resume", node, tested[node], "", (), resume_argv(node, scontrol)))
    return actions, skipped


# -- talking to Slurm --------------------------------------------------------


@dataclass(frozen=True)
class ApplyResult:
    """What one scontrol call did: exit status (None if it timed out) and its output."""

    action: SlurmAction
    returncode: int | None
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def _env(slurm_conf: str | None) -> dict[str, str] | None:
    if slurm_conf is None:
        return None
    env = dict(os.environ)
    env["SLURM_CONF"] = slurm_conf
    return env


def _run(argv: tuple[str, ...] | list[str], timeout_s: float, slurm_conf: str | None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout_s, check=False, env=_env(slurm_conf)
        )
    except FileNotFoundError:
        raise ProbeError(argv[0], "not found: is Slurm installed and on PATH (or pass --scontrol/--sinfo)?", "unsupported") from None


def apply(actions: Iterable[SlurmAction], *, timeout_s: float = _DEFAULT_TIMEOUT_S, slurm_conf: str | None = None) -> list[ApplyResult]:
    """Run each action's argv (no shell, with a timeout); one failure does not stop the rest."""
    results = []
    for act in actions:
        try:
            cp = _run(act.argv, timeout_s, slurm_conf)
        except subprocess.TimeoutExpired:
            results.append(ApplyResult(act, None, f"timed out after {timeout_s:g}s"))
            continue
        out = " ".join((cp.stdout + " " + cp.stderr).split())
        results.append(ApplyResult(act, cp.returncode, out))
    return results


SINFO_FORMAT = "%N|%T|%E"


def parse_sinfo_reasons(text: str, source: str = "sinfo -R") -> dict[str, tuple[str, str]]:
    """Parse ``sinfo -R -N -h -o '%N|%T|%E'``: node -> (state, reason). The reason may itself hold '|'."""
    out: dict[str, tuple[str, str]] = {}
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|", 2)
        if len(parts) != 3 or not parts[0]:
            raise ParseError(source, no, line, f"expected NODE|STATE|REASON ({SINFO_FORMAT})")
        out[parts[0].strip()] = (parts[1].strip(), parts[2].strip())
    return out


def drained_nodes(*, sinfo: str = "sinfo", timeout_s: float = _DEFAULT_TIMEOUT_S, slurm_conf: str | None = None) -> dict[str, tuple[str, str]]:
    """Nodes Slurm lists with a reason (drained, draining, down): node -> (state, reason)."""
    argv = [sinfo, "-R", "-N", "-h", "-o", SINFO_FORMAT]
    try:
        cp = _run(argv, timeout_s, slurm_conf)
    except subprocess.TimeoutExpired:
        raise ProbeError("sinfo", f"timed out after {timeout_s:g}s (is slurmctld up?)", "timeout") from None
    if cp.returncode != 0:
        msg = " ".join(cp.stderr.split()) or f"exit status {cp.returncode}"
        raise ProbeError("sinfo", msg)
    return parse_sinfo_reasons(cp.stdout)


def fabricdoc_drained(reasons: Mapping[str, tuple[str, str]]) -> list[str]:
    """The nodes whose drain reason fabricdoc wrote (an admin's drains are never touched)."""
    return sorted(n for n, (_, why) in reasons.items() if why.startswith(REASON_PREFIX.strip()))


# -- hostlist expressions ------------------------------------------------------


def expand_hostlist(expr: str, source: str = "hostlist") -> list[str]:
    """Expand a Slurm hostlist (``gpu[001-003,007],login1``) into names, in order, like ``scontrol show hostnames``.

    Ranges keep the zero padding of their lower bound; several bracket groups
    in one name expand as a product. A malformed expression is a ParseError.
    """
    out: list[str] = []
    for item in _split_top(expr, source):
        out.extend(_expand_one(item, source, expr))
    return list(dict.fromkeys(out))


def _split_top(expr: str, source: str) -> list[str]:
    items, depth, cur = [], 0, []
    for ch in expr.strip():
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ParseError(source, 1, expr, "unbalanced ']'")
        if ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        elif not ch.isspace() or depth:
            cur.append(ch)
    if depth:
        raise ParseError(source, 1, expr, "unbalanced '['")
    items.append("".join(cur))
    return [i for i in items if i]


def _expand_one(item: str, source: str, expr: str) -> list[str]:
    start = item.find("[")
    if start < 0:
        return [item]
    end = item.find("]", start)
    if end < 0:
        raise ParseError(source, 1, expr, "unbalanced '['")
    head, body, tail = item[:start], item[start + 1 : end], item[end + 1 :]
    if tail and "[" not in tail:
        raise ParseError(source, 1, expr, f"text {tail!r} after ']' (Slurm allows only another [range] there)")
    values: list[str] = []
    for part in body.split(","):
        lo, dash, hi = part.partition("-")
        if not lo.isdigit() or (dash and not hi.isdigit()):
            raise ParseError(source, 1, expr, f"bad range {part!r}")
        if not dash:
            values.append(lo)
            continue
        a, b = int(lo), int(hi)
        if b < a or b - a > 100_000:
            raise ParseError(source, 1, expr, f"bad range {part!r}")
        width = len(lo)
        values.extend(f"{i:0{width}d}" for i in range(a, b + 1))
    rest = _expand_one(tail, source, expr)
    return [f"{head}{v}{r}" for v in values for r in rest]
