#!/usr/bin/python3
"""Fine-tune the demo model into the two demo task heads:

  model/demo-source/    BertForSequenceClassification: which public-domain
                        source an English sentence comes from (the labels
                        the project can assign itself: bible, fortune,
                        moby_dick, state_of_the_union, wordnet)
  model/demo-reranker/  a one-label cross-encoder (sentence-transformers
                        layout): how likely two sentences come from the same
                        document (a Bible chapter, a State of the Union
                        address, a Moby Dick chapter, a WordNet synset's
                        gloss and examples), the relevance the rerank example
                        in sql/rerank.sql uses

    taskset -c 0 /usr/bin/python3 model/train_heads.py [--only source|reranker] [--minutes 7]

Needs the Debian text packages and the two @stdlib npm packages that
prep_corpus.py reads (NODE_PATH), torch, and ./bert.so: texts are tokenized
by the extension itself (bert_token_ids on model/demo), the tokenizer the
models will run with.  One CPU thread, fixed seeds.  Documents are split
train / held out by a hash of their first unit (10% held out); the accuracy
printed at the end is on held-out documents only.
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import sqlite3
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import prep_corpus  # noqa: E402
from bert_torch import Bert, Cfg, load_safetensors, save_safetensors  # noqa: E402

LABELS = ["bible", "fortune", "moby_dick", "state_of_the_union", "wordnet"]
SOURCES = {"bible": prep_corpus.kjv, "fortune": prep_corpus.fortunes, "moby_dick": prep_corpus.moby_dick,
           "state_of_the_union": prep_corpus.sotu, "wordnet": prep_corpus.wordnet}
MAX_UNIT_TOKENS = 40        # a sentence's word pieces kept, [CLS]/[SEP] aside
PAIR_UNIT_TOKENS = 30       # each side of a pair


def held_out(doc):
    return hashlib.sha1(prep_corpus.norm(doc[0]).encode()).digest()[0] < 26     # about 10%


def read_sources(rng, per_label):
    """{label: (train docs, held-out docs)}, units of 20 to 400 characters."""
    out = {}
    for label in LABELS:
        docs = []
        for doc in SOURCES[label]():
            units = [u for u in doc if 20 <= len(u) <= 400]
            if units:
                docs.append(units)
        rng.shuffle(docs)
        train = [d for d in docs if not held_out(d)]
        test = [d for d in docs if held_out(d)]
        out[label] = (train, test)
        print(f"{label}: {len(train)} train documents, {len(test)} held out", flush=True)
    return out


class Tokenizer:
    """The extension's own tokenizer on model/demo's vocabulary."""

    def __init__(self, demo):
        self.db = sqlite3.connect(":memory:")
        self.db.enable_load_extension(True)
        self.db.load_extension(os.path.join(ROOT, "bert"))
        self.db.execute("SELECT bert_load('demo', ?)", (demo,))

    def pieces(self, text, limit):
        ids = json.loads(self.db.execute("SELECT bert_token_ids(?, 'demo')", (text,)).fetchone()[0])
        return ids[1:-1][:limit]


class Head(nn.Module):
    """The demo encoder with BertForSequenceClassification's head: the
    pooler's tanh(dense([CLS])) then classifier."""

    def __init__(self, bert, n_labels):
        super().__init__()
        self.bert = bert
        self.classifier = nn.Linear(bert.c.hidden_size, n_labels)
        nn.init.normal_(self.classifier.weight, std=0.02)
        nn.init.zeros_(self.classifier.bias)

    def forward(self, ids, types, mask):
        h = self.bert.encode(ids, types, mask)
        return self.classifier(torch.tanh(self.bert.bert.pooler.dense(h[:, 0])))


