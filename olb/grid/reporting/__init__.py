"""Reporting: the grid's table beside the papers' values, table.md, the plots, the leaderboard, the export and
the documentation's tables."""
