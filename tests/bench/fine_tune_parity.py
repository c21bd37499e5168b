#!/usr/bin/python3
"""fine_tune_parity.py - sql/fine_tune_intents.sql's fine-tuning, ours beside PyTorch's.

Both sides train the demo model (model/demo, a BERT with its pooler, float16
weights widened to float32) on the example's rows: five BANKING77 intents,
the first 32 training and 16 test queries of each in file order, with the
example's options (epochs 2, batch 16, learning rate 3e-4, no warmup, no
weight decay, clipping 1.0, the config's dropout 0.1, a new shuffle every
epoch, a new classifier drawn from N(0, initializer_range) with a zero bias).

  ours     bert_train through SQL with "seed": s, then the accuracy of
           bert_label on the test queries (as the example prints it);
  PyTorch  tests/reference/train_reference.py's BertForSequenceClassification
           and Trainer loop (AdamW with its two decay groups,
           clip_grad_norm_, the linear schedule) in float32, on the ids our
           tokenizer gives (bert_tokenize_offsets), torch.manual_seed(s) for
           the head, the shuffle and the dropout; the accuracy is the argmax
           of the logits on the test queries.

The random draws differ between the sides (the recipe is the same), so the
accuracy is compared as the mean over a few seeds.  Needs torch and numpy
(Debian's python3-torch, python3-numpy) and ./bert.so:

    make bert.so && /usr/bin/python3 tests/bench/fine_tune_parity.py [--seeds 42,1,2,3,4,5,6,7]
"""
import argparse
import csv
import json
import os
import sqlite3
import statistics
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import train_reference as ref  # noqa: E402

DATA = os.path.join(ROOT, "..", "shared", "data", "everyday-english", "banking77")
MODEL = os.path.join(ROOT, "model", "demo")
INTENTS = ["card_arrival", "exchange_rate", "lost_or_stolen_card", "top_up_failed", "pin_blocked"]
OPTIONS = {"epochs": 2, "batch_size": 16, "learning_rate": 3e-4}


def connect():
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(os.path.join(ROOT, "bert"))
    db.execute("SELECT bert_load('default', ?)", (MODEL,)).fetchone()
    return db


def import_csv(db, path, table):
    """The shell's .import --csv into a new table: the first row names the
    columns, the others become rows in file order (rowid)."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    cols = ", ".join(f'"{c}" TEXT' for c in rows[0])
    db.execute(f"CREATE TABLE {table}({cols})")
    db.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows[1:])


def prepare(db, per_train=32, per_test=16, intents=INTENTS):
    """The example's tables and views."""
    import_csv(db, os.path.join(DATA, "train.csv"), "banking_train")
    import_csv(db, os.path.join(DATA, "test.csv"), "banking_test")
    db.execute("CREATE TEMP TABLE intents(category TEXT PRIMARY KEY)")
    db.executemany("INSERT INTO intents VALUES (?)", [(i,) for i in intents])
    for view, table, n in (("train", "banking_train", per_train), ("test", "banking_test", per_test)):
        db.execute(f"""CREATE TEMP VIEW {view} AS
          SELECT text, category FROM (SELECT text, category, row_number() OVER (PARTITION BY category ORDER BY rowid) AS n
                                      FROM {table} WHERE category IN intents) WHERE n <= {n}""")


def token_ids(db, text):
    return [r[0] for r in db.execute('SELECT id FROM bert_tokenize_offsets(?, \'default\') ORDER BY "index"', (text,))]


def demo_config():
    with open(os.path.join(MODEL, "config.json")) as f:
        j = json.load(f)
    return j, {"family": "bert", "task": "classify", "vocab_size": j["vocab_size"], "hidden": j["hidden_size"],
               "heads": j["num_attention_heads"], "layers": j["num_hidden_layers"], "ff": j["intermediate_size"],
               "max_pos": j["max_position_embeddings"], "type_vocab_size": j["type_vocab_size"],
               "eps": j["layer_norm_eps"], "act": j["hidden_act"], "pad_token_id": j["pad_token_id"]}


def read_f16_safetensors(path):
    import struct
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    dt = {"F16": "<f2", "F32": "<f4", "BF16": None}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = data[8 + n + a:8 + n + b]
        if info["dtype"] == "BF16":
            arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=dt[info["dtype"]]).astype(np.float32)
        out[name] = arr.reshape(info["shape"])
    return out


def batch_of(rows):
    longest = max(len(ids) for ids, _ in rows)
    return {"ids": [ids + [0] * (longest - len(ids)) for ids, _ in rows],
            "lengths": [len(ids) for ids, _ in rows], "labels": [y for _, y in rows]}


