#!/usr/bin/python3
"""make_train_goldens.py - the trainer suite's goldens (tests/test_trainer.c).

For each case (a family and a task), writes into tests/golden/train/CASE/:
  config.json, model.safetensors   a tiny random-weight checkpoint in the
                                   Hugging Face layout, the task's head included
  golden.json                      the settings, the batches of every step
                                   (padded, as the data collators pad them)
                                   and what PyTorch logged at each step: the
                                   micro-batches' losses, the rate, the norm
  final/                           the weights after the run, as a checkpoint

The run is tests/reference/train_reference.py's Trainer loop in float64 (its
docstring says why), shuffle off, dropout 0.  The cases cover every task
(classify single-label and pair, multi-label, regression, tokens, qa, embed)
on BERT, DistilBERT and RoBERTa, a few on MPNet and ELECTRA (embedding_size
below hidden_size, so that embeddings_project trains), and DistilBERT with
sinusoidal_pos_embds (fixed, frozen position embeddings).  Needs torch and
numpy (Debian's python3-torch, python3-numpy):

    /usr/bin/python3 tests/golden/make_train_goldens.py [CASE ...]
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import train_reference as ref  # noqa: E402

OUT = os.path.join(HERE, "train")
VOCAB, HIDDEN, HEADS, LAYERS, FF = 32, 16, 2, 2, 24
SETTINGS = {"learning_rate": 2e-3, "weight_decay": 0.01, "warmup_steps": 2, "total_steps": 6,
            "max_grad_norm": 1.0, "freeze_encoder": 0}

# name, family, task, extras
CASES = [
    ("bert-classify", "bert", "classify", {"num_labels": 3, "accumulate": 2}),
    ("bert-multi-label", "bert", "multi_label", {"num_labels": 4}),
    ("bert-regression", "bert", "regression", {"num_labels": 1, "act": "gelu_new"}),
    ("bert-tokens", "bert", "tokens", {"num_labels": 5}),
    ("bert-qa", "bert", "qa", {}),
    ("bert-embed-mean", "bert", "embed", {"pooling": "mean", "columns": 3}),
    ("bert-embed-max", "bert", "embed", {"pooling": "max", "columns": 2, "act": "relu"}),
    ("bert-embed-cls", "bert", "embed", {"pooling": "cls", "columns": 2}),
    ("bert-classify-frozen", "bert", "classify", {"num_labels": 2, "freeze_encoder": 1}),
    ("distilbert-classify", "distilbert", "classify", {"num_labels": 3}),
    ("distilbert-qa", "distilbert", "qa", {}),
    ("distilbert-tokens", "distilbert", "tokens", {"num_labels": 4}),
    ("distilbert-classify-pair", "distilbert", "classify", {"num_labels": 2, "pair": True}),
    ("distilbert-multi-label", "distilbert", "multi_label", {"num_labels": 3}),
    ("distilbert-regression", "distilbert", "regression", {"num_labels": 1}),
    ("distilbert-embed-mean", "distilbert", "embed", {"pooling": "mean", "columns": 3}),
    ("distilbert-sinusoidal-classify", "distilbert", "classify", {"num_labels": 3, "sinusoidal": True,
                                                                  "accumulate": 2}),
    ("roberta-classify", "roberta", "classify", {"num_labels": 3}),
    ("roberta-tokens", "roberta", "tokens", {"num_labels": 5}),
    ("roberta-multi-label", "roberta", "multi_label", {"num_labels": 3}),
    ("roberta-classify-pair", "roberta", "classify", {"num_labels": 2, "pair": True}),
    ("roberta-regression", "roberta", "regression", {"num_labels": 1}),
    ("roberta-qa", "roberta", "qa", {}),
    ("roberta-embed-cls", "roberta", "embed", {"pooling": "cls", "columns": 2}),
    ("mpnet-classify", "mpnet", "classify", {"num_labels": 3}),
    ("mpnet-tokens", "mpnet", "tokens", {"num_labels": 4}),
    ("electra-classify", "electra", "classify", {"num_labels": 3, "accumulate": 2}),
    ("electra-tokens", "electra", "tokens", {"num_labels": 4}),
    ("electra-qa", "electra", "qa", {}),
    ("electra-embed-mean", "electra", "embed", {"pooling": "mean", "columns": 3}),
]
# ELECTRA's embeddings are narrower than its layers, as in the small
# checkpoints: embeddings_project is trained.
ELECTRA_EMBEDDING = 8

ARCH = {"classify": "ForSequenceClassification", "multi_label": "ForSequenceClassification",
        "regression": "ForSequenceClassification", "tokens": "ForTokenClassification",
        "qa": "ForQuestionAnswering", "embed": "Model"}
CLASS = {"bert": "Bert", "distilbert": "DistilBert", "roberta": "Roberta", "mpnet": "MPNet", "electra": "Electra"}
PROBLEM = {"classify": "single_label_classification", "multi_label": "multi_label_classification",
           "regression": "regression"}


def config_json(fam, task, x):
    pad = 1 if fam in ("roberta", "mpnet") else 0
    labels = x.get("num_labels", 0)
    c = {"architectures": [CLASS[fam] + ARCH[task]], "model_type": fam, "vocab_size": VOCAB,
         "pad_token_id": pad, "initializer_range": 0.02}
    if fam == "distilbert":
        c.update({"dim": HIDDEN, "n_layers": LAYERS, "n_heads": HEADS, "hidden_dim": FF,
                  "max_position_embeddings": 12, "activation": x.get("act", "gelu"),
                  "dropout": 0.1, "attention_dropout": 0.1, "seq_classif_dropout": 0.2, "qa_dropout": 0.1})
        if x.get("sinusoidal"):
            c["sinusoidal_pos_embds"] = True
    else:
        c.update({"hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
                  "intermediate_size": FF, "max_position_embeddings": 14 if pad else 12,
                  "layer_norm_eps": 1e-12, "hidden_act": x.get("act", "gelu"), "hidden_dropout_prob": 0.1,
                  "attention_probs_dropout_prob": 0.1})
        if fam == "mpnet":
            c["relative_attention_num_buckets"] = 32
        else:
            if fam == "electra":
                c["embedding_size"] = ELECTRA_EMBEDDING
            c["type_vocab_size"] = 1 if fam == "roberta" else 2
    if labels and task != "qa":
        c["id2label"] = {str(i): f"LABEL_{i}" for i in range(labels)}
        c["label2id"] = {f"LABEL_{i}": i for i in range(labels)}
    if task in PROBLEM:
        c["problem_type"] = PROBLEM[task]
    return c


def model_config(fam, task, x):
    """What train_reference.Model takes, dropout 0."""
    pad = 1 if fam in ("roberta", "mpnet") else 0
    return {"family": fam, "task": task, "num_labels": x.get("num_labels", 0), "vocab_size": VOCAB,
            "hidden": HIDDEN, "heads": HEADS, "layers": LAYERS, "ff": FF,
            "max_pos": 14 if pad else 12, "type_vocab_size": 1 if fam == "roberta" else 2,
            "eps": 1e-12, "act": x.get("act", "gelu"), "pad_token_id": pad,
            "p_hidden": 0.0, "p_attention": 0.0, "p_head": 0.0,
            "pooling": x.get("pooling", "mean"), "scale": 20.0, "sinusoidal": x.get("sinusoidal", False),
            "embedding_size": ELECTRA_EMBEDDING if fam == "electra" else HIDDEN}


def random_weights(model, rng):
    """Well-conditioned weights as tests/tools/gen_model.c scales them: unit
    variance through every linear layer, LayerNorm weights 1 + noise, every
    bias non-zero, embeddings small."""
    out = {}
    for name, p in model.state_dict().items():
        shape = tuple(p.shape)
        if "relative_attention_bias" in name:
            v = 0.5 * rng.standard_normal(shape)
        elif "LayerNorm" in name or "layer_norm" in name:
            v = 1 + 0.1 * rng.standard_normal(shape) if name.endswith("weight") else 0.1 * rng.standard_normal(shape)
        elif name.endswith("bias"):
            v = 0.1 * rng.standard_normal(shape)
        elif "embeddings." in name:   # not embeddings_project, a Linear
            v = 0.5 * rng.standard_normal(shape)
        else:
            v = rng.standard_normal(shape) / np.sqrt(shape[1])
        out[name] = v.astype(np.float32)
    return out


def make_batch(rng, fam, task, x, n):
    pad = 1 if fam in ("roberta", "mpnet") else 0
    L = int(rng.integers(5, 9))
    lengths = [int(rng.integers(2, L + 1)) for _ in range(n)]
    lengths[int(rng.integers(0, n))] = L
    ids = np.full((n, L), pad, dtype=np.int64)
    types = np.zeros((n, L), dtype=np.int64)
    for i, length in enumerate(lengths):
        ids[i, :length] = rng.integers(2, VOCAB, length)
        if length > 3 and i % 2 == 0:
            ids[i, length - 2] = pad            # a pad token inside the text
        types[i, length // 2:length] = 1
        if x.get("pair") and length >= 5:
            # The tokenizer's pair layout: DistilBERT [CLS] a [SEP] b [SEP]
            # (ids 2 and 3 here), RoBERTa <s> a </s></s> b </s> (0 and 2).
            cls, sep = (0, 2) if fam == "roberta" else (2, 3)
            mid = length // 2
            ids[i, 0] = cls
            ids[i, mid - 1] = sep
            if fam == "roberta":
                ids[i, mid] = sep
            ids[i, length - 1] = sep
    b = {"ids": ids.tolist(), "lengths": lengths}
    if fam in ("bert", "electra"):
        b["type_ids"] = types.tolist()
    labels = x.get("num_labels", 0)
    if task == "classify":
        b["labels"] = rng.integers(0, labels, n).tolist()
    elif task == "multi_label":
        b["targets"] = rng.integers(0, 2, (n, labels)).astype(float).tolist()
    elif task == "regression":
        b["targets"] = rng.standard_normal(n).round(3).tolist()
    elif task == "tokens":
        t = rng.integers(0, labels, (n, L))
        for i, length in enumerate(lengths):
            t[i, 0] = -100
            t[i, length:] = -100
        b["labels"] = t.tolist()
    elif task == "qa":
        pos = []
        for i, length in enumerate(lengths):
            s = int(rng.integers(0, length))
            e = int(rng.integers(s, length))
            if i == 1:
                e = L + 3                        # past the sequence: clamped, then ignored
            if i == 2:
                s = e = 0                        # no answer
            pos.append([s, e])
        b["labels"] = pos
    else:
        b["columns"] = x["columns"]
    return b


def run_case(name, fam, task, x):
    seed = sum(map(ord, name))
    rng = np.random.default_rng(seed)
    mc = model_config(fam, task, x)
    torch.manual_seed(0)
    model = ref.Model(mc).to(torch.float64)
    weights = random_weights(model, rng)
    if x.get("sinusoidal"):
        # The file holds the sinusoids, as save_pretrained writes them.
        for k, v in model.state_dict().items():
            if k.endswith("embeddings.position_embeddings.weight"):
                weights[k] = v.numpy().astype(np.float32)
    ref.load_state(model, weights, torch.float64)
    cj = config_json(fam, task, x)
    out = os.path.join(OUT, name)
    ref.save_model(model, out, cj)
    n = 6 if task == "embed" else 4
    steps = [[make_batch(rng, fam, task, x, n) for _ in range(x.get("accumulate", 1))]
             for _ in range(SETTINGS["total_steps"])]
    s = dict(SETTINGS, freeze_encoder=x.get("freeze_encoder", 0))
    log = ref.train(model, steps, s)
    ref.save_model(model, os.path.join(out, "final"), cj)
    golden = {"family": fam, "task": task, "num_labels": x.get("num_labels", 0),
              "pooling": mc["pooling"], "scale": mc["scale"], "settings": s, "steps": steps, "log": log}
    with open(os.path.join(out, "golden.json"), "w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"{name}: losses {[round(v, 5) for e in log for v in e['losses']]}")


def main():
    """Every case, or those named on the command line."""
    for name, fam, task, x in CASES:
        if len(sys.argv) < 2 or name in sys.argv[1:]:
            run_case(name, fam, task, x)


if __name__ == "__main__":
    main()
