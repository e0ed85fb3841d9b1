"""infiniband-diags and ibsim: a runner through the exec seam, and one pure parser per tool.

Every parser bounds the port numbers and port counts it reads with :func:`check_port` and
:func:`check_port_count`: IBTA NodeInfo NumPorts and every PortNum field are 8 bits.
"""

from __future__ import annotations

from fabricdoc.errors import ParseError

# IBTA NodeInfo NumPorts is 8 bits (a Quantum-2 switch says 65, an XDR Q3400 a few more).
MAX_PORTS = 255


def check_port_count(count: int, source: str, line_no: int, line: str) -> int:
    """``count`` when it is a port count a node can declare (1..255), else a ParseError naming the line."""
    if not 1 <= count <= MAX_PORTS:
        raise ParseError(source, line_no, line, f"a node with {count} ports: NumPorts is 1..{MAX_PORTS}")
    return count


def check_port(port: int, source: str, line_no: int, line: str, *, lowest: int = 1,
               highest: int = MAX_PORTS, what: str = "port") -> int:
    """``port`` when it lies in ``lowest..highest`` (a cable's ends: 1..255; 0 is a switch's
    management port), else a ParseError naming the line."""
    if not lowest <= port <= highest:
        raise ParseError(source, line_no, line, f"{what} {port} is outside {lowest}..{highest}")
    return port
