#!/usr/bin/python3
"""crosscheck_families_transformersjs.py MODELS_DIR TOKENIZER_JSON - checks the
RoBERTa, XLM-RoBERTa and MPNet goldens (families.jsonl, from
make_family_goldens.py) against a second, unrelated implementation:
transformers.js's `feature-extraction` (mean pooling, normalize), `fill-mask`
and `text-classification` pipelines running ONNX exports of the same
weights in ONNX Runtime, tokenizing with TOKENIZER_JSON (all-mpnet-base-v2's
tokenizer.json, the test models' vocabulary).

The ONNX graphs are traced (torch.onnx.export) from the reference's float32
forward pass (tests/reference/family_reference.py: its position ids, MPNet's
relative position bias and the heads), with dynamic batch and sequence axes.
Compared where the pipelines do the same thing: embeddings of single texts
(the prompt of a prompted registration prepended here, as transformers.js
has no prompts), the fill-mask top 5 (token ids and scores; strings are
decoded differently), multi-class softmax classifiers on single texts.
Numbers must agree within 1e-4, ids and label order exactly.  A text that
transformers.js tokenizes otherwise than the Rust tokenizer with the
model's truncation (its own tokenizer differs on some accents and CJK
extension planes, and its pipelines do not truncate) is skipped and counted:
it would compare tokenizers, not encoders.

Needs torch, numpy, node and, with NODE_PATH pointing at its node_modules,
npm install --ignore-scripts @huggingface/transformers
Not part of `make test`.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import family_reference as ref  # noqa: E402
from make_goldens import HF  # noqa: E402

TASKS = {"roberta-st-f16": "feature-extraction", "xlmr-e5": "feature-extraction", "mpnet-st": "feature-extraction",
         "roberta-mlm": "fill-mask", "mpnet-mlm-f16": "fill-mask",
         "xlmr-cls-bf16": "text-classification", "mpnet-cls": "text-classification"}
PROMPTED = {"xlmr-e5-query": ("xlmr-e5", "query: "), "xlmr-e5-literal": ("xlmr-e5", "passage: ")}
TOL = 1e-4


class Graph(torch.nn.Module):
    def __init__(self, m, task):
        super().__init__()
        self.m, self.task = m, task

    def forward(self, input_ids, attention_mask):
        if self.task == "text-classification":
            hidden, _ = ref.encode(self.m, input_ids, attention_mask, compute=torch.float32)
            x = torch.tanh(ref.bref.linear(hidden[:, 0], self.m, "classifier.dense", torch.float32))
            return ref.bref.linear(x, self.m, "classifier.out_proj", torch.float32)
        hidden, _ = ref.encode(self.m, input_ids, attention_mask, compute=torch.float32)
        return ref.lm_logits(self.m, hidden, compute=torch.float32) if self.task == "fill-mask" else hidden


def export(m, task, out_dir, tokenizer_json):
    os.makedirs(os.path.join(out_dir, "onnx"))
    for name in ("config.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(m.dir, name), out_dir)
    shutil.copy(tokenizer_json, os.path.join(out_dir, "tokenizer.json"))
    ids = torch.tensor([[0, 7596, 2089, 2]])
    out = "logits" if task != "feature-extraction" else "last_hidden_state"
    axes = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"},
            out: {0: "batch"} if task == "text-classification" else {0: "batch", 1: "sequence"}}
    torch.onnx.export(Graph(m, task), (ids, torch.ones_like(ids)), os.path.join(out_dir, "onnx", "model.onnx"),
                      input_names=["input_ids", "attention_mask"], output_names=[out], dynamic_axes=axes,
                      opset_version=14)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    models_dir, tokenizer_json = sys.argv[1:]
    torch.set_grad_enabled(False)
    goldens = [json.loads(line) for line in open(os.path.join(HERE, "families.jsonl"), encoding="utf-8")]
    checks = []
    for g in goldens:
        sql, model = g.get("sql", ""), g["model"]
        directory, prefix = PROMPTED.get(model, (model, ""))
        task = TASKS.get(directory)
        if task == "feature-extraction" and "bert_embed" in sql:
            checks.append((g, directory, task, prefix + g["args"][0]))
        elif task == "fill-mask" and "bert_fill_mask" in sql:
            checks.append((g, directory, task, g["args"][0]))
        elif task == "text-classification" and "bert_classify(" in sql:
            checks.append((g, directory, task, g["args"][0]))
    with tempfile.TemporaryDirectory() as tmp:
        for directory, task in TASKS.items():
            export(ref.Model(os.path.join(models_dir, directory)), task, os.path.join(tmp, directory), tokenizer_json)
        req = [{"model": d, "task": t, "text": text} for _, d, t, text in checks]
        p = subprocess.run(["node", os.path.join(HERE, "crosscheck_families_transformersjs.js"), tmp],
                           input=json.dumps(req).encode(), capture_output=True, check=False)
        if p.returncode:
            sys.exit(p.stderr.decode())
        answers = json.loads(p.stdout)
    models = {d: ref.Model(os.path.join(models_dir, d)) for d in TASKS}
    rust = HF(tokenizer_json).run(encode=[{"a": text, "b": None, "max_length": models[d].max_length}
                                          for _, d, _, text in checks])["encode"]
    worst, failures, skipped = {}, 0, 0
    for (g, directory, task, text), answer, r in zip(checks, answers, rust):
        if answer["ids"] != r["ids"]:
            skipped += 1
            continue
        a, want = answer["result"], g["expected"]
        if task == "feature-extraction":
            ok_ids, diff = len(a) == len(want), max(abs(x - y) for x, y in zip(a, want))
        elif task == "fill-mask":
            ok_ids = [c["token"] for c in want] == [c["token"] for c in a]
            diff = max(abs(c["score"] - d["score"]) for c, d in zip(want, a))
        else:
            ok_ids = [c["label"] for c in want] == [c["label"] for c in a]
            diff = max(abs(c["score"] - d["score"]) for c, d in zip(want, a))
        key = f"{g['model']} {task}"
        worst[key] = max(worst.get(key, 0.0), diff if ok_ids else float("inf"))
        if not ok_ids or diff > TOL:
            failures += 1
            print(f"MISMATCH {key} {text[:40]!r}: golden {str(want)[:200]} transformers.js {str(a)[:200]}")
    for key, w in sorted(worst.items()):
        print(f"{key}: golden vs transformers.js max |diff| {w:.2e}")
    print(f"{len(checks) - skipped} compared, {failures} mismatches; {skipped} skipped, tokenized otherwise by "
          "transformers.js or longer than max_length")
    sys.exit(1 if failures or skipped == len(checks) else 0)


if __name__ == "__main__":
    main()
