"""Block layouts: which vectors share a 4 KB block (identity, random, K-means, SHP, KaHyPar)."""
