#!/usr/bin/python3
"""Top-5 hit rate of a model on the everyday cloze set (model/cloze.tsv),
through the extension's bert_fill_mask in SQL.

    make && /usr/bin/python3 model/eval_cloze.py [--model model/demo] [--ext ./bert] [-v]
    /usr/bin/python3 model/eval_cloze.py --torch [--model model/demo]

A sentence is a hit when one of its acceptable answers is among the five
best predictions.  --torch computes the same with the PyTorch implementation
in bert_torch.py (tokenizing with Hugging Face's tokenizer through
tokenize.js, which needs Node and the npm package "tokenizers"), to check the
model without the extension and the extension against PyTorch."""
import argparse
import json
import os
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def read_cloze(path):
    items = []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        text, answers = line.split("\t")
        if text.count("[MASK]") != 1:
            sys.exit(f"eval_cloze: {path}: exactly one [MASK] per sentence: {text}")
        items.append((text, [a.strip().lower() for a in answers.split("|")]))
    return items


def predict_sql(items, model, ext, k):
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(ext)
    conn.execute("SELECT bert_load('cloze', ?)", (model,))
    out = []
    for text, _ in items:
        (res,) = conn.execute("SELECT bert_fill_mask(?, ?, 'cloze')", (text, k)).fetchone()
        out.append([(c["token_str"], c["score"]) for c in json.loads(res)])
    return out


def predict_torch(items, model, k):
    for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(v, "1")
    import torch
    sys.path.insert(0, HERE)
    from eval_heldout import load_model
    torch.set_num_threads(1)
    vocab_path = os.path.join(model, "vocab.txt")
    vocab = open(vocab_path, encoding="utf-8").read().split("\n")
    enc = subprocess.run(["node", os.path.join(HERE, "tokenize.js"), "encode", vocab_path],
                         input="\n".join(t for t, _ in items) + "\n", capture_output=True,
                         text=True, check=True).stdout.split("\n")
    net = load_model(model)
    mask_id = vocab.index("[MASK]")
    out = []
    with torch.no_grad():
        for line in enc[:len(items)]:
            ids = torch.tensor([json.loads(line)])
            pos = (ids[0] == mask_id).nonzero()[0]
            h = net.encode(ids, torch.zeros_like(ids), torch.ones_like(ids))
            p = net.mlm_logits(h[0, pos]).softmax(-1)[0]
            top = p.topk(k)
            out.append([(vocab[i], float(s)) for s, i in zip(top.values, top.indices)])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(HERE, "demo"))
    ap.add_argument("--cloze", default=os.path.join(HERE, "cloze.tsv"))
    ap.add_argument("--ext", default="./bert", help="the extension to load (SQL mode)")
    ap.add_argument("--torch", action="store_true", help="use PyTorch instead of the extension")
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every sentence")
    args = ap.parse_args()
    items = read_cloze(args.cloze)
    preds = (predict_torch(items, args.model, args.k) if args.torch
             else predict_sql(items, args.model, args.ext, args.k))
    hits = top1 = 0
    for (text, answers), p in zip(items, preds):
        toks = [t.strip().lower() for t, _ in p]
        hit = any(t in answers for t in toks)
        hits += hit
        top1 += bool(toks) and toks[0] in answers
        if args.verbose:
            shown = ", ".join(f"{t} {s:.2f}" for t, s in p)
            print(f"{'hit ' if hit else 'miss'}  {text}  ->  {shown}")
    n = len(items)
    print(f"cloze ({'torch' if args.torch else 'sql'}): {n} sentences, top-{args.k} hit rate "
          f"{hits}/{n} = {100 * hits / n:.1f}%, top-1 {top1}/{n} = {100 * top1 / n:.1f}%")


if __name__ == "__main__":
    main()
