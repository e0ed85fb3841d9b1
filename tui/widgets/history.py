"""HistoryView: one sparkline per series (counter rates across sweeps, bandwidth by round)."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Sparkline

from ..formatting import fmt_num, safe
from ..series import time_span


class HistoryView(Vertical):
    """Series as sparklines with their range and last value, or a plain "no history" line."""

    def __init__(self, series: dict[str, list[float]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.series = {name: values for name, values in series.items() if values}

    def compose(self) -> ComposeResult:
        if not self.series:
            yield Label("no history", classes="dim")
            return
        for name, values in self.series.items():
            yield Label(safe(f"{name}  ({len(values)} samples: min {fmt_num(min(values))}, "
                             f"max {fmt_num(max(values))}, last {fmt_num(values[-1])})"))
            yield Sparkline(values, summary_function=max, classes="history")
            times = getattr(values, "times", ())
            if times:
                yield Label(safe(f"{time_span(times)}  (one bar per counter interval, oldest left)"), classes="dim axis")
