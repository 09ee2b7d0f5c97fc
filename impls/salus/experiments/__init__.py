"""Salus's experiments (registered in impls/salus/catalog.py): scheduling, lanes, hyper-parameters, inference."""
