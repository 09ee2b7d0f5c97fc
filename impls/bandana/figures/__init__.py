"""Bandana's report figures; importing the package registers them all (device, simulation, replay)."""
from impls.bandana.figures import device, replay, simulation  # noqa: F401  (registration)
