"""Reports: the terminal rendering of run summaries and comparisons."""
