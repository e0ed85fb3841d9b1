"""GPU rules (data): which NVML facts mean a GPU fault, and the GPU findings they give.

The NVML probe only reports facts (``GpuHealth.values``); these named rules
decide. Each rule reads one fact with a named operator, never ``eval``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fabricdoc.fabric.identity import host_nodes
from fabricdoc.model.evidence import GpuEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import GpuHealth
from fabricdoc.model.severity import Severity
from fabricdoc.model.topology import Fabric


@dataclass(frozen=True)
class GpuRule:
    """``fact`` compared by ``op`` (``truthy``, ``each``, ``in``, ``nvlink``); ``problem`` is the line shown."""

    fact: str
    op: str
    problem: str
    values: tuple[str, ...] = ()


GPU_RULES: tuple[GpuRule, ...] = (
    GpuRule("xid_events", "each", "xid {xid}"),
    GpuRule("ecc_volatile_uncorrected", "truthy", "uncorrected ECC errors since boot: {value}"),
    GpuRule("remapped_rows_failure", "truthy", "row remapping failed"),
    GpuRule("remapped_rows_pending", "truthy", "row remap pending (reset the GPU)"),
    GpuRule("retired_pages_pending", "truthy", "page retirement pending (reset the GPU)"),
    GpuRule("nvlink", "nvlink", "nvlink {link}"),  # a link down, or its DL error counters moving
    GpuRule("throttle_reasons", "in", "throttled: {value}",
            ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")),
)
NVLINK_ERRORS = ("recovery", "crc_flit", "crc_data", "ecc_data")


def gpu_problems(values: dict[str, Any], rules: Iterable[GpuRule] = GPU_RULES) -> list[str]:
    """The facts in ``values`` that mean a GPU fault, one short line each."""
    out: list[str] = []
    for rule in rules:
        v = values.get(rule.fact)
        if rule.op == "truthy" and v:
            out.append(rule.problem.format(value=v))
        elif rule.op == "each":
            out += [rule.problem.format(**item) for item in v or [] if isinstance(item, dict)]
        elif rule.op == "in":
            out += [rule.problem.format(value=x) for x in v or [] if x in rule.values]
        elif rule.op == "nvlink":
            for link, st in (v or {}).items():
                name = rule.problem.format(link=link)
                if st.get("state") == "down":
                    out.append(f"{name} down")
                bad = {k: st[k] for k in NVLINK_ERRORS if st.get(k)}
                if bad:
                    out.append(f"{name} errors: " + ", ".join(f"{k} {n}" for k, n in bad.items()))
    return out


def gpu_findings(gpus: Iterable[GpuHealth], fabric: Fabric | None = None) -> list[Finding]:
    """A finding per GPU whose NVML facts break a GPU rule; ``node_ids`` are the host's fabric
    nodes (every HCA of it), so the drain list names the host."""
    out = []
    for g in gpus:
        if g.status != "ok":
            continue
        problems = gpu_problems(g.values)
        if problems:
            nodes = (host_nodes(fabric, g.host) if fabric is not None else []) or [g.host]
            out.append(Finding("", "gpu", f"{g.host} GPU {g.index}", "gpu_error", Severity.ERROR, 0.9,
                               [GpuEvidence(g.uuid, tuple(problems))], None, nodes,
                               component=g.uuid or f"{nodes[0]}/gpu{g.index}"))
    return out
