"""Comparison tables, grids, plots and HTML/Markdown reports. Reports only read the store.

compare   benchstat-style comparison of result sets (compare_groups, render, render_results)
data      pooling of runs into cells (fingerprint policy), number/size formatting
"""