def batch(examples, cls, sep):
    """examples: (pieces_a, pieces_b or None, target) -> padded tensors."""
    rows = []
    for a, b, _ in examples:
        ids = [cls] + a + [sep] + ((b + [sep]) if b is not None else [])
        types = [0] * (len(a) + 2) + ([1] * (len(b) + 1) if b is not None else [])
        rows.append((ids, types))
    width = max(len(r[0]) for r in rows)
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    types = torch.zeros_like(ids)
    mask = torch.zeros_like(ids)
    for i, (r, t) in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
        types[i, :len(t)] = torch.tensor(t)
        mask[i, :len(r)] = 1
    return ids, types, mask


def load_demo(demo):
    c = json.load(open(os.path.join(demo, "config.json")))
    cfg = Cfg(**{k: c[k] for k in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                  "intermediate_size", "max_position_embeddings", "type_vocab_size",
                                  "layer_norm_eps", "pad_token_id")})
    bert = Bert(cfg)
    state = load_safetensors(os.path.join(demo, "model.safetensors"))
    missing, unexpected = bert.load_state_dict(state, strict=False)
    if missing or unexpected:
        sys.exit(f"train_heads: {demo} does not match the demo architecture: {missing} {unexpected}")
    return bert, c


def train(model, make_batch, loss_fn, minutes, lr, seed):
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    model.train()
    start, step, seen = time.time(), 0, 0.0
    while time.time() - start < minutes * 60:
        frac = (time.time() - start) / (minutes * 60)
        for g in opt.param_groups:       # warm up over the first 5%, then decay linearly
            g["lr"] = lr * min(1.0, frac / 0.05) * (1.0 - frac)
        ids, types, mask, target = make_batch(step)
        loss = loss_fn(model(ids, types, mask), target)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        seen = 0.98 * seen + 0.02 * loss.item() if step else loss.item()
        step += 1
        if step % 100 == 0:
            print(f"  step {step}, {time.time() - start:.0f} s, loss {seen:.3f}", flush=True)
    model.eval()
    return step


