"""Scoring: rankings joined with qrels, metric names, the metrics (one module a measure), TREC files."""
