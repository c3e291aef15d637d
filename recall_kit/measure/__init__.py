"""Running and scoring: systems built from specs, the runner, the result document, metrics, TREC files."""
