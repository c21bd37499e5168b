#!/usr/bin/python3
"""make_fine_tune_parity_golden.py - tests/golden/fine_tune_parity.json, the
train_sql suite's small version of tests/bench/fine_tune_parity.py.

The demo model (model/demo) fine-tuned on three BANKING77 intents (the
first 12 training and 6 test queries of each, selected as
sql/fine_tune_intents.sql selects them, then taken in turn) with shuffle off and dropout 0, so
that PyTorch sees exactly the batches bert_train sees.  The new classifier
is the one bert_train draws from the seed: read from a run of one step at a
learning rate of 1e-30, which leaves it as drawn.  PyTorch then runs
tests/reference/train_reference.py's Trainer loop in float64 from the demo
model's weights and that head, on the ids our tokenizer gives, and logs the
loss of every step and the accuracy (argmax of the logits) on the test
queries.  Needs ./bert.so, torch and numpy:

    make bert.so && /usr/bin/python3 tests/golden/make_fine_tune_parity_golden.py
"""
import json
import os
import shutil
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import fine_tune_parity as parity  # noqa: E402
import train_reference as ref  # noqa: E402

INTENTS = ["card_arrival", "exchange_rate", "pin_blocked"]
OPTIONS = {"epochs": 3, "batch_size": 6, "learning_rate": 3e-4, "shuffle": False, "dropout": 0,
           "logging_steps": 1, "seed": 42}


def main():
    db = parity.connect()
    parity.prepare(db, per_train=12, per_test=6, intents=INTENTS)
    # The intents taken in turn, so that every batch mixes them (shuffle is off).
    train_rows = db.execute("""SELECT text, category FROM (SELECT text, category,
                                 row_number() OVER (PARTITION BY category ORDER BY rowid) AS n FROM train)
                               ORDER BY n, category""").fetchall()
    db.execute("CREATE TEMP TABLE train_in_turn(text, category)")
    db.executemany("INSERT INTO train_in_turn VALUES (?, ?)", train_rows)
    test_rows = db.execute("SELECT text, category FROM test").fetchall()
    train = [(parity.token_ids(db, t), y) for t, y in train_rows]
    test = [(parity.token_ids(db, t), y) for t, y in test_rows]
    labels = sorted({y for _, y in train})

    # The head bert_train draws with this seed.
    tmp = tempfile.mkdtemp()
    try:
        out = os.path.join(tmp, "head")
        opts = dict(OPTIONS, learning_rate=1e-30, max_steps=1)
        db.execute("SELECT count(*) FROM bert_train(?, 'default', 'SELECT text, category FROM train_in_turn', ?)",
                   (out, json.dumps(opts))).fetchone()
        saved = parity.read_f16_safetensors(os.path.join(out, "model.safetensors"))
        with open(os.path.join(out, "config.json")) as f:
            assert [f2 for _, f2 in sorted(json.load(f)["id2label"].items(), key=lambda kv: int(kv[0]))] == labels
    finally:
        shutil.rmtree(tmp)
    head = {k: saved[k] for k in ("classifier.weight", "classifier.bias")}

    cfg_json, cfg = parity.demo_config()
    weights = parity.read_f16_safetensors(os.path.join(parity.MODEL, "model.safetensors"))
    c = dict(cfg, num_labels=len(labels), p_hidden=0.0, p_attention=0.0, p_head=0.0)
    model = ref.Model(c)
    state = dict(weights)
    state.update(head)
    ref.load_state(model, state, torch.float64)
    model.double()
    index = {l: i for i, l in enumerate(labels)}
    data = [(ids, index[y]) for ids, y in train]
    bs = OPTIONS["batch_size"]
    steps = [[parity.batch_of(data[i:i + bs])] for _ in range(OPTIONS["epochs"]) for i in range(0, len(data), bs)]
    s = {"learning_rate": OPTIONS["learning_rate"], "weight_decay": 0.0, "warmup_steps": 0,
         "total_steps": len(steps), "max_grad_norm": 1.0, "freeze_encoder": 0}
    log = ref.train(model, steps, s, dtype=torch.float64)
    model.eval()
    predicted = []
    with torch.no_grad():
        for ids, _ in test:
            b = ref.to_batch(parity.batch_of([(ids, 0)]), torch.float64)
            h = model.bert(b["ids"], b["types"], b["mask"])
            logits = model.classifier(torch.tanh(model.bert.pooler.dense(h[:, 0])))
            predicted.append(labels[int(logits.argmax(-1))])
    accuracy = sum(p == y for p, (_, y) in zip(predicted, test)) / len(test)
    golden = {"options": OPTIONS, "labels": labels, "train": [list(r) for r in train_rows],
              "test": [list(r) for r in test_rows], "losses": [x["losses"][0] for x in log],
              "rates": [x["rate"] for x in log], "grad_norms": [x["grad_norm"] for x in log],
              "predicted": predicted, "accuracy": accuracy}
    with open(os.path.join(HERE, "fine_tune_parity.json"), "w") as f:
        json.dump(golden, f, indent=1)
        f.write("\n")
    print(f"{len(steps)} steps, losses {[round(x, 5) for x in golden['losses']]}, accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
