"""SLIDE's experiments (registered in impls/slide/catalog.py): time to accuracy, sweeps, real data."""
