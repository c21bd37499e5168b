#!/usr/bin/python3
"""rerank_bench.py - cross-encoder throughput: query-document pairs per
second through bert_rerank (one pair per row) and bert_rerank_each (packed
batches), side by side with ONNX Runtime (batch 1 and padded batches of 32)
on the same weights and the same token ids.

    /usr/bin/python3 tests/bench/rerank_bench.py [--threads 1] [--queries 3]

The model is a MiniLM-sized cross-encoder (6 layers x 384, 12 heads, like
cross-encoder/ms-marco-MiniLM-L-6-v2) with random weights, written by
tests/tools/gen_model.c into build/bench/models/; the documents are
tests/bench/sentences.txt, each scored against every query.  The ONNX graph
is traced from the project's PyTorch reference (tests/reference/), in float32.
onnxruntime-node is taken from build/bench/node_modules (tests/bench/run.sh
installs it there) or NODE_PATH; without it, or without torch, ONNX Runtime
is skipped with a note.  Run it from make bench (tests/bench/run.sh) or alone,
after make; not part of make test.
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "build", "bench")
MODEL = os.path.join(OUT, "models", "ce-minilm")
QUERIES = ["how do I keep the house warm in winter",
           "what did the committee decide about the budget",
           "where can I buy fresh bread and fruit"]


def make_model():
    if os.path.exists(os.path.join(MODEL, "model.safetensors")):
        return
    os.makedirs(os.path.dirname(MODEL), exist_ok=True)
    gen = os.path.join(OUT, "gen_model")
    subprocess.run(["cc", "-std=c11", "-O2", "-ffp-contract=off", "-o", gen,
                    os.path.join(ROOT, "tests", "tools", "gen_model.c"), "-lm"], check=True)
    subprocess.run([gen, MODEL, "--vocab", os.path.join(ROOT, "tests", "fixtures", "bert-base-uncased", "vocab.txt"),
                    "--seed", "97", "--layers", "6", "--hidden", "384", "--heads", "12", "--intermediate", "1536",
                    "--max-positions", "512", "--dtype", "f32", "--arch", "classify", "--num-labels", "1",
                    "--labels", "default", "--classifier-std", "2"], check=True)


def export_onnx(path):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
    import bert_reference as ref

    class Classifier(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return ref.classifier_logits(self.m, input_ids, token_type_ids, attention_mask, compute=torch.float32)

    torch.set_grad_enabled(False)
    m = ref.Model(MODEL)
    ids = torch.tensor([[101, 7592, 102, 2088, 102]])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["logits"] = {0: "batch"}
    torch.onnx.export(Classifier(m), (ids, torch.ones_like(ids), torch.tensor([[0, 0, 0, 1, 1]])), path,
                      input_names=names, output_names=["logits"], dynamic_axes=axes, opset_version=14)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--queries", type=int, default=3)
    a = ap.parse_args()
    make_model()
    docs = [l.strip() for l in open(os.path.join(ROOT, "tests", "bench", "sentences.txt"), encoding="utf-8")
            if l.strip()]
    queries = QUERIES[:a.queries]
    n_pairs = len(queries) * len(docs)

    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(os.path.join(ROOT, "bert"))
    db.execute("SELECT bert_load('ce', ?, ?)", (MODEL, json.dumps({"threads": a.threads})))
    db.execute("CREATE TEMP TABLE pairs(q TEXT, d TEXT)")
    db.executemany("INSERT INTO pairs VALUES (?, ?)", [(q, d) for q in queries for d in docs])
    db.execute("SELECT bert_rerank('warm', 'up', 'ce')").fetchone()

    t0 = time.perf_counter()
    row_scores = [r[0] for r in db.execute("SELECT bert_rerank(q, d, 'ce') FROM pairs")]
    row_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    each_scores = []
    for q in queries:
        each_scores += [r[0] for r in db.execute("SELECT score FROM bert_rerank_each(?, ?, 'ce') ORDER BY key",
                                                 (q, json.dumps(docs)))]
    each_seconds = time.perf_counter() - t0
    assert len(row_scores) == len(each_scores) == n_pairs
    each_diff = max(abs(x - y) for x, y in zip(row_scores, each_scores))

    print(f"rerank throughput, MiniLM-sized cross-encoder (6 x 384), {n_pairs} query-document pairs "
          f"({len(queries)} queries x {len(docs)} sentences), {a.threads} thread(s)")
    print(f"  {'engine':<36} {'pairs/s':>9}")
    print(f"  {'bert_rerank, one pair per row':<36} {n_pairs / row_seconds:9.1f}")
    print(f"  {'bert_rerank_each, packed batches':<36} {n_pairs / each_seconds:9.1f}"
          f"   (max |score - row by row| {each_diff:.1e})")

    # ONNX Runtime on the same token ids: [CLS] q [SEP] d [SEP], segments 0/1.
    try:
        onnx = os.path.join(OUT, "ce-minilm.onnx")
        if not os.path.exists(onnx):
            export_onnx(onnx)
    except Exception as e:     # torch missing or too old to export
        print(f"  note: ONNX Runtime skipped, no ONNX export ({e})")
        return
    pairs = []
    for q in queries:
        qids = json.loads(db.execute("SELECT bert_token_ids(?, 'ce')", (q,)).fetchone()[0])
        for d in docs:
            dids = json.loads(db.execute("SELECT bert_token_ids(?, 'ce')", (d,)).fetchone()[0])[1:]
            pairs.append({"ids": qids + dids, "types": [0] * len(qids) + [1] * len(dids)})
    path = os.path.join(OUT, "rerank_pairs.json")
    with open(path, "w") as f:
        json.dump(pairs, f)
    p = subprocess.run(["node", os.path.join(ROOT, "tests", "bench", "ort_rerank.js"), onnx, path, str(a.threads)],
                       capture_output=True, text=True)
    if p.returncode:
        print(f"  note: ONNX Runtime skipped: {p.stderr.strip()}")
        return
    for line in p.stdout.splitlines():
        r = json.loads(line)
        diff = max(abs(x - y) for x, y in zip(r["scores"], row_scores))
        print(f"  {'ONNX Runtime, batch ' + str(r['batch']) + (' (padded)' if r['batch'] > 1 else ''):<36} "
              f"{r['pairs'] / r['seconds']:9.1f}   (max |score - ours| {diff:.1e})")


if __name__ == "__main__":
    main()
