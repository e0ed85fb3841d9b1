"""Records shared by every stage: ports, counters, pairs, events, findings with typed evidence,
severity; the Fabric (topology and routing), directed paths, max-min flows; counter semantics.

Import from the submodules (``fabricdoc.model.records``...): this package loads nothing,
so a probe that needs only records never pays for networkx or numpy.
"""
