"""The flow-level simulator: the same records the real probes produce, for any fabric size."""
