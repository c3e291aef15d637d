"""Running: the runner, its leg and fused runs, diagnostics, failures, the executor and its distributed tasks."""
