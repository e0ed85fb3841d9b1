"""Panel: a bordered block of text that never parses markup."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static


class Panel(Static):
    """A block of :class:`~rich.text.Text` (from the view) or of the app's own plain text."""

    def __init__(self, content: Text | str = "", **kwargs: Any) -> None:
        super().__init__(_trim(content), markup=False, **kwargs)

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        super().update(_trim(content), layout=layout)


def _trim(content: Any) -> Any:
    """Drop the trailing newline a block of lines ends with (it would show as a blank row)."""
    if isinstance(content, Text):
        content = content.copy()
        content.rstrip()
    elif isinstance(content, str):
        content = content.rstrip()
    return content
