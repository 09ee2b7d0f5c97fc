"""Salus's experiments (declared in impls/salus/catalog.toml, their sizes schemas in catalog.py): scheduling, lanes, hyper-parameters, inference."""
