"""SLIDE's network: LSH families, hash tables, the sparse training step, evaluation, retrieval recall."""
