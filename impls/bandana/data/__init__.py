"""Lookup traces: the synthetic generator, CSR helpers, FBGEMM's dlrm_datasets reader."""
