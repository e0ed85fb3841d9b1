"""kubectl: run it through the exec seam (no shell, a timeout, the process group ended), and parse
``kubectl get nodes -o json`` (tests/data/kubectl/ holds a real one)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from fabricdoc.probes import exec as px

from fabricdoc.errors import ParseError, ProbeError
from fabricdoc.model.inputs import loads_json
from fabricdoc.model.text import escape


class Kubectl:
    """Runs kubectl commands, each within ``timeout_s``."""

    def __init__(self, kubectl: str = "kubectl", timeout_s: float = 30.0) -> None:
        self.kubectl = kubectl
        self.timeout_s = timeout_s

    def run(self, argv: Sequence[str]) -> tuple[int | None, str, str]:
        """(exit status, or None at the timeout; stdout; stderr) of one command."""
        try:
            done = px.run(argv, timeout_s=self.timeout_s, tool=os.path.basename(str(argv[0])))
        except ProbeError as exc:
            if exc.status == "unsupported":
                raise ProbeError("kubectl", "not found: is kubectl installed and on PATH (or pass --kubectl)?",
                                 "unsupported") from None
            raise
        return done.returncode, done.stdout, done.stderr


def parse_kubectl_nodes(text: str, source: str = "kubectl get nodes -o json") -> dict[str, list[dict[str, str]]]:
    """``kubectl get nodes -o json`` (a v1 List of Nodes): node name -> its taints ``{key, value, effect}``.

    A node without ``spec.taints`` has none; a taint without a value has value
    ``""``. Anything that is not that shape is a ParseError naming ``source``.
    """
    doc = loads_json(text, source)
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise ParseError(source, 0, "", "not a Kubernetes List of Nodes (no 'items')")
    out: dict[str, list[dict[str, str]]] = {}
    for i, item in enumerate(doc["items"]):
        name = (item.get("metadata") or {}).get("name") if isinstance(item, dict) else None
        if not isinstance(name, str) or (isinstance(item, dict) and item.get("kind", "Node") != "Node"):
            raise ParseError(source, 0, "", f"items[{i}] is not a Node with metadata.name")
        found = (item.get("spec") or {}).get("taints") or []
        if not isinstance(found, list) or not all(isinstance(t, dict) and isinstance(t.get("key"), str) for t in found):
            raise ParseError(source, 0, "", f"node {escape(name)!r}: spec.taints is not a list of taints")
        out[name] = [{"key": t["key"], "value": str(t.get("value") or ""), "effect": str(t.get("effect") or "")}
                     for t in found]
    return out
