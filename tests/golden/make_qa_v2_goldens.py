#!/usr/bin/python3
"""make_qa_v2_goldens.py - qa_v2.jsonl: SQuAD 2.0's decision on random logits.

bert_train's evaluation of a question-answering run whose rows include
unanswerable questions decides, per question, between the best span and no
answer as transformers' examples/pytorch/question-answering/utils_qa.py
(commit 31f57e9efd761882d1296f7f6ade11ee87a3900e) postprocess_qa_predictions
does with version_2_with_negative=True, n_best_size 20, max_answer_length 30
and null_score_diff_threshold 0.0.  That function's steps are transcribed
below (postprocess), from the per-feature loop to the final choice; each line
of the output is one example: its context, its windows (features: float32
start and end logits, where the context's pieces begin, their byte offsets)
and the prediction ("" for no answer).  tests/test_ner_qa.c feeds the same
windows to ext/tasks/answers.c and compares the predictions.

Needs numpy only:  /usr/bin/python3 tests/golden/make_qa_v2_goldens.py
"""
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
N_BEST, MAX_ANSWER, THRESHOLD = 20, 30, 0.0
WORDS = "the river runs past old mills and a quiet town where bakers sell bread at dawn".split()


class F32(list):
    """float32 logits, written as the shortest decimals that read back as the same float32."""


def dumps(x):
    if isinstance(x, F32):
        return "[" + ",".join(np.format_float_positional(v, unique=True, trim="-") for v in x) + "]"
    if isinstance(x, dict):
        return "{" + ",".join(json.dumps(k) + ":" + dumps(v) for k, v in x.items()) + "}"
    if isinstance(x, list):
        return "[" + ",".join(dumps(v) for v in x) + "]"
    return json.dumps(x)


def postprocess(features, context):
    """utils_qa.py's postprocess_qa_predictions for one example, v2."""
    min_null_prediction = None
    prelim_predictions = []
    for start_logits, end_logits, offset_mapping in features:
        feature_null_score = start_logits[0] + end_logits[0]
        if min_null_prediction is None or min_null_prediction["score"] > feature_null_score:
            min_null_prediction = {"offsets": (0, 0), "score": feature_null_score,
                                   "start_logit": start_logits[0], "end_logit": end_logits[0]}
        start_indexes = np.argsort(start_logits)[-1: -N_BEST - 1: -1].tolist()
        end_indexes = np.argsort(end_logits)[-1: -N_BEST - 1: -1].tolist()
        for start_index in start_indexes:
            for end_index in end_indexes:
                if (start_index >= len(offset_mapping) or end_index >= len(offset_mapping)
                        or offset_mapping[start_index] is None or offset_mapping[end_index] is None):
                    continue
                if end_index < start_index or end_index - start_index + 1 > MAX_ANSWER:
                    continue
                prelim_predictions.append({"offsets": (offset_mapping[start_index][0], offset_mapping[end_index][1]),
                                           "score": start_logits[start_index] + end_logits[end_index],
                                           "start_logit": start_logits[start_index],
                                           "end_logit": end_logits[end_index]})
    prelim_predictions.append(min_null_prediction)
    null_score = min_null_prediction["score"]
    predictions = sorted(prelim_predictions, key=lambda x: x["score"], reverse=True)[:N_BEST]
    if not any(p["offsets"] == (0, 0) for p in predictions):
        predictions.append(min_null_prediction)
    for pred in predictions:
        offsets = pred.pop("offsets")
        pred["text"] = context[offsets[0]: offsets[1]]
    if len(predictions) == 0 or (len(predictions) == 1 and predictions[0]["text"] == ""):
        predictions.insert(0, {"text": "empty", "start_logit": 0.0, "end_logit": 0.0, "score": 0.0})
    i = 0
    while predictions[i]["text"] == "":
        i += 1
    best_non_null_pred = predictions[i]
    score_diff = null_score - best_non_null_pred["start_logit"] - best_non_null_pred["end_logit"]
    return "" if score_diff > THRESHOLD else best_non_null_pred["text"]


def example(rng, k):
    n_words = int(rng.integers(3, 40))
    words = [WORDS[int(rng.integers(0, len(WORDS)))] for _ in range(n_words)]
    context = " ".join(words)
    # Pieces: each word whole, or cut in two (a word piece and its ##rest).
    pieces, at = [], 0
    for w in words:
        if len(w) > 3 and rng.random() < 0.3:
            cut = int(rng.integers(1, len(w)))
            pieces += [(at, at + cut), (at + cut, at + len(w))]
        else:
            pieces.append((at, at + len(w)))
        at += len(w) + 1
    q_len = int(rng.integers(2, 8))
    ctx_first = 1 + q_len + 1
    width = int(rng.integers(8, 30))
    stride = max(1, width // 3)
    windows, a = [], 0
    while True:
        b = min(a + width, len(pieces))
        windows.append((a, b))
        if b == len(pieces):
            break
        a = b - stride
    features, out = [], []
    # k % 3: no answer favoured, a span favoured, or even.
    shift = (14.0, -3.0, 9.0)[k % 3]
    for a, b in windows:
        n = ctx_first + (b - a) + 1
        start = (2 * rng.standard_normal(n)).astype(np.float32)
        end = (2 * rng.standard_normal(n)).astype(np.float32)
        start[0] += np.float32(shift / 2)
        end[0] += np.float32(shift / 2)
        offsets = [None] * n
        for i in range(a, b):
            offsets[ctx_first + i - a] = pieces[i]
        features.append((start, end, offsets))
        out.append({"start": F32(start), "end": F32(end), "ctx_first": ctx_first,
                    "pieces": [list(p) for p in pieces[a:b]]})
    # The sums in float32 as numpy adds float32 logits; the C code sums in
    # double, which agrees unless two scores tie to the last bit.
    return {"context": context, "windows": out, "prediction": postprocess(features, context)}


def main():
    rng = np.random.default_rng(2024)
    lines = [example(rng, k) for k in range(45)]
    with open(os.path.join(HERE, "qa_v2.jsonl"), "w") as f:
        for line in lines:
            f.write(dumps(line) + "\n")
    empty = sum(1 for x in lines if x["prediction"] == "")
    print(f"qa_v2.jsonl: {len(lines)} examples, {empty} without an answer, "
          f"{sum(len(x['windows']) for x in lines)} windows")


if __name__ == "__main__":
    main()
