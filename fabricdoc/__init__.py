"""fabricdoc: fault and congestion analysis for GPU-cluster network fabrics.

The public API is what this module lists; everything else is private.
"""

from fabricdoc.errors import ConfigError, FabricdocError, ParseError, ProbeError, TopologyError
from fabricdoc.fabricfile import load_fabric
from fabricdoc.localize import localize
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
from fabricdoc.report import Report
from fabricdoc.sweep import SweepConfig, run_sweep
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
    "Report",
    "SweepConfig",
    "TopologyError",
    "__version__",
    "load_fabric",
    "localize",
    "run_sweep",
]
