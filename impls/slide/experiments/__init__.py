"""SLIDE's experiments (declared in impls/slide/catalog.toml, their sizes schemas in catalog.py): time to accuracy, sweeps, real data."""
