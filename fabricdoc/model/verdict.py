"""The verdict of a report and the exit codes every command shares: one type with its meaning and its code.

The help of every command, the README's table and the JSON Schema are written from :class:`Verdict`
(a test holds the README to it), so what ``degraded`` or ``incomplete`` means is said once.
"""

from __future__ import annotations

import textwrap
from enum import StrEnum

EXIT_OK = 0  # healthy, or the command did what was asked
EXIT_FAULTS = 1  # faults found (verdict fail or degraded)
EXIT_CANNOT_RUN = 2  # could not run, or could not see everything it planned (verdict incomplete)
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM: the partial report is kept


class Verdict(StrEnum):
    """What a sweep or an analysis concluded; compares equal to its JSON string (``"pass"`` ...)."""

    PASS = "pass"
    DEGRADED = "degraded"
    FAIL = "fail"
    INCOMPLETE = "incomplete"

    @property
    def exit_code(self) -> int:
        """The process exit code of a command that ends with this verdict."""
        return _EXIT[self]

    @property
    def meaning(self) -> str:
        """What it says, in one sentence (the help, the README and the schema show it)."""
        return _MEANING[self]

    @property
    def rank(self) -> int:
        """How bad, for comparing two reports: pass < incomplete < degraded < fail."""
        return _RANK[self]

    @classmethod
    def parse(cls, text: object) -> Verdict:
        """The verdict ``text`` names; anything else reads as :attr:`INCOMPLETE` (a verdict not understood
        backs nothing)."""
        try:
            return cls(str(text))
        except ValueError:
            return cls.INCOMPLETE


_EXIT = {Verdict.PASS: EXIT_OK, Verdict.DEGRADED: EXIT_FAULTS, Verdict.FAIL: EXIT_FAULTS,
         Verdict.INCOMPLETE: EXIT_CANNOT_RUN}
_RANK = {Verdict.PASS: 0, Verdict.INCOMPLETE: 1, Verdict.DEGRADED: 2, Verdict.FAIL: 3}
_MEANING = {
    Verdict.PASS: "everything planned was probed and tested, and nothing is wrong",
    Verdict.DEGRADED: "only warnings: something is worse than it should be, nothing to drain",
    Verdict.FAIL: "faults found in what was seen (the report also lists what was not seen)",
    Verdict.INCOMPLETE: "something planned could not be seen (a test that could not run, a part the group "
                        "tests never loaded, isolation stopped by its cap, measurements that contradict the "
                        "topology) and nothing wrong was found in the rest; one line on stderr says what",
}


def verdict_lines(indent: str = "  ", width: int | None = None) -> list[str]:
    """One line per verdict, ``pass (exit 0): meaning``: the shared text of the help, README and schema
    (wrapped at ``width``, its further lines indented, where given)."""
    out = []
    for v in Verdict:
        line = f"{indent}{v.value} (exit {v.exit_code}): {v.meaning}"
        out += textwrap.wrap(line, width, subsequent_indent=indent + "  ") if width else [line]
    return out


def exit_codes_help() -> str:
    """The ``exit codes:`` epilog of every command that reports a verdict."""
    return "\n".join([
        "exit codes:",
        "  0  the verdict is pass (or: the command did what was asked)",
        "  1  faults found: the verdict is fail or degraded",
        "  2  the verdict is incomplete, or the command could not run at all: one line on stderr says why",
        "     (file and line for bad input, the tool for a failing tool, the first thing not seen)",
        "  130  interrupted (Ctrl-C or SIGTERM): what finished is kept",
        "verdicts:",
        *verdict_lines(width=104),
    ]) + "\n"
