"""Building evaluation sets: importers, export, synthetic sets, query generation, lint, pooling, judging."""
