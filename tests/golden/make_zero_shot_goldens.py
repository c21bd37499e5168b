#!/usr/bin/python3
"""make_zero_shot_goldens.py MODELS_DIR OUT_DIR TOKENIZER_JSON - the golden data
of bert_zero_shot and bert_zero_shot_each on the generated NLI checkpoints
nli-bert (entailment first) and nli-roberta (CONTRADICTION, NEUTRAL,
ENTAILMENT), from independent references only:

  token ids   Hugging Face's Rust tokenizer (hf_tokenizer.js, npm `tokenizers`):
              bert-base-uncased's tokenizer.json (TOKENIZER_JSON) for nli-bert,
              the model's own tokenizer.json for nli-roberta; the pair
              (text, hypothesis) truncated "only_first" to max_length
  logits      tests/reference/bert_reference.py and family_reference.py (PyTorch,
              float64): BertForSequenceClassification, RobertaForSequenceClassification
  scores      the pipeline's post-processing, re-implemented below from
              transformers' src/transformers/pipelines/zero_shot_classification.py
              at commit 000c33fdfde12e1ffafbfcdb3c926df5727a00b6
              (huggingface/transformers):
    * ZeroShotClassificationArgumentHandler: one pair [sequence,
      hypothesis_template.format(label)] per label, in the labels' order; a
      template that .format() leaves unchanged is an error;
    * _parse_and_tokenize: truncation=TruncationStrategy.ONLY_FIRST;
    * entailment_id: the first label of config.label2id whose lower() starts
      with "entail" (-1 when none);
    * postprocess: multi_label or a single label -> per label, softmax over
      logits[[contradiction_id, entailment_id]] (contradiction_id = -1 if
      entailment_id == 0 else 0), the entailment half; otherwise the softmax
      of the entailment logits over the labels; labels ordered by
      reversed(scores.argsort()).

Writes OUT_DIR/zero_shot_models.json and zero_shot.jsonl: lines in the form of
families.jsonl (an SQL statement, its arguments, the model bound last, the
expected JSON), read by tests/test_zero_shot.c.  Run through make_goldens.sh.
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, HERE)
import bert_reference as ref  # noqa: E402
import family_reference as fref  # noqa: E402
from golden_common import script_args, write_goldens  # noqa: E402
from make_goldens import HF, checksum, r7  # noqa: E402

MODELS = ["nli-bert", "nli-roberta"]
DEFAULT_TEMPLATE = "This example is {}."
# Neighbouring scores closer than this could swap under float32 noise (the
# float32-vs-float64 difference of the scores is printed: far below it).
MIN_SCORE_GAP = 2e-4

LONG = " ".join(["the committee reviewed every chapter of the annual report before the vote"] * 12)
CASES = [
    ("I have a problem with my iphone that needs to be resolved asap!!",
     ["urgent", "not urgent", "phone", "tablet", "computer"], {}),
    ("I have a problem with my iphone that needs to be resolved asap!!",
     ["urgent", "not urgent", "phone", "tablet", "computer"], {"multi_label": True}),
    ("The match went to extra time and ended in penalties.", ["sports", "politics", "cooking"], {}),
    ("The match went to extra time and ended in penalties.", ["sports", "politics", "cooking"],
     {"hypothesis_template": "The topic of this text is {}."}),
    ("The match went to extra time and ended in penalties.", ["sports", "politics", "cooking"],
     {"hypothesis_template": "{} is what this is about", "multi_label": True}),
    ("Café prices rose again in Zürich.", ["économie", "météo"], {}),
    ("A single label is scored against contradiction.", ["grammar"], {}),
    (LONG, ["finance", "meetings", "weather", "music"], {}),
    (LONG, ["finance", "meetings", "weather", "music"], {"multi_label": True}),
]


def reference_model(path):
    config = json.load(open(os.path.join(path, "config.json"), encoding="utf-8"))
    return fref.Model(path) if config["model_type"] == "roberta" else ref.Model(path)


def logits_of(m, ids, types, compute=torch.float64):
    if isinstance(m, fref.Model):
        return fref.classifier_logits(m, [ids], compute=compute)[0].double().numpy()
    return ref.classifier_logits(m, [ids], [types], compute=compute)[0].double().numpy()


def entailment_id(m):
    for label, ind in m.config["label2id"].items():
        if label.lower().startswith("entail"):
            return ind
    return -1


def postprocess(m, logits, labels, multi_label):
    """ZeroShotClassificationPipeline.postprocess on one sequence."""
    reshaped = np.asarray(logits).reshape((1, len(labels), -1))
    if multi_label or len(labels) == 1:
        eid = entailment_id(m)
        cid = -1 if eid == 0 else 0
        ec = reshaped[..., [cid, eid]]
        scores = np.exp(ec) / np.exp(ec).sum(-1, keepdims=True)
        scores = scores[..., 1]
    else:
        el = reshaped[..., entailment_id(m)]
        scores = np.exp(el) / np.exp(el).sum(-1, keepdims=True)
    top = list(reversed(scores[0].argsort()))
    return [(labels[i], float(scores[0, i])) for i in top]


def main():
    models_dir, out_dir, tokenizer_json = script_args(__doc__, 3)
    manifest, lines, noise, gaps = {}, [], 0.0, []
    for name in MODELS:
        path = os.path.join(models_dir, name)
        m = reference_model(path)
        own = os.path.join(path, "tokenizer.json")
        hf = HF(own if os.path.exists(own) else tokenizer_json)
        manifest[name] = {
            "path": name, "model_type": m.config["model_type"], "max_length": m.max_length,
            "labels": [m.config["id2label"][str(i)] for i in range(len(m.config["id2label"]))],
            "safetensors_bytes": os.path.getsize(os.path.join(path, "model.safetensors")),
            "safetensors_checksum": checksum(os.path.join(path, "model.safetensors")),
        }
        for text, labels, options in CASES:
            template = options.get("hypothesis_template", DEFAULT_TEMPLATE)
            assert template.format(labels[0]) != template
            requests = [{"a": text, "b": template.format(label), "max_length": m.max_length,
                         "strategy": "OnlyFirst"} for label in labels]
            encs = hf.run(encode=requests)["encode"]
            l64 = [logits_of(m, e["ids"], e["type_ids"]) for e in encs]
            l32 = [logits_of(m, e["ids"], e["type_ids"], torch.float32) for e in encs]
            multi = options.get("multi_label", False)
            result, result32 = postprocess(m, l64, labels, multi), postprocess(m, l32, labels, multi)
            assert [x[0] for x in result] == [x[0] for x in result32], ("float32 reorders", name, text)
            noise = max(noise, max(abs(x[1] - y[1]) for x, y in zip(result, result32)))
            gaps += [(result[i][1] - result[i + 1][1], name, text) for i in range(len(result) - 1)]
            expected = [{"label": lab, "score": r7(s)} for lab, s in result]
            args = [text, json.dumps(labels, ensure_ascii=False), json.dumps(options)]
            lines.append({"model": name, "sql": "SELECT bert_zero_shot(?1, ?2, json_set(?3, '$.model', ?4))",
                          "args": args, "truncated": any(e["full_length"] > len(e["ids"]) for e in encs),
                          "expected": expected})
            lines.append({"model": name,
                          "sql": "SELECT json_group_array(json_object('label', label, 'score', score)) FROM "
                                 "(SELECT * FROM bert_zero_shot_each(?1, ?2, json_set(?3, '$.model', ?4)) "
                                 "ORDER BY rank)",
                          "args": args, "expected": expected})
    small = [g for g in gaps if g[0] < MIN_SCORE_GAP]
    if small:
        sys.exit(f"neighbouring scores too close to order reliably: {small}")
    write_goldens(out_dir, "zero_shot_models.json", manifest, [("zero_shot.jsonl", lines)])
    print(f"zero-shot: {len(lines)} lines; float32 against float64 scores {noise:.2g}; "
          f"smallest gap {min(g[0] for g in gaps):.3g}")


if __name__ == "__main__":
    main()
