"""A search program speaking recall-kit's command protocol (JSON lines), over a MemoryStore.

It indexes the corpus recall-kit sends as its first message. For the failure tests only
(`--faults`), a query naming a behaviour gets it: "garbled" (a line that is not JSON), "crash"
(exits with status 3 after a line on stderr quoting the query, as real programs' errors do),
"invent" (an id the corpus it was sent does not hold).
"""

from __future__ import annotations

import json
import sys

from memory_store import MemoryStore

from recall_kit.plugin import Memory


def main() -> int:
    faults = "--faults" in sys.argv[1:]
    store = MemoryStore()
    for line in sys.stdin:
        message = json.loads(line)
        if "corpus" in message:
            for row in message["corpus"]:  # one program per scope: one index, scope left out
                store.add_memory(Memory(id=row["id"], content=row["content"], category=row["category"],
                                        tags=tuple(row["tags"]), expanded_keywords=row["expanded_keywords"],
                                        importance=row["importance"]))
            print(json.dumps({"indexed": len(message["corpus"])}), flush=True)
            continue
        text = message["text"]
        if faults and "crash" in text:
            print(f"fatal: the index is corrupt (query: {text})", file=sys.stderr, flush=True)
            return 3
        if faults and "garbled" in text:
            print("this is not json", flush=True)
            continue
        hits = store.search(text, int(message["k"]))
        if faults and "invent" in text:
            hits = [{"id": "invented-id", "score": 1e9}, *hits]
        print(json.dumps({"query_id": message["query_id"], "hits": hits}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
