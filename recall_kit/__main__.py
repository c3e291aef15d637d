"""`python -m recall_kit` runs the command line."""

from recall_kit.cli import main

main()
