"""Systems built from specs: `fts5+dense`, weights, options, TOML -> a built System; adapters; context expansion."""
