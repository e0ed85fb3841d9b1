"""Kubernetes as a source: what the cluster says about its nodes (taints), through kubectl."""

from __future__ import annotations

from fabricdoc.probes.kubectl import Kubectl, parse_kubectl_nodes

__all__ = ["Kubectl", "parse_kubectl_nodes"]
