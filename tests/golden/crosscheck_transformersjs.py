#!/usr/bin/python3
"""crosscheck_transformersjs.py MODELS_DIR TOKENIZER_JSON - checks the
classification goldens (classify.jsonl, from make_heads_goldens.py) against a
second, unrelated implementation: transformers.js's `text-classification`
pipeline running ONNX exports of the same weights in ONNX Runtime.

Only where the two pipelines do the same thing: multi-class softmax models
(cls-3-f32, the DistilBERT distil-cls), single texts.  transformers.js applies
softmax to every model, so a one-label model scores 1.0 there (Python applies
sigmoid); that case is printed for information, not compared.

The ONNX graphs are traced (torch.onnx.export) from the reference's own
float32 forward pass (tests/reference/bert_reference.py), with dynamic batch
and sequence axes; transformers.js tokenizes with bert-base-uncased's
tokenizer.json.  Scores must agree within 1e-4 and the label order exactly.

Needs torch, numpy, node and, with NODE_PATH pointing at its node_modules,
npm install --ignore-scripts @huggingface/transformers
Not part of `make test`.
"""
import json
import os
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import bert_reference as ref  # noqa: E402
from golden_common import node_json, onnx_export, script_args  # noqa: E402

SOFTMAX_MODELS = ["cls-3-f32", "distil-cls"]
INFO_MODELS = ["ce-sigmoid"]
TOL = 1e-4


class Classifier(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        return ref.classifier_logits(self.m, input_ids, token_type_ids, attention_mask, compute=torch.float32)


def export(m, out_dir, tokenizer_json):
    onnx_export(Classifier(m), m, out_dir, tokenizer_json, [101, 7592, 2088, 102], [0, 0, 0, 0], ["logits"], False)


def main():
    models_dir, tokenizer_json = script_args(__doc__, 2)
    goldens = [json.loads(line) for line in open(os.path.join(HERE, "classify.jsonl"), encoding="utf-8")]
    goldens = [g for g in goldens if g["text_pair"] is None and g["model"] in SOFTMAX_MODELS + INFO_MODELS]
    with tempfile.TemporaryDirectory() as tmp:
        for name in SOFTMAX_MODELS + INFO_MODELS:
            export(ref.Model(os.path.join(models_dir, name)), os.path.join(tmp, name), tokenizer_json)
        req = [{"model": g["model"], "text": g["text"]} for g in goldens]
        answers = node_json("crosscheck_transformersjs.js", tmp, req)
    worst, failures, compared = {}, 0, 0
    for g, a in zip(goldens, answers):
        if g["model"] in INFO_MODELS:
            print(f"info: {g['model']} (one label) golden {g['result'][0]['score']:.6f} (sigmoid), "
                  f"transformers.js {a[0]['score']:.6f} (softmax over one label)")
            continue
        compared += 1
        same_order = [x["label"] for x in g["result"]] == [x["label"] for x in a]
        diff = max(abs(x["score"] - y["score"]) for x, y in zip(g["result"], a)) if same_order else float("inf")
        worst[g["model"]] = max(worst.get(g["model"], 0.0), diff)
        if not same_order or diff > TOL:
            failures += 1
            print(f"MISMATCH {g['model']} {g['text'][:40]!r}: golden {g['result']} transformers.js {a}")
    for name, w in worst.items():
        print(f"{name}: golden vs transformers.js max |score diff| {w:.2e}")
    print(f"{compared} compared, {failures} mismatches")
    sys.exit(1 if failures or not compared else 0)


if __name__ == "__main__":
    main()
