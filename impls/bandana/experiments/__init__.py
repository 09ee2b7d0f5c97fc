"""Bandana's experiments (registered in impls/bandana/catalog.py): simulation, replay, device."""