def torch_run(seed, train, test, labels, weights, cfg_json, cfg, options, dropout=None, shuffle=True, head=None):
    """One PyTorch fine-tuning; returns (accuracy, losses per step, seconds)."""
    t0 = time.perf_counter()
    torch.manual_seed(seed)
    p = cfg_json["hidden_dropout_prob"] if dropout is None else dropout
    pa = cfg_json["attention_probs_dropout_prob"] if dropout is None else dropout
    c = dict(cfg, num_labels=len(labels), p_hidden=p, p_attention=pa,
             p_head=cfg_json.get("classifier_dropout") or p)
    model = ref.Model(c)
    state = {k: v for k, v in weights.items()}
    if head is None:
        # BertPreTrainedModel._init_weights: normal(0, initializer_range), bias 0.
        w = torch.empty(len(labels), c["hidden"]).normal_(0.0, cfg_json["initializer_range"])
        state["classifier.weight"] = w.numpy()
        state["classifier.bias"] = np.zeros(len(labels), np.float32)
    else:
        state.update(head)
    ref.load_state(model, state, torch.float32)
    model.float()
    index = {l: i for i, l in enumerate(labels)}
    data = [(ids, index[y]) for ids, y in train]
    bs, epochs = options["batch_size"], options["epochs"]
    per_epoch = (len(data) + bs - 1) // bs
    total = options.get("max_steps") or per_epoch * epochs
    gen = torch.Generator()
    gen.manual_seed(seed)
    steps = []
    while len(steps) < total:
        order = torch.randperm(len(data), generator=gen).tolist() if shuffle else list(range(len(data)))
        for i in range(0, len(data), bs):
            if len(steps) < total:
                steps.append([batch_of([data[j] for j in order[i:i + bs]])])
    s = {"learning_rate": options["learning_rate"], "weight_decay": options.get("weight_decay", 0.0),
         "warmup_steps": 0, "total_steps": total, "max_grad_norm": 1.0, "freeze_encoder": 0}
    log = ref.train(model, steps, s, dtype=torch.float32)
    model.eval()
    right = 0
    with torch.no_grad():
        for ids, y in test:
            b = ref.to_batch(batch_of([(ids, 0)]), torch.float32)
            h = model.bert(b["ids"], b["types"], b["mask"])
            logits = model.classifier(torch.tanh(model.bert.pooler.dense(h[:, 0])))
            right += int(labels[int(logits.argmax(-1))] == y)
    return right / len(test), [x["losses"][0] for x in log], time.perf_counter() - t0


def ours_run(db, seed, out_dir, options):
    t0 = time.perf_counter()
    opts = dict(options, seed=seed, overwrite=True)
    rows = db.execute("SELECT step, loss FROM bert_train(?, 'default', 'SELECT text, category FROM train', ?)",
                      (out_dir, json.dumps(opts))).fetchall()
    name = f"parity{seed}"
    db.execute("SELECT bert_load(?, ?)", (name, out_dir)).fetchone()
    acc = db.execute("SELECT avg(bert_label(text, ?) = category) FROM test", (name,)).fetchone()[0]
    db.execute("SELECT bert_unload(?)", (name,)).fetchone()
    return acc, rows, time.perf_counter() - t0


def spread(xs):
    return statistics.pstdev(xs) if len(xs) > 1 else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="42,1,2,3,4,5,6,7")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "parity"))
    ap.add_argument("--dropout", type=float, default=None, help="both sides' dropout (default the config's)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    options = dict(OPTIONS) if args.dropout is None else dict(OPTIONS, dropout=args.dropout)
    if args.threads:
        torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    db = connect()
    prepare(db)
    train = [(token_ids(db, t), y) for t, y in db.execute("SELECT text, category FROM train")]
    test = [(token_ids(db, t), y) for t, y in db.execute("SELECT text, category FROM test")]
    labels = sorted({y for _, y in train})
    cfg_json, cfg = demo_config()
    weights = read_f16_safetensors(os.path.join(MODEL, "model.safetensors"))
    print(f"{len(train)} training and {len(test)} test queries, labels {labels}; options {json.dumps(options)}")
    print(f"{'seed':>6} | {'ours':>6} {'s':>6} | {'PyTorch':>7} {'s':>6}")
    ours, theirs, t_ours, t_theirs = [], [], [], []
    for seed in seeds:
        a, _, t = ours_run(db, seed, os.path.join(args.out, f"seed-{seed}"), options)
        b, _, u = torch_run(seed, train, test, labels, weights, cfg_json, cfg, options, dropout=args.dropout)
        ours.append(a), theirs.append(b), t_ours.append(t), t_theirs.append(u)
        print(f"{seed:>6} | {a:6.3f} {t:6.1f} | {b:7.3f} {u:6.1f}", flush=True)
    mo, mt = statistics.mean(ours), statistics.mean(theirs)
    print(f"{'mean':>6} | {mo:6.3f} {statistics.mean(t_ours):6.1f} | {mt:7.3f} {statistics.mean(t_theirs):6.1f}")
    print(f"{'±sd':>6} | {spread(ours):6.3f} {'':>6} | {spread(theirs):7.3f}")
    diff = (mo - mt) * 100
    print(f"ours - PyTorch: {diff:+.1f} points ({'within' if abs(diff) <= 1 else 'NOT within'} one point)")


if __name__ == "__main__":
    main()
