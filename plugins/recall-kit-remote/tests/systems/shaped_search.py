"""A search program with shapes of its own, for the `command` adapter's templates: it reads
`{"ask": TEXT, "n": K, "ref": ID}` lines and answers `{"ref": ID, "data": {"matches": [{"doc":
{"key": 12}}, ...]}}`: integer ids, no scores (rank only), the hits nested in a list of objects.

    python shaped_search.py --dataset FOLDER
"""

from __future__ import annotations

import argparse
import json
import sys

from memory_store import MemoryStore


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", required=True)
    store = MemoryStore.from_dataset(parser.parse_args().dataset)
    for line in sys.stdin:
        message = json.loads(line)
        hits = store.search(message["ask"], int(message["n"]))
        matches = [{"doc": {"key": int(hit["id"]) if hit["id"].isdigit() else hit["id"]}} for hit in hits]
        print(json.dumps({"ref": message["ref"], "data": {"matches": matches}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
