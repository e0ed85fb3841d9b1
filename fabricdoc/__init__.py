"""fabricdoc: fault and congestion analysis for GPU-cluster network fabrics.

The public API is what ``__all__`` lists; everything else is private. Names are
loaded on first use, so ``import fabricdoc`` (and ``fabricdoc probe`` on every
node) loads nothing heavy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_PUBLIC = {
    "ConfigError": "fabricdoc.errors",
    "FabricdocError": "fabricdoc.errors",
    "ParseError": "fabricdoc.errors",
    "ProbeError": "fabricdoc.errors",
    "TopologyError": "fabricdoc.errors",
    "Fabric": "fabricdoc.model.topology",
    "Finding": "fabricdoc.model.findings",
    "Link": "fabricdoc.model.records",
    "LinkEvent": "fabricdoc.model.records",
    "LinkKey": "fabricdoc.model.records",
    "Node": "fabricdoc.model.records",
    "Observations": "fabricdoc.model.records",
    "PairResult": "fabricdoc.model.records",
    "PortCounters": "fabricdoc.model.records",
    "PortRef": "fabricdoc.model.records",
    "PortState": "fabricdoc.model.records",
    "ProbeRun": "fabricdoc.model.records",
    "Severity": "fabricdoc.model.severity",
    "Report": "fabricdoc.report.report",
    "load_fabric": "fabricdoc.sources.fabrics",
    "localize": "fabricdoc.analysis.localize",
    "SweepConfig": "fabricdoc.sweep",
    "run_sweep": "fabricdoc.sweep",
    "analyze": "fabricdoc.sweep",
}

__all__ = [
    "ConfigError", "Fabric", "FabricdocError", "Finding", "Link", "LinkEvent", "LinkKey", "Node", "Observations",
    "PairResult", "ParseError", "PortCounters", "PortRef", "PortState", "ProbeError", "ProbeRun", "Report",
    "Severity", "SweepConfig", "TopologyError", "__version__", "analyze", "load_fabric", "localize", "run_sweep",
]  # fmt: skip


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fabricdoc")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = _version()
    elif name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
    else:
        raise AttributeError(f"module 'fabricdoc' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from fabricdoc.analysis.localize import localize
    from fabricdoc.errors import ConfigError, FabricdocError, ParseError, ProbeError, TopologyError
    from fabricdoc.model.findings import Finding
    from fabricdoc.model.records import (
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
    from fabricdoc.model.severity import Severity
    from fabricdoc.model.topology import Fabric
    from fabricdoc.report.report import Report
    from fabricdoc.sources.fabrics import load_fabric
    from fabricdoc.sweep import SweepConfig, analyze, run_sweep
