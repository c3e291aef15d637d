"""From a memory store to a trustworthy evaluation set: generate queries, lint the set, judge pools."""
