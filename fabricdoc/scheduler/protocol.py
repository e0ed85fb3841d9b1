"""What a scheduler back end does with a report: the one shape Slurm and Kubernetes share.

A back end names the scheduler's node for each fabric host (through the one
:class:`~fabricdoc.scheduler.names.NameMap`), says which of its nodes a report
tested, plans the drains for the report's drain list and the undrains for nodes
a fresh report cleared, and never touches a node that does not carry
fabricdoc's own mark (an admin's drain reason, another taint key). Plans are
argv lists; ``apply`` runs them with the runner the CLI gives it (no shell, a
timeout). Reading what the scheduler says now is the CLI's: the back end only plans.

The CLI reaches every back end through :func:`back_end` and this protocol. A
new scheduler is one module with a class of this shape and one line in
:data:`BACK_ENDS`; ``tests/unit/scheduler/test_protocol.py`` checks each entry
implements the protocol.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from fabricdoc.errors import ConfigError

if TYPE_CHECKING:
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler.names import NameMap


class Left(Protocol):
    """A node a plan leaves alone, and why; ``refused`` marks bad input (a name the scheduler rejects)."""

    why: str
    refused: bool


@runtime_checkable
class Scheduler(Protocol):
    """A scheduler back end: a report's drain list as that scheduler's actions, and their undoing.

    ``now`` is what the scheduler says about its nodes now, keyed by node name (Slurm:
    :class:`~fabricdoc.scheduler.slurm.NodeNow`; Kubernetes: each node's taints).
    """

    kind: ClassVar[str]  # the word on the command line: "slurm", "k8s"
    names: NameMap

    def node_name(self, host: str) -> str:
        """The scheduler's node name for a fabric host name (not yet checked)."""
        ...

    def name_problem(self, node: str) -> str | None:
        """None when the scheduler takes ``node`` as a node name, else one line saying why it is refused."""
        ...

    def tested_nodes(self, report: Report) -> Mapping[str, str] | None:
        """Node name -> fabric host of each host the report tested; None when it cannot show (no topology)."""
        ...

    def ours(self, now: Mapping[str, Any]) -> list[str]:
        """The nodes carrying fabricdoc's mark now (its drain reason, comment or taint): every other
        node's state is someone else's decision, and an undrain never touches it."""
        ...

    def plan_drain(self, report: Report, now: Mapping[str, Any] | None = None) -> tuple[list[Any], list[Left]]:
        """The actions that take the report's drain list out of service, and the nodes left alone
        (refused names; with ``now``, nodes the scheduler lacks or that are already out or not ours)."""
        ...

    def plan_undrain(self, report: Report, now: Mapping[str, Any],
                     candidates: Iterable[str] | None = None) -> tuple[list[Any], list[Left]]:
        """The actions that put back the nodes of ``candidates`` (default: :meth:`ours`) that the
        report tested and no longer drains, and the nodes kept out with why."""
        ...

    def apply(self, actions: Sequence[Any], run: Callable[..., Any]) -> list[Any]:
        """Run each action's argv with ``run``; one failure does not stop the rest. Each result has
        ``ok``, ``returncode`` (None: timed out) and ``output``."""
        ...


# kind -> "module:Class", imported only when asked for: the NPD check must not pay for Slurm's imports.
BACK_ENDS: dict[str, str] = {
    "slurm": "fabricdoc.scheduler.slurm:Slurm",
    "k8s": "fabricdoc.scheduler.k8s:Kubernetes",
}


def back_end_class(kind: str) -> Callable[..., Scheduler]:
    """The class of the back end ``kind``; an unknown kind is a ConfigError naming the known ones."""
    if kind not in BACK_ENDS:
        raise ConfigError(f"no scheduler back end {kind!r} (known: {', '.join(sorted(BACK_ENDS))})")
    module, _, name = BACK_ENDS[kind].partition(":")
    cls: Callable[..., Scheduler] = getattr(importlib.import_module(module), name)
    return cls


def back_end(kind: str, **options: Any) -> Scheduler:
    """The back end ``kind`` set up with ``options`` (its names, tool paths, mode)."""
    return back_end_class(kind)(**options)
