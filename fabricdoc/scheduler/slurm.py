"""Slurm actions from a report: fabric names to Slurm node names, drain and resume commands.

Node names come from the fabric (untrusted text): they are mapped to Slurm
names by a user map and hostname rules, then checked against a strict hostname
charset; a name that fails is refused, never passed on. Commands are argv lists
run without a shell, each with a timeout.

A drain reason starts with a tag that fits ``sinfo -R``'s default 20-character
REASON column and says the fault: ``fd:<fault> <tag>``, where ``<tag>`` is six
hex digits of the finding's stable key (the same fault on the same part has the
same tag in every sweep), e.g. ``fd:symbol_err 3fa2c1 its cable leaf01[3] ...``.
Only a reason starting ``fd:`` (or ``fabricdoc:``, as earlier versions wrote)
is fabricdoc's own: resume never touches any other.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from fabricdoc.errors import FabricdocError
from fabricdoc.model.hostlist import expand_hostlist
from fabricdoc.report.drain import short_fault, worst_finding
from fabricdoc.report.report import Report
from fabricdoc.scheduler.names import NameMap, tested_nodes

REASON_TAG = "fd:"
OUR_PREFIXES = (REASON_TAG, "fabricdoc:")  # "fabricdoc: ..." is what earlier versions wrote
REASON_MAX_CHARS = 128
SINFO_REASON_WIDTH = 20  # sinfo -R's default REASON column
# Letters, digits, '.', '_' and '-', starting with a letter or digit: what a
# Slurm NodeName and a hostname share. No brackets or commas (hostlist syntax),
# no '=' or spaces (scontrol argument syntax), nothing a shell would read.
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_RESERVED = {"all"}  # scontrol/sinfo give these special meanings
_REASON_OK = re.compile(r"[^A-Za-z0-9 _.,:;/()+#@%\[\]-]")


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


def is_ours(reason: str) -> bool:
    """Whether a Slurm reason is one fabricdoc wrote (an admin's reason never is)."""
    return reason.strip().startswith(OUR_PREFIXES)


def fault_tag(fault: str, tag: str) -> str:
    """``fd:<fault> <tag>``: at most 20 characters, the part ``sinfo -R`` shows by default."""
    return _REASON_OK.sub("_", f"{REASON_TAG}{short_fault(fault)} {tag}")


def sanitize_reason(text: str, head: str = REASON_TAG + "drain", limit: int = REASON_MAX_CHARS) -> str:
    """A drain reason safe for ``scontrol`` and a terminal: ``head`` (the fault tag) first, then the
    details in a plain charset, bounded length."""
    body = _REASON_OK.sub("_", " ".join(str(text).split()))
    reason = f"{head} {body}".strip() if head.startswith(REASON_TAG) else f"{REASON_TAG}drain {body}".strip()
    if len(reason) > limit:
        reason = reason[: limit - 3].rstrip() + "..."
    return reason


# -- planning --------------------------------------------------------------


@dataclass(frozen=True)
class SlurmAction:
    """One scontrol call to make: the Slurm node, why, and the exact argv."""

    action: Literal["drain", "resume", "comment", "uncomment"]
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


def comment_argv(node: str, comment: str, scontrol: str = "scontrol") -> tuple[str, ...]:
    """Annotate without draining (comment-only mode): the node keeps running jobs."""
    return (scontrol, "update", f"nodename={check_node_name(node)}", f"comment={comment}")


# -- what Slurm says now -------------------------------------------------------

# States a node may be drained from: in service, nobody else's decision on it.
IN_SERVICE = frozenset({"idle", "allocated", "mixed", "completing", "planned"})
_STATE_FLAGS = "*~#!%$@^-+"  # sinfo's suffixes: not responding, powered off, rebooting, ...


@dataclass(frozen=True)
class NodeNow:
    """One node as Slurm reports it now: state, reason (``""`` for none), comment, reservation."""

    state: str
    reason: str = ""
    comment: str = ""
    reservation: str | None = None  # "name (FLAGS)" of an active reservation holding the node

    @property
    def base(self) -> str:
        return self.state.rstrip(_STATE_FLAGS).lower()


def slurm_now(nodes: Mapping[str, tuple[str, str]], reservations: Iterable[Mapping[str, str]] = ()
              ) -> dict[str, NodeNow]:
    """Node states (``SlurmTools.nodes()``) joined with the active reservations' node lists (Slurm
    hostlists; a malformed one is a ParseError naming the reservation)."""
    held: dict[str, str] = {}
    for res in reservations:
        for node in expand_hostlist(res["nodes"], f"reservation {res['name']}", 0):
            held.setdefault(node, f"{res['name']} ({res.get('flags') or 'no flags'})")
    return {n: NodeNow(state, reason, reservation=held.get(n)) for n, (state, reason) in nodes.items()}


def drain_blocker(now: NodeNow) -> str | None:
    """Why fabricdoc must not drain this node (someone else's drain, down, maintenance), or None."""
    if is_ours(now.reason):
        return f"already {now.state} by fabricdoc ({now.reason})"
    if now.base not in IN_SERVICE:
        return f"{now.state} by someone else (reason: {now.reason or 'none'}): left alone"
    if now.reason:
        return f"carries someone else's reason ({now.reason}): left alone"
    if now.reservation:
        return f"in reservation {now.reservation}: left alone"
    return None


def resume_argv(node: str, scontrol: str = "scontrol") -> tuple[str, ...]:
    return (scontrol, "update", f"nodename={check_node_name(node)}", "state=resume")


def format_argv(argv: Iterable[str]) -> str:
    """The argv as one copy-pasteable shell line: ``reason="..."`` in double quotes, the rest quoted only if needed."""
    out = []
    for arg in argv:
        key, eq, value = arg.partition("=")
        if eq and key in ("reason", "comment") and not _REASON_OK.search(value):
            out.append(f'{key}="{value}"')  # the sanitized charset has nothing a shell expands
        else:
            out.append(shlex.quote(arg))
    return " ".join(out)


def plan_drain(report: Report, names: NameMap | None = None, scontrol: str = "scontrol",
               now: Mapping[str, NodeNow] | None = None, mode: str = "drain",
               ) -> tuple[list[SlurmAction], list[Skipped]]:
    """The drain (or, in comment mode, comment) commands for a report's drain list.

    With ``now`` (what Slurm says about its nodes), a node already drained, down,
    in maintenance or reserved, or carrying someone else's reason, is left alone
    and listed as skipped; a node Slurm does not know is refused. Unsafe names are
    refused, never planned.
    """
    names = names or NameMap()
    by_key = {f.key: f for f in report.findings}
    actions: list[SlurmAction] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    for entry in report.drain:
        node = names.node_name(entry.node)
        try:
            check_node_name(node)
        except UnsafeNodeName as exc:
            skipped.append(Skipped(entry.node, node, str(exc), refused=True))
            continue
        if node in seen:
            continue
        seen.add(node)
        if now is not None:
            if node not in now:
                skipped.append(Skipped(entry.node, node, f"Slurm has no node {node!r} (check --map/--host-rule)",
                                       refused=True))
                continue
            blocker = drain_blocker(now[node]) if mode == "drain" else (
                f"already annotated by fabricdoc ({now[node].comment})" if is_ours(now[node].comment) else None)
            if blocker:
                skipped.append(Skipped(entry.node, node, blocker))
                continue
        keys = tuple(entry.findings)
        found = [by_key[k] for k in keys if k in by_key]
        worst = worst_finding(found)
        head = fault_tag(worst.fault, worst.id) if worst else REASON_TAG + "drain"
        others = [f.id for f in found if f is not worst]
        why = entry.reason + (f" [+{','.join(others)}]" if others else "")
        reason = sanitize_reason(why, head)
        if mode == "comment":
            actions.append(SlurmAction("comment", node, entry.node, reason, keys, comment_argv(node, reason, scontrol)))
        else:
            actions.append(SlurmAction("drain", node, entry.node, reason, keys, drain_argv(node, reason, scontrol)))
    return actions, skipped


def plan_resume(
    later: Report,
    candidates: Iterable[str],
    names: NameMap | None = None,
    scontrol: str = "scontrol",
    now: Mapping[str, NodeNow] | None = None,
    mode: str = "drain",
) -> tuple[list[SlurmAction], list[Skipped]]:
    """Resume (or un-comment) the candidate Slurm nodes the later report no longer drains and did test.

    ``candidates`` are Slurm node names (fabricdoc's drained nodes from
    ``sinfo -R``, or an earlier report's drain list mapped). A node still in
    the later drain list, or absent from the later report's hosts, stays drained;
    a later report that did not see everything it planned resumes nothing. With
    ``now``, only a node whose reason (comment, in comment mode) is fabricdoc's
    own is resumed: an admin's drain is never touched.
    """
    names = names or NameMap()
    coverage = later.coverage or {}
    blind = coverage.get("complete", True) is False
    still = {names.node_name(d.node): d for d in later.drain}
    tested = tested_nodes(later, names)
    actions: list[SlurmAction] = []
    skipped: list[Skipped] = []
    for node in sorted(dict.fromkeys(candidates)):
        try:
            check_node_name(node)
        except UnsafeNodeName as exc:
            skipped.append(Skipped(node, node, str(exc), refused=True))
            continue
        if now is not None:
            mine = now[node].comment if mode == "comment" and node in now else now[node].reason if node in now else ""
            if not is_ours(mine):
                what = "comment" if mode == "comment" else "drain"
                why = (f"Slurm has no node {node!r}" if node not in now else
                       f"its {what} is not fabricdoc's now ({now[node].state}, {mine or 'no reason'}): left alone")
                skipped.append(Skipped(node, node, why))
                continue
        if node in still:
            d = still[node]
            skipped.append(Skipped(d.node, node, f"still faulty in the later report: {d.reason}"))
            continue
        if blind:
            skipped.append(Skipped(node, node, f"the later report did not see everything it planned "
                                   f"({coverage.get('not_seen_count', '?')} not seen): kept until a complete sweep"))
            continue
        if tested is None:
            skipped.append(Skipped(node, node, "the later report has no topology, so it cannot show this node was tested"))
            continue
        if node not in tested:
            skipped.append(Skipped(node, node, "not in the later report's fabric: not tested, kept drained"))
            continue
        if mode == "comment":
            actions.append(SlurmAction("uncomment", node, tested[node], "", (), comment_argv(node, "", scontrol)))
        else:
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


def apply(actions: Iterable[SlurmAction], run: Callable[[Sequence[str]], tuple[int | None, str]]) -> list[ApplyResult]:
    """Run each action's argv with ``run`` (the CLI passes the Slurm tools of
    :mod:`fabricdoc.sources.slurm`: no shell, a timeout); one failure does not stop the rest."""
    return [ApplyResult(act, *run(act.argv)) for act in actions]


# -- the back end ------------------------------------------------------------


@dataclass(frozen=True)
class Slurm:
    """Slurm as a :class:`~fabricdoc.scheduler.protocol.Scheduler`: ``scontrol`` drains and resumes
    (or, in comment mode, comments), never over a node whose reason is not fabricdoc's."""

    names: NameMap = field(default_factory=NameMap)
    scontrol: str = "scontrol"
    mode: str = "drain"  # "drain", or "comment": annotate the node, keep it in service
    kind: ClassVar[str] = "slurm"

    def node_name(self, host: str) -> str:
        """The Slurm node name for a fabric host name (not yet checked)."""
        return self.names.node_name(host)

    def name_problem(self, node: str) -> str | None:
        """None for a plain Slurm hostname, else why it is refused."""
        try:
            check_node_name(node)
        except UnsafeNodeName as exc:
            return str(exc)
        return None

    def tested_nodes(self, report: Report) -> dict[str, str] | None:
        """Slurm node name -> fabric host of each host the report tested (None: no topology)."""
        return tested_nodes(report, self.names)

    def ours(self, now: Mapping[str, Any]) -> list[str]:
        """The nodes whose reason (comment, in comment mode) fabricdoc wrote."""
        return sorted(n for n, node in now.items() if is_ours(node.comment if self.mode == "comment" else node.reason))

    def plan_drain(self, report: Report, now: Mapping[str, Any] | None = None) -> tuple[list[SlurmAction], list[Skipped]]:
        """:func:`plan_drain` with this back end's names, scontrol and mode."""
        return plan_drain(report, self.names, self.scontrol, now, self.mode)

    def plan_undrain(self, report: Report, now: Mapping[str, Any],
                     candidates: Iterable[str] | None = None) -> tuple[list[SlurmAction], list[Skipped]]:
        """:func:`plan_resume` of ``candidates`` (default: the nodes fabricdoc drained, by ``now``)."""
        todo = self.ours(now) if candidates is None else candidates
        return plan_resume(report, todo, self.names, self.scontrol, now, self.mode)

    def apply(self, actions: Sequence[SlurmAction], run: Callable[[Sequence[str]], tuple[int | None, str]]
              ) -> list[ApplyResult]:
        """Run each scontrol argv with ``run`` (:func:`apply`)."""
        return apply(actions, run)
