#!/usr/bin/python3
"""crosscheck_ner_qa_transformersjs.py MODELS_DIR TOKENIZER_JSON - checks the
token-classification and question-answering goldens (ner.jsonl, qa.jsonl from
make_ner_qa_goldens.py) against a second, unrelated implementation:
transformers.js's `token-classification` and `question-answering` pipelines
running ONNX exports of the same weights in ONNX Runtime.

Compared only where the two pipelines do the same thing:
  * token classification, aggregation "none", texts that fit in one window:
    transformers.js has no aggregation and no offsets and leaves [UNK]
    tokens out (its word is the decoded token, empty for [UNK]); every other
    token's entity, index, word and score must agree (score within 1e-4).
  * question answering, contexts that fit in one window: transformers.js
    masks the question and special tokens and keeps [CLS] in the softmax as
    Python does, but has no max_answer_len and no windows, and returns the
    decoded tokens instead of the context's characters.  Where its best span
    is the golden's (the golden answer, lowercased and accent-stripped as
    the tokenizer does, contains its decoded answer without spaces, and the
    scores agree within 1e-4) it counts as agreeing; the golden's answer is
    longer where the span starts or ends inside a word (Python's
    align_to_words).  Two differences by design are listed, not counted as
    failures: transformers.js masks [UNK] tokens too (emoji, rare
    characters), which changes the softmax, and it has no max_answer_len, so
    its best span can be longer than 15 pieces.

The ONNX graphs are traced (torch.onnx.export) from the reference's own
float32 forward pass (tests/reference/bert_reference.py), with dynamic batch
and sequence axes; transformers.js tokenizes with bert-base-uncased's
tokenizer.json.

Needs torch, numpy, node and, with NODE_PATH pointing at its node_modules,
npm install --ignore-scripts @huggingface/transformers
Not part of `make test`.
"""
import json
import os
import sys
import tempfile
import unicodedata

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import bert_reference as ref  # noqa: E402
from golden_common import node_json, onnx_export, script_args  # noqa: E402

NER_MODELS = ["ner-conll-f32", "ner-short-f16", "ner-distil"]
QA_MODELS = ["qa-f32", "qa-short-bf16", "qa-distil"]
TOL = 1e-4


class Head(torch.nn.Module):
    def __init__(self, m, qa):
        super().__init__()
        self.m, self.qa = m, qa

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        if self.qa:
            return ref.qa_logits(self.m, input_ids, token_type_ids, attention_mask, compute=torch.float32)
        return ref.token_logits(self.m, input_ids, token_type_ids, attention_mask, compute=torch.float32)


def export(m, out_dir, tokenizer_json, qa):
    onnx_export(Head(m, qa), m, out_dir, tokenizer_json, [101, 7592, 102, 2088, 102], [0, 0, 0, 1, 1],
                ["start_logits", "end_logits"] if qa else ["logits"], True)


def folded(s):
    s = s[2:] if s.startswith("##") else s     # a span that starts inside a word
    s = "".join(c for c in unicodedata.normalize("NFD", s.lower()) if unicodedata.category(c) not in ("Mn", "Cf"))
    return "".join(s.split())


def main():
    models_dir, tokenizer_json = script_args(__doc__, 2)
    ner = [json.loads(line) for line in open(os.path.join(HERE, "ner.jsonl"), encoding="utf-8")]
    qa = [json.loads(line) for line in open(os.path.join(HERE, "qa.jsonl"), encoding="utf-8")]
    ner = [g for g in ner if g["windows"] == 1]
    qa = [g for g in qa if g["windows"] == 1]
    with tempfile.TemporaryDirectory() as tmp:
        for name in NER_MODELS + QA_MODELS:
            export(ref.Model(os.path.join(models_dir, name)), os.path.join(tmp, name), tokenizer_json,
                   name in QA_MODELS)
        req = [{"task": "ner", "model": g["model"], "text": g["text"]} for g in ner]
        req += [{"task": "qa", "model": g["model"], "question": g["question"], "context": g["context"]} for g in qa]
        answers = node_json("crosscheck_ner_qa_transformersjs.js", tmp, req)
    failures, worst, tokens, unk = 0, 0.0, 0, 0
    for g, a in zip(ner, answers[:len(ner)]):
        mine = [e for e in g["results"]["none"]]
        js = {e["index"]: e for e in a}
        for entity, score, word, start, end, index in mine:
            if index not in js:
                if word == g["text"][start:end] and word not in ("", ) and entity:
                    unk += 1        # [UNK]: its word is the original text, transformers.js drops it
                    continue
                failures += 1
                print(f"MISSING {g['model']} {g['text'][:40]!r} token {index} {word!r}")
                continue
            e = js.pop(index)
            tokens += 1
            worst = max(worst, abs(e["score"] - score))
            if e["entity"] != entity or e["word"] != word or abs(e["score"] - score) > TOL:
                failures += 1
                print(f"MISMATCH {g['model']} {g['text'][:40]!r} token {index}: golden {entity} {word!r} {score} "
                      f"transformers.js {e['entity']} {e['word']!r} {e['score']}")
        for e in js.values():
            failures += 1
            print(f"EXTRA {g['model']} {g['text'][:40]!r}: transformers.js {e}")
    print(f"token classification: {tokens} tokens agree in entity, index and word (max |score diff| {worst:.2e}); "
          f"{unk} [UNK] tokens only in the golden (transformers.js drops them)")
    agree, differ, qworst = 0, 0, 0.0
    for g, a in zip(qa, answers[len(ner):]):
        gold = g["top1"][0]
        if folded(a["answer"]) and folded(a["answer"]) in folded(gold["answer"]) and abs(a["score"] - gold["score"]) <= TOL:
            agree += 1
            qworst = max(qworst, abs(a["score"] - gold["score"]))
        else:
            differ += 1
            print(f"differs {g['model']} {g['question']!r}: golden {gold['answer']!r} {gold['score']:.6f}, "
                  f"transformers.js {a['answer']!r} {a['score']:.6f}")
    print(f"question answering: {agree} of {len(qa)} best answers agree (max |score diff| {qworst:.2e}); "
          f"{differ} differ (listed above)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
