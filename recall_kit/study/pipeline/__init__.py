"""The study's build machinery, which knows nothing of retrieval: the graph of steps, their fingerprints
and the JSON manifest (graph.py), the study folder's rules and its one-run-at-a-time lock (folder.py),
and a step declared once (declare.py). Named so that no ignore rule matches it (not `build/`)."""
