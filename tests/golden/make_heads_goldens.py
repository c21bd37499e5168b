#!/usr/bin/python3
"""make_heads_goldens.py MODELS_DIR OUT_DIR TOKENIZER_JSON - the golden data of
the sequence-classification and cross-encoder functions (bert_classify,
bert_classify_pair, bert_label, bert_rerank, bert_rerank_each), from
independent references only:

  token ids   Hugging Face's Rust tokenizer (hf_tokenizer.js, npm `tokenizers`)
              on bert-base-uncased's tokenizer.json, truncated to each model's
              max_length (pairs longest-first), as transformers does
  logits      tests/reference/bert_reference.py (PyTorch, float64):
              BertForSequenceClassification and DistilBertForSequenceClassification
  scores      the post-processing below, re-implemented from the sources:

  * transformers, src/transformers/pipelines/text_classification.py at commit
    01080c629600d4ff3121446bb4f4a2e240c2cf41 (huggingface/transformers):
    TextClassificationPipeline.postprocess with function_to_apply unset and
    top_k=None.  The function: "regression" problem_type -> none; problem_type
    "multi_label_classification" or num_labels == 1 -> sigmoid;
    "single_label_classification" or num_labels > 1 -> softmax.  softmax
    subtracts the row maximum first; every label is returned as
    {"label": id2label[i], "score": s}, sorted by score, best first (Python's
    stable sort: equal scores keep id order).
  * sentence-transformers, sentence_transformers/cross_encoder/CrossEncoder.py
    at commit a09db2859738e9c6f91a8f888fd323729324dd92
    (huggingface/sentence-transformers): get_default_activation_fn reads
    config.json sentence_transformers.activation_fn (a "torch." path is
    imported and instantiated), else Sigmoid for one label, Identity for more;
    predict() applies it to the logits of the pair [CLS] query [SEP] doc [SEP]
    tokenized with truncation=True (longest first).

Transformers' PretrainedConfig gives the labels: id2label when config.json has
it (its size is num_labels), else num_labels (default 2) with LABEL_<i>.

Writes OUT_DIR/heads_models.json, classify.jsonl, rerank.jsonl and
distil_embeddings.jsonl (the DistilBERT encoder's mean-pooled output), and
prints the self-checks: reference against nn.TransformerEncoderLayer, padded
batch against single runs, float32 against float64 compute, and the smallest
gap between neighbouring scores (the order must not hang on float noise).
Run through make_goldens.sh, which also builds the models.
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
from golden_common import script_args, write_goldens  # noqa: E402
from make_goldens import HF, checksum, r7  # noqa: E402

CLASSIFY_MODELS = ["cls-3-f32", "cls-multi4-f16", "ce-sigmoid", "ce-identity-bf16", "reg-f32", "distil-cls"]
PAD = 0
# Neighbouring scores closer than this could swap under float32 noise (the
# float32-vs-float64 difference of the scores is printed; it stays below 1e-5).
MIN_SCORE_GAP = 1e-3


# ---- the pipeline's post-processing (text_classification.py) ----------------------

def pipeline_function(m):
    """TextClassificationPipeline.postprocess, function_to_apply=None."""
    if m.problem_type == "regression":
        return "none"
    if m.problem_type == "multi_label_classification" or m.num_labels == 1:
        return "sigmoid"
    if m.problem_type == "single_label_classification" or m.num_labels > 1:
        return "softmax"
    return "none"


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x):
    maxes = np.max(x, axis=-1, keepdims=True)
    shifted_exp = np.exp(x - maxes)
    return shifted_exp / shifted_exp.sum(axis=-1, keepdims=True)


def apply_function(name, logits):
    logits = np.asarray(logits, dtype=np.float64)
    if name == "sigmoid":
        return sigmoid(logits)
    if name == "softmax":
        return softmax(logits)
    return logits


def pipeline_result(m, logits):
    """postprocess(top_k=None): every label, best first."""
    scores = apply_function(pipeline_function(m), logits)
    dict_scores = [{"label": m.id2label[i], "score": float(s)} for i, s in enumerate(scores)]
    dict_scores.sort(key=lambda x: x["score"], reverse=True)
    return dict_scores


# ---- sentence-transformers' CrossEncoder activation --------------------------------

ACTIVATIONS = {"torch.nn.modules.activation.Sigmoid": "sigmoid", "torch.nn.Sigmoid": "sigmoid",
               "torch.nn.modules.linear.Identity": "identity", "torch.nn.Identity": "identity"}


def cross_encoder_activation(m):
    st = m.config.get("sentence_transformers") or {}
    path = st.get("activation_fn")
    if path is not None and path.startswith("torch."):
        if path not in ACTIVATIONS:
            raise ValueError(f"activation_fn {path} is not one this script knows")
        return ACTIVATIONS[path]
    return "sigmoid" if m.num_labels == 1 else "identity"


def main():
    models_dir, out_dir, tokenizer_json = script_args(__doc__, 3)
    inputs = json.load(open(os.path.join(HERE, "heads_inputs.json"), encoding="utf-8"))
    hf = HF(tokenizer_json)
    models = {name: ref.Model(os.path.join(models_dir, name)) for name in CLASSIFY_MODELS}

    requests = []
    for name, m in models.items():
        requests += [{"a": t, "b": None, "max_length": m.max_length} for t in inputs["classify"]]
        requests += [{"a": a, "b": b, "max_length": m.max_length} for a, b in inputs["classify_pairs"]]
        if m.num_labels == 1:
            requests += [{"a": r["query"], "b": d, "max_length": m.max_length}
                         for r in inputs["rerank"] for d in r["documents"]]
    answers = hf.run(encode=requests)["encode"]
    ids_of = {}
    for r, ans in zip(requests, answers):
        assert len(ans["ids"]) <= r["max_length"]
        ids_of[(r["a"], r["b"], r["max_length"])] = (ans["ids"], ans["type_ids"], ans["full_length"])

    manifest, cls_lines, rr_lines = {}, [], []
    noise, gaps, batch_diff, cross = {}, [], {}, {}
    for name, m in models.items():
        manifest[name] = {
            "path": name, "model_type": m.config["model_type"], "dtype": m.dtype, "hidden_size": m.hidden,
            "num_layers": m.layers, "max_length": m.max_length, "task": "sequence_classification",
            "num_labels": m.num_labels, "labels": [m.id2label[i] for i in range(m.num_labels)],
            "problem_type": m.problem_type, "function": pipeline_function(m),
            "rerank_activation": cross_encoder_activation(m) if m.num_labels == 1 else None,
            "safetensors_bytes": os.path.getsize(os.path.join(m.dir, "model.safetensors")),
            "safetensors_checksum": checksum(os.path.join(m.dir, "model.safetensors")),
        }
        items = [(t, None) for t in inputs["classify"]] + [tuple(p) for p in inputs["classify_pairs"]]
        singles = []
        for a, b in items:
            ids, types, full = ids_of[(a, b, m.max_length)]
            logits = ref.classifier_logits(m, [ids], [types])[0]
            logits32 = ref.classifier_logits(m, [ids], [types], compute=torch.float32)[0].double()
            singles.append((ids, types, logits))
            result = pipeline_result(m, logits.numpy())
            result32 = pipeline_result(m, logits32.numpy())
            assert [x["label"] for x in result] == [x["label"] for x in result32], ("float32 reorders", name, a, b)
            noise[name] = max(noise.get(name, 0.0), max(abs(x["score"] - y["score"]) for x, y in zip(result, result32)))
            if len(result) > 1:
                gaps.append((min(result[i]["score"] - result[i + 1]["score"] for i in range(len(result) - 1)),
                             name, a, b))
            cls_lines.append({"model": name, "text": a, "text_pair": b, "ids": ids, "type_ids": types,
                              "truncated": full > len(ids), "logits": [r7(x) for x in logits.tolist()],
                              "function": pipeline_function(m),
                              "result": [{"label": x["label"], "score": r7(x["score"])} for x in result]})
        # The reference's padding path: one padded batch against the single runs.
        width = max(len(s[0]) for s in singles)
        batch = [s[0] + [PAD] * (width - len(s[0])) for s in singles]
        types = [s[1] + [0] * (width - len(s[1])) for s in singles]
        mask = [[1] * len(s[0]) + [0] * (width - len(s[0])) for s in singles]
        batched = ref.classifier_logits(m, batch, types, mask)
        batch_diff[name] = max(float((batched[i] - s[2]).abs().max()) for i, s in enumerate(singles))
        cross[name] = ref.crosscheck(m, [s[0] for s in singles if len(s[0]) <= m.max_length])

        if m.num_labels == 1:
            act = cross_encoder_activation(m)
            for r in inputs["rerank"]:
                for d in r["documents"]:
                    ids, types, full = ids_of[(r["query"], d, m.max_length)]
                    logit = ref.classifier_logits(m, [ids], [types])[0, 0].item()
                    score = float(apply_function("sigmoid" if act == "sigmoid" else "none", [logit])[0])
                    rr_lines.append({"model": name, "query": r["query"], "document": d, "ids": ids,
                                     "type_ids": types, "truncated": full > len(ids), "logit": r7(logit),
                                     "activation": act, "score": r7(score)})

    # DistilBERT's encoder alone: bert_embed's default mean pooling.
    emb_lines = []
    m = models["distil-cls"]
    for t in inputs["classify"]:
        ids = ids_of[(t, None, m.max_length)][0]
        hidden, _ = ref.encode(m, [ids])
        emb_lines.append({"model": "distil-cls", "text": t, "ids": ids,
                          "mean": [r7(x) for x in ref.pool(m, hidden, None, "mean")[0].tolist()]})

    small = [g for g in gaps if g[0] < MIN_SCORE_GAP]
    if small:
        sys.exit(f"neighbouring scores too close to order reliably: {small}")

    write_goldens(out_dir, "heads_models.json", manifest,
                  (("classify.jsonl", cls_lines), ("rerank.jsonl", rr_lines), ("distil_embeddings.jsonl", emb_lines)))

    print(f"{len(cls_lines)} classification lines, {len(rr_lines)} rerank lines")
    for name in models:
        print(f"{name}: reference vs nn.TransformerEncoderLayer {cross[name]:.2e}, "
              f"padded batch vs single {batch_diff[name]:.2e}, float32 vs float64 scores {noise[name]:.2e}")
    print(f"smallest gap between neighbouring scores: {min(g[0] for g in gaps):.4f}")


if __name__ == "__main__":
    main()
