"""Shared test helpers: one wait_for, report builders, the netns lab, the NVML stand-in."""
