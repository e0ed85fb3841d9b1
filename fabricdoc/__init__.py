"""fabricdoc: fault and congestion analysis for GPU-cluster network fabrics.

The public API is what this module lists; everything else is private.
"""

from fabricdoc.errors import ConfigError, FabricdocError, ParseError, ProbeError, TopologyError
from fabricdoc.model import (
    Finding,
    Link,
    LinkEvent,
    LinkKey,
    Node,
    Observations,
    PairResult,
    PortCounters,
    PortRef,
    PortState,
    ProbeRun,
)
from fabricdoc.topology import Fabric

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "Fabric",
    "FabricdocError",
    "Finding",
    "Link",
    "LinkEvent",
    "LinkKey",
    "Node",
    "Observations",
    "PairResult",
    "ParseError",
    "PortCounters",
    "PortRef",
    "PortState",
    "ProbeError",
    "ProbeRun",
    "TopologyError",
    "__version__",
]
