#!/usr/bin/python3
"""The sixth stage's embedding rows, as a SQLite table bert_train reads.

    /usr/bin/python3 model/prep_embed_rows.py [--rows N] [--seed S]

Draws N (anchor, positive) rows from the fourth stage's everyday pairs
(model/work/everyday/pairs.tsv) and the fifth stage's word swaps
(model/work/swaps/pairs.tsv), each kind in the share --mix gives it, and
writes them in a random order into model/work/embed.db, table
embed_rows(kind, anchor, positive).  bert_train's "embed" task takes the
rows in that order with "shuffle": false, so the run is the same on every
machine; its in-batch negatives are the other rows' positives.  Table
eval_rows(anchor, positive) holds the held-out SNLI premises with their
entailed hypotheses (model/work/everyday/eval_nli.tsv) for bert_train's
"eval_query": top-1 retrieval of each premise's hypothesis among all of them."""
import argparse
import os
import random
import sqlite3

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "work")
# stage 5b's mix (model/README.md), every kind that has an (a, b) pair
MIX = "nli:0.15,intent:0.12,service:0.06,sts:0.05,qa:0.02,story:0.04,neutral:0.08,sts3:0.04," \
      "domain:0.04,wordnet:0.1,gloss:0.05,swap:0.25"


def read_pairs(path):
    by_kind = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) >= 4 and cols[2] and cols[3]:
                by_kind.setdefault(cols[0], []).append((cols[2], cols[3]))
    return by_kind


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=51200)
    ap.add_argument("--seed", type=int, default=6060)
    ap.add_argument("--mix", default=MIX)
    ap.add_argument("--out", default=os.path.join(WORK, "embed.db"))
    args = ap.parse_args()
    pairs = read_pairs(os.path.join(WORK, "everyday", "pairs.tsv"))
    pairs.update(read_pairs(os.path.join(WORK, "swaps", "pairs.tsv")))
    shares = [(k, float(v)) for k, v in (x.split(":") for x in args.mix.split(","))]
    total = sum(v for _, v in shares)
    rng = random.Random(args.seed)
    rows = []
    for kind, share in shares:
        n = round(args.rows * share / total)
        rows += [(kind, *p) for p in rng.sample(pairs[kind], min(n, len(pairs[kind])))]
    rng.shuffle(rows)
    if os.path.exists(args.out):
        os.remove(args.out)
    db = sqlite3.connect(args.out)
    db.execute("CREATE TABLE embed_rows(kind TEXT, anchor TEXT, positive TEXT)")
    db.executemany("INSERT INTO embed_rows VALUES (?, ?, ?)", rows)
    db.execute("CREATE TABLE eval_rows(anchor TEXT, positive TEXT)")
    with open(os.path.join(WORK, "everyday", "eval_nli.tsv"), encoding="utf-8") as f:
        db.executemany("INSERT INTO eval_rows VALUES (?, ?)", (line.rstrip("\n").split("\t")[:2] for line in f))
    db.commit()
    print(f"{len(rows)} rows into {args.out}: " + ", ".join(f"{k} {sum(r[0] == k for r in rows)}" for k, _ in shares))


if __name__ == "__main__":
    main()
