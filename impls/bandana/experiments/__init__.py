"""Bandana's experiments (declared in impls/bandana/catalog.toml, their sizes schemas in catalog.py): simulation, replay, device."""