def export(model, demo, demo_cfg, out, id2label, extra_config, architectures):
    os.makedirs(out, exist_ok=True)
    sd = model.state_dict()
    keep = {k: v for k, v in sd.items()
            if k.startswith("bert.bert.") or k.startswith("classifier.")}
    tensors = {}
    for k, v in keep.items():
        name = k[len("bert."):] if k.startswith("bert.bert.") else k
        tensors[name] = v.detach().to(torch.float16)
    save_safetensors(os.path.join(out, "model.safetensors"), tensors, {"format": "pt"})
    config = {k: v for k, v in demo_cfg.items() if k not in ("architectures", "tie_word_embeddings")}
    config["architectures"] = architectures
    config["id2label"] = {str(i): l for i, l in enumerate(id2label)}
    config["label2id"] = {l: i for i, l in enumerate(id2label)}
    config.update(extra_config)
    with open(os.path.join(out, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copyfile(os.path.join(demo, name), os.path.join(out, name))
    size = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    print(f"wrote {out}: {size / 1e6:.1f} MB", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--demo", default=os.path.join(HERE, "demo"))
    ap.add_argument("--minutes", type=float, default=7.0, help="training time of each head")
    ap.add_argument("--per-label", type=int, default=6000, help="training sentences per source")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--only", choices=["source", "reranker"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = random.Random(args.seed)
    tok = Tokenizer(args.demo)
    vocab = [l.rstrip("\n") for l in open(os.path.join(args.demo, "vocab.txt"), encoding="utf-8")]
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    data = read_sources(rng, args.per_label)

    if args.only in (None, "source"):
        # ---- which source: one sentence, five labels -------------------------------
        def sample(docs, n):
            units = [u for d in docs for u in d]
            rng.shuffle(units)
            return units[:n]
        train_ex, test_ex = [], []
        for y, label in enumerate(LABELS):
            tr, te = data[label]
            train_ex += [(tok.pieces(u, MAX_UNIT_TOKENS), None, y) for u in sample(tr, args.per_label)]
            test_ex += [(tok.pieces(u, MAX_UNIT_TOKENS), None, y) for u in sample(te, 400)]
        rng.shuffle(train_ex)
        bert, demo_cfg = load_demo(args.demo)
        model = Head(bert, len(LABELS))

        def make(step):
            chunk = [train_ex[(step * args.batch + i) % len(train_ex)] for i in range(args.batch)]
            return (*batch(chunk, cls, sep), torch.tensor([e[2] for e in chunk]))
        print(f"source classifier: {len(train_ex)} training sentences", flush=True)
        steps = train(model, make, F.cross_entropy, args.minutes, args.lr, args.seed)
        correct = 0
        with torch.no_grad():
            for i in range(0, len(test_ex), 64):
                chunk = test_ex[i:i + 64]
                pred = model(*batch(chunk, cls, sep)).argmax(-1)
                correct += sum(int(p) == e[2] for p, e in zip(pred, chunk))
        print(f"source classifier: {steps} steps, held-out accuracy {correct / len(test_ex):.3f} "
              f"({len(test_ex)} sentences, {len(LABELS)} sources)", flush=True)
        export(model, args.demo, demo_cfg, os.path.join(HERE, "demo-source"), LABELS,
               {"problem_type": "single_label_classification"}, ["BertForSequenceClassification"])

    if args.only in (None, "reranker"):
        # ---- same document: a pair, one label -----------------------------------------
        def pairs(split, n):
            # Sources are drawn uniformly, then a document: WordNet's hundred
            # thousand synsets would otherwise make nearly every pair.  Half
            # of the negatives come from another document of the same source,
            # so that style alone does not decide.
            # (A fortune is a document of one unit: it can only be a negative.)
            by_source = {label: [d for d in data[label][split] if len(d) >= 2] for label in LABELS}
            multi = [label for label in LABELS if by_source[label]]
            everything = {label: data[label][split] for label in LABELS}
            out = []
            for _ in range(n):
                label = rng.choice(multi)
                d = rng.choice(by_source[label])
                i, j = rng.sample(range(len(d)), 2)
                a = tok.pieces(d[i], PAIR_UNIT_TOKENS)
                if rng.random() < 0.5:
                    out.append((a, tok.pieces(d[j], PAIR_UNIT_TOKENS), 1.0))
                else:
                    pool = by_source[label] if rng.random() < 0.5 else everything[rng.choice(LABELS)]
                    other = rng.choice(pool)
                    while other is d:
                        other = rng.choice(pool)
                    out.append((a, tok.pieces(rng.choice(other), PAIR_UNIT_TOKENS), 0.0))
            return out
        train_ex, test_ex = pairs(0, args.per_label * 4), pairs(1, 2000)
        bert, demo_cfg = load_demo(args.demo)
        model = Head(bert, 1)

        def make(step):
            chunk = [train_ex[(step * args.batch + i) % len(train_ex)] for i in range(args.batch)]
            return (*batch(chunk, cls, sep), torch.tensor([[e[2]] for e in chunk]))
        print(f"reranker: {len(train_ex)} training pairs", flush=True)
        steps = train(model, make, F.binary_cross_entropy_with_logits, args.minutes, args.lr, args.seed)
        correct = 0
        with torch.no_grad():
            for i in range(0, len(test_ex), 64):
                chunk = test_ex[i:i + 64]
                pred = model(*batch(chunk, cls, sep))[:, 0] > 0
                correct += sum(bool(p) == (e[2] > 0.5) for p, e in zip(pred, chunk))
        print(f"reranker: {steps} steps, held-out pair accuracy {correct / len(test_ex):.3f} "
              f"({len(test_ex)} pairs, half from the same document)", flush=True)
        export(model, args.demo, demo_cfg, os.path.join(HERE, "demo-reranker"), ["LABEL_0"],
               {"sentence_transformers": {"activation_fn": "torch.nn.modules.activation.Sigmoid",
                                          "version": "4.1.0"}},
               ["BertForSequenceClassification"])


if __name__ == "__main__":
    main()
