"""Localization: from observations to findings. Counter, GPU and flap rules are data here."""
