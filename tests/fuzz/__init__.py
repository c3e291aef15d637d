"""Fuzz targets for every reader (tests/fuzz/targets.py) and their harness; `make fuzz` runs them
for a set time each (tests/fuzz/run.py), `make test` briefly (tests/test_fuzz_readers.py)."""
