"""Extreme-classification data: the XC text format and its parser, XCData, the synthetic generator."""
