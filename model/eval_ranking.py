#!/usr/bin/python3
"""Semantic ranking quality of a model on the project's own ranking set
(model/ranking.tsv), through the extension's bert_similarity in SQL.

    make && /usr/bin/python3 model/eval_ranking.py [--model model/demo] [--ext ./bert] [-v]
    /usr/bin/python3 model/eval_ranking.py --check-corpus model/work/corpus2/train.txt ...

Each query is compared with its five texts (one relevant, four unrelated);
top-1 accuracy is the share of queries whose relevant text scores highest,
MRR the mean of 1 / (the relevant text's rank).  --check-corpus instead
reports any text of the set that occurs in a line of the given training
text, and any query that is a whole line of it (compared lower-cased and
punctuation-insensitive, as prep_corpus.py deduplicates; a query is a short
phrase, which ordinary prose may well contain), so that the set stays
unseen by training."""
import argparse
import os
import re
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def read_ranking(path):
    items = []
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 7:
            sys.exit(f"eval_ranking: {path}:{n}: expected topic, query, relevant and four "
                     f"unrelated texts (7 tab-separated columns), found {len(cols)}")
        items.append((cols[0], cols[1], cols[2:]))  # texts[0] is the relevant one
    return items


def norm(s):
    return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()


def check_corpus(items, paths):
    wanted, queries = {}, {}
    for _, q, texts in items:
        queries[norm(q)] = q
        for s in texts:
            wanted[norm(s)] = s
    found = set()
    for path in paths:
        for line in open(path, encoding="utf-8"):
            key = norm(line)
            if not key:
                continue
            if key in queries and key not in found:
                found.add(key)
                print(f"in {path}: {queries[key]!r} is a line")
            for k in wanted:
                if k in key and k not in found:
                    found.add(k)
                    print(f"in {path}: {wanted[k]!r}  <-  {line.strip()[:120]!r}")
    print(f"check-corpus: {len(found)} of {len(wanted) + len(queries)} texts of the set occur in the training text")
    return 1 if found else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(HERE, "demo"))
    ap.add_argument("--ranking", default=os.path.join(HERE, "ranking.tsv"))
    ap.add_argument("--ext", default="./bert", help="the extension to load")
    ap.add_argument("--check-corpus", nargs="+", metavar="TEXT", help="look for the set in these files")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every query")
    args = ap.parse_args()
    items = read_ranking(args.ranking)
    if args.check_corpus:
        sys.exit(check_corpus(items, args.check_corpus))
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(args.ext)
    conn.execute("SELECT bert_load('ranking', ?)", (args.model,))
    top1 = 0
    rr = 0.0
    per_topic = {}
    for topic, query, texts in items:
        scores = [conn.execute("SELECT bert_similarity(?, ?, 'ranking')", (query, t)).fetchone()[0]
                  for t in texts]
        rank = 1 + sum(s > scores[0] for s in scores[1:])
        top1 += rank == 1
        rr += 1.0 / rank
        hit, n = per_topic.get(topic, (0, 0))
        per_topic[topic] = (hit + (rank == 1), n + 1)
        if args.verbose:
            best = max(range(len(texts)), key=lambda i: scores[i])
            print(f"rank {rank}  {query!r}: relevant {scores[0]:.3f}"
                  + ("" if rank == 1 else f", best {scores[best]:.3f} {texts[best]!r}"))
    n = len(items)
    if args.verbose:
        print("per topic: " + ", ".join(f"{t} {h}/{k}" for t, (h, k) in per_topic.items()))
    print(f"ranking (sql): {n} queries, top-1 {top1}/{n} = {top1 / n:.3f}, MRR {rr / n:.3f}")


if __name__ == "__main__":
    main()
