"""ReportTab: what one tab of the main screen is. A new tab is a module here with one subclass,
listed in :data:`fabricdoc.tui.screens.main.TABS`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from textual.containers import Vertical
from textual.widget import Widget

from fabricdoc.report.report import Report

from ..index import ReportIndex
from ..widgets.table import ReportTable


@dataclass(frozen=True)
class TabContext:
    """What every tab is built from: the report's index, and how to build the impact model."""

    index: ReportIndex
    impact_factory: Callable[[Report], Any] | None = None


class ReportTab(Vertical):
    """One tab: its id, title and keys, filled the first time it is shown.

    Subclasses set ``TAB_ID`` and ``TITLE``, compose their widgets, fill them
    in :meth:`load` (called once, when the tab is first shown: big tables cost
    a fraction of a second), and name in :meth:`table` the table that ``/``
    filters. Keys only this tab has go in ``BINDINGS`` (they show in the
    footer while the tab has focus) and, for the help screen, in ``KEYS``.
    """

    TAB_ID: ClassVar[str]
    TITLE: ClassVar[str]
    KEYS: ClassVar[tuple[tuple[str, str], ...]] = ()
    """``(keys, what they do)`` lines for the help screen."""

    def __init__(self, context: TabContext) -> None:
        super().__init__(id=f"{self.TAB_ID}-tab")
        self.context = context
        self.index = context.index
        self.loaded = False

    def shown(self) -> None:
        """The tab became visible: fill it the first time."""
        if not self.loaded:
            self.loaded = True
            self.load()

    def load(self) -> None:
        """Fill the tab's widgets from the index."""

    def table(self) -> ReportTable | None:
        """The table ``/`` filters, if the tab has one."""
        return None

    def focus_target(self) -> Widget | None:
        """What gets the focus when the tab is shown."""
        return self.table()
