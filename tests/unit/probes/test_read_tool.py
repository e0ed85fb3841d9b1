"""The exec seam's read-only runner: a tool's output, or one line saying why there is none."""

from __future__ import annotations

from fabricdoc.probes.exec import read_tool


def test_read_tool_gives_the_output_or_one_line_saying_why_not():
    assert read_tool(["sh", "-c", "echo fine"], timeout_s=10, tool="sh") == ("fine\n", "")
    assert read_tool(["sh", "-c", "echo first >&2; echo Operation not supported >&2; exit 3"], timeout_s=10,
                     tool="sh") == (None, "Operation not supported")
    assert read_tool(["sh", "-c", "exit 4"], timeout_s=10, tool="sh") == (None, "exit status 4")
    assert read_tool(["sleep", "5"], timeout_s=0.2, tool="sleep") == (None, "sleep timed out after 0.2s")
    out, why = read_tool(["no-such-tool-here"], timeout_s=1, tool="no-such-tool-here")
    assert out is None and why.startswith("no-such-tool-here could not run")
