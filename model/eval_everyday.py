#!/usr/bin/python3
"""Sentence-similarity quality on the held-out part of the everyday data
(prep_everyday.py writes it; none of it is trained on), through the
extension's bert_similarity in SQL.

    make && /usr/bin/python3 model/eval_everyday.py [--model model/demo] [--ext ./bert]

Three measures:
  - STS-B test (879 pairs without the MSR rows): Spearman's rank
    correlation between the cosine and the human score, times 100;
  - SNLI premises held out by hash: the share whose entailed hypothesis
    is closer to the premise than its contradicted one;
  - the queries of the held-out CLINC150 intents: each query against one
    query of its intent and four of other held-out intents, top-1
    accuracy and mean reciprocal rank, as eval_ranking.py."""
import argparse
import os
import sqlite3

HERE = os.path.dirname(os.path.abspath(__file__))


def ranks(xs):
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(xs, ys):
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    return cov / (vx * vy) ** 0.5


def rows(path):
    return [line.rstrip("\n").split("\t") for line in open(path, encoding="utf-8") if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(HERE, "demo"))
    ap.add_argument("--data", default=os.path.join(HERE, "work", "everyday"))
    ap.add_argument("--ext", default="./bert", help="the extension to load")
    args = ap.parse_args()
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(args.ext)
    conn.execute("SELECT bert_load('everyday', ?)", (args.model,))
    sim = lambda a, b: conn.execute("SELECT bert_similarity(?, ?, 'everyday')", (a, b)).fetchone()[0]

    sts = rows(os.path.join(args.data, "eval_sts.tsv"))
    rho = spearman([sim(a, b) for _, a, b in sts], [float(s) for s, _, _ in sts])
    nli = rows(os.path.join(args.data, "eval_nli.tsv"))
    nli_ok = sum(sim(p, e) > sim(p, c) for p, e, c in nli)
    intent = rows(os.path.join(args.data, "eval_intent.tsv"))
    top1, rr = 0, 0.0
    for q, *texts in intent:
        scores = [sim(q, t) for t in texts]
        rank = 1 + sum(s > scores[0] for s in scores[1:])
        top1 += rank == 1
        rr += 1.0 / rank
    n = len(intent)
    print(f"held out (sql): STS-B test Spearman {100 * rho:.1f} ({len(sts)} pairs); "
          f"SNLI entailed closer than contradicted {nli_ok}/{len(nli)} = {nli_ok / len(nli):.3f}; "
          f"held-out intents top-1 {top1}/{n} = {top1 / n:.3f}, MRR {rr / n:.3f}")


if __name__ == "__main__":
    main()
