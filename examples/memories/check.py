"""Validate the example memory dataset (reads only the .jsonl files, plus the
near-duplicate twin list from build.py).  Run: python examples/memories/check.py
Exits non-zero on any rule violation and prints per-stratum statistics."""
import json
import re
import sys
from collections import Counter
from pathlib import Path
from statistics import mean

HERE = Path(__file__).resolve().parent
STOPWORDS = set("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not now of off on once only or other our ours ourselves out over own same she should
so some such than that the their theirs them themselves then there these they this those through to
too under until up very was we were what when where which while who whom why will with would you your
yours yourself yourselves s t d ll m re ve don didn doesn isn wasn won can't i'm i've i'd it's what's
where's""".split())
TOKEN = re.compile(r"[^\W_]+", re.UNICODE)


def words(text):
    return {w for w in TOKEN.findall(text.lower()) if w not in STOPWORDS}


def jaccard(a, b):
    return len(a & b) / len(a | b) if a | b else 0.0


def load(name):
    rows = []
    with open(HERE / name, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"{name}:{n}: invalid JSON: {e}")
    return rows


def main():
    errors = []
    corpus, queries, qrels = load("corpus.jsonl"), load("queries.jsonl"), load("qrels.jsonl")
    ids = [r["id"] for r in corpus]
    if ids != list(range(1, len(ids) + 1)):
        errors.append("corpus ids are not 1..N")
    for r in corpus:
        for f in ("content", "category", "tags", "expanded_keywords", "importance", "created_at"):
            if f not in r:
                errors.append(f"memory {r['id']} lacks {f}")
    sensitive = {r["id"] for r in corpus if r.get("is_sensitive")}
    live = {r["id"]: r for r in corpus if r["id"] not in sensitive}
    if len(sensitive) != 3:
        errors.append(f"expected 3 sensitive rows, got {len(sensitive)}")
    wc = [len(r["content"].split()) for r in live.values()]
    qids = [q["query_id"] for q in queries]
    if len(qids) != len(set(qids)):
        errors.append("duplicate query ids")
    if sorted(qids) != sorted(r["query_id"] for r in qrels) or len(qrels) != len({r["query_id"] for r in qrels}):
        errors.append("queries and qrels do not correspond one-to-one")

    rel, graded = {}, {}
    for r in qrels:
        if "relevance" in r:
            graded[r["query_id"]] = {int(k): v for k, v in r["relevance"].items()}
            rel[r["query_id"]] = {k for k, v in graded[r["query_id"]].items() if v > 0}
            judged = set(graded[r["query_id"]])
        else:
            rel[r["query_id"]] = set(r["relevant_ids"])
            judged = rel[r["query_id"]]
        if not rel[r["query_id"]]:
            errors.append(f"{r['query_id']}: no relevant ids")
        for i in judged:
            if i not in live:
                errors.append(f"{r['query_id']}: id {i} missing or sensitive")

    # near-duplicate twins: if one is judged, the other must be judged the same
    sys.path.insert(0, str(HERE))
    import build  # noqa: E402  (pure data + functions; importing does not write files)
    twins = build.twin_ids()
    for q in qrels:
        g = graded.get(q["query_id"]) or {i: 1 for i in rel[q["query_id"]]}
        for a, b in twins:
            if (a in g) != (b in g) or g.get(a) != g.get(b):
                errors.append(f"{q['query_id']}: twin pair {a},{b} judged inconsistently")

    by_stratum = Counter(q["stratum"] for q in queries)
    stats = {}
    for q in queries:
        qid, text, st = q["query_id"], q["text"], q["stratum"]
        qw = words(text)
        rels = rel[qid]
        js = [jaccard(qw, words(live[i]["content"] + " " + live[i]["expanded_keywords"])) for i in rels]
        stats.setdefault(st, {"max": [], "min": []})
        stats[st]["max"].append(max(js))
        stats[st]["min"].append(min(js))
        if st == "exact":
            n = len(text.split())
            if not 3 <= n <= 7:
                errors.append(f"{qid}: phrase has {n} words")
            hits = {i for i, r in live.items() if text.lower() in r["content"].lower()}
            hits_all = {r["id"] for r in corpus if text.lower() in r["content"].lower()}
            if hits != rels or hits_all != hits:
                errors.append(f"{qid}: phrase {text!r} occurs in {sorted(hits_all)}, qrels {sorted(rels)}")
        elif st == "paraphrase":
            if max(js) > 0.18:
                errors.append(f"{qid}: Jaccard {max(js):.3f} > 0.18 ({text!r})")
        elif st == "multihop":
            if len(rels) < 2:
                errors.append(f"{qid}: multihop needs >= 2 relevant memories")
            for b in q.get("_bridge", []):
                if b.lower() in text.lower():
                    errors.append(f"{qid}: bridge {b!r} appears in query")
                holders = [i for i in rels if b.lower() in (live[i]["content"] + " " + live[i]["tags"]).lower()]
                if len(holders) < 2:
                    errors.append(f"{qid}: bridge {b!r} in only {holders}")

    print(f"memories: {len(corpus)} rows, {len(sensitive)} sensitive, {len(live)} loadable")
    print(f"memory length (words): min {min(wc)}, max {max(wc)}, mean {mean(wc):.1f}")
    print(f"categories: {dict(Counter(r['category'] for r in live.values()))}")
    print(f"near-duplicate twin pairs: {len(twins)}")
    print(f"queries: {len(queries)} {dict(by_stratum)}; graded qrels: {len(graded)}")
    avg_rel = {st: mean(len(rel[q['query_id']]) for q in queries if q['stratum'] == st) for st in by_stratum}
    print("mean relevant ids/query: " + ", ".join(f"{k} {v:.2f}" for k, v in avg_rel.items()))
    print("Jaccard(query words, memory content+expanded_keywords words), stopwords removed:")
    for st, s in stats.items():
        print(f"  {st:10s} per-query max over relevant: max {max(s['max']):.3f} mean {mean(s['max']):.3f}"
              f" | per-query min over relevant: mean {mean(s['min']):.3f}")
    if errors:
        print(f"\n{len(errors)} ERROR(S):")
        for e in errors:
            print("  " + e)
        sys.exit(1)
    print("\nOK: all checks passed")


if __name__ == "__main__":
    main()
