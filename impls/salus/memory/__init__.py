"""Salus's memory sharing: GPU lanes (the rule and baselines), memory profiles, the lane simulator and executor, utilisation."""
