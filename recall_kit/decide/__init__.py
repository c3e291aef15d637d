"""Deciding between systems: paired statistics, compare, gate, ablate, sweep."""
