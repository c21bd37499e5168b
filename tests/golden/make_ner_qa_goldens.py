#!/usr/bin/python3
"""make_ner_qa_goldens.py MODELS_DIR OUT_DIR TOKENIZER_JSON - the golden data of
bert_ner, bert_ner_each, bert_answer and bert_answer_each, from independent
references only:

  tokens, offsets, word ids
              Hugging Face's Rust tokenizer (hf_offsets.js, npm `tokenizers`)
              on bert-base-uncased's tokenizer.json, untruncated; offsets in
              code points.  The windows of long texts are cut here from that
              encoding by the Rust library's own rule (below), because
              `tokenizers` 0.23.1/0.23.2 return incomplete overflowing windows.
  logits      tests/reference/bert_reference.py (PyTorch, float64):
              BertForTokenClassification, BertForQuestionAnswering and their
              DistilBERT counterparts
  results     the pipelines' post-processing, re-implemented below from the
              Python transformers sources (huggingface/transformers):

  * src/transformers/pipelines/token_classification.py at commit
    00e12e7c54598e50e7bef1540db3408f81916de1: postprocess (softmax with the
    row maximum subtracted, ignore_labels ["O"]), gather_pre_entities
    (special tokens skipped; word = the token string, or the original text
    for [UNK]; is_subword = len(token string) != len(original span), as for
    every tokenizer with a continuing_subword_prefix), aggregate,
    aggregate_word(s) (first / max / average), group_sub_entities (mean of
    the scores, word = convert_tokens_to_string) and group_entities with
    get_tag (B-/I- prefixes; a label without one counts as I-); the group's
    name is the label after its first "-", as later versions split it
    (split("-", 1); this revision splits at the last "-", which differs only
    for labels with two dashes).  The
    stride mode of later versions (postprocess over several windows, then
    aggregate_overlapping_entities: sorted by start, of overlapping
    entities the longer one stays, at equal length the higher score) is
    followed for texts longer than max_length, see NER_STRIDE.  The
    pipeline refuses stride with aggregation "none"; here "none" is merged
    the same way, and `index` counts in the whole text's encoding.
    convert_tokens_to_string of a fast tokenizer is the Rust WordPiece
    decoder (tokenizers, decoders/wordpiece.rs: "##" pieces glued, others
    joined by a space, then its cleanup rules per token).
  * src/transformers/pipelines/question_answering.py as of transformers
    4.53.0 (tag v4.53.0; the stored older revision
    b2986ff54c2b95f76d322919cfb52d3d900b044c has the same span decoding but
    no answer merging): preprocess with question first, truncation
    "only_second", max_seq_len = min(model_max_length, 384), doc_stride =
    min(max_seq_len // 2, 128); p_mask 1 on the question and special tokens,
    0 on the context and on [CLS]; select_starts_ends (masked logits set to
    -10000, softmax over the window, [CLS] then set to 0 since
    handle_impossible_answer is False); decode_spans (outer product,
    triu/tril to 0 <= end - start < max_answer_len = 15, top_k by score);
    get_indices with align_to_words=True (the words of the start and end
    tokens, as far as they lie in the window, give the characters); and,
    as transformers 4.37 and later do, an answer whose text equals
    (case-insensitively) one already found in an earlier span or window has
    its score added to that one instead of being listed again; finally
    sorted by score (stable) and cut to top_k.

Windows (tokenizers, Encoding::truncate with a stride): the pieces to cut are
taken in windows of W pieces starting every W - stride pieces, the last
window ending at the last piece.  NER: W = max_length - 2, stride
NER_STRIDE(max_length).  QA: W = max_seq_len - len(question) - 3.

Checks printed and enforced: every result is recomputed from float32 logits
and from float64 logits with noise of 1e-4 added (three draws); entities,
words, offsets, answers and their order must not change, so no result hangs
on a near tie.  The smallest gap between a token's two best labels is
printed too.

Writes OUT_DIR/ner_qa_models.json, ner.jsonl and qa.jsonl.  Run through
make_goldens.sh, which also builds the models.
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
from golden_common import node_json, script_args, write_goldens  # noqa: E402
from make_goldens import checksum, r7  # noqa: E402

NER_MODELS = ["ner-conll-f32", "ner-short-f16", "ner-distil"]
QA_MODELS = ["qa-f32", "qa-short-bf16", "qa-distil"]
LONG_TEXT = 300     # pieces
AGGREGATIONS = ["none", "simple", "first", "average", "max"]
QA_TOP_K = [1, 3, 5]
MAX_ANSWER_LEN = 15
NOISE = 1e-4


def NER_STRIDE(max_length):
    """Overlap, in word pieces, of the windows over a text longer than
    max_length: the QA pipeline's doc_stride rule applied to NER."""
    return min(128, (max_length - 2) // 2)


def QA_WINDOW(max_length):
    max_seq_len = min(max_length, 384)
    return max_seq_len, min(max_seq_len // 2, 128)


def hf_run(tokenizer_json, encode=(), decode=(), tokens_to_string=()):
    return node_json("hf_offsets.js", tokenizer_json, {"encode": list(encode), "decode": list(decode),
                                                       "tokens_to_string": list(tokens_to_string)})


def windows(n, width, stride):
    """tokenizers' Encoding::truncate(width, stride): [start, stop) ranges."""
    if n <= width:
        return [(0, n)]
    if stride >= width:
        raise ValueError(f"stride {stride} not below the window width {width}")
    out, start = [], 0
    while True:
        stop = min(start + width, n)
        out.append((start, stop))
        if stop == n:
            return out
        start += width - stride


# ---- the WordPiece decoder (convert_tokens_to_string) --------------------------------

def wordpiece_cleanup(s):
    for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                 (" 'm", "'m"), (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        s = s.replace(a, b)
    return s


def convert_tokens_to_string(tokens):
    out = []
    for i, t in enumerate(tokens):
        if i != 0:
            t = t.replace("##", "", 1) if t.startswith("##") else " " + t
        out.append(wordpiece_cleanup(t))
    return "".join(out)


# ---- token_classification.py -----------------------------------------------------------

def softmax_rows(logits):
    maxes = np.max(logits, axis=-1, keepdims=True)
    shifted_exp = np.exp(logits - maxes)
    return shifted_exp / shifted_exp.sum(axis=-1, keepdims=True)


def get_tag(name):
    if name.startswith("B-"):
        return "B", name[2:]
    if name.startswith("I-"):
        return "I", name[2:]
    return "I", name


class PipelineTokenizer:
    """What the token-classification pipeline reads from a fast tokenizer:
    by_length, whether its model has a continuing_subword_prefix (then a
    piece is a subword when its string and its span differ in length; else
    the fallback heuristic of the spaces around it decides); to_string,
    convert_tokens_to_string (the tokenizer's decoder on token strings);
    vocab and unk_id, for convert_ids_to_tokens and the unknown token's id
    (the Rust encoding's token strings are a Unigram's pieces of text, not
    the vocabulary's "<unk>"); without a vocab, WordPiece's token strings
    are the vocabulary's and "[UNK]" is the unknown one."""

    def __init__(self, by_length, to_string, vocab=None, unk_id=None):
        self.by_length, self.to_string, self.vocab, self.unk_id = by_length, to_string, vocab, unk_id

    def piece(self, enc, k):
        """(convert_ids_to_tokens, is the unknown token) of piece k."""
        if self.vocab is None:
            return enc["tokens"][k], enc["tokens"][k] == "[UNK]"
        return self.vocab[enc["ids"][k]], enc["ids"][k] == self.unk_id


WORDPIECE = PipelineTokenizer(True, convert_tokens_to_string)


def ner_window(sentence, toks, scores, id2label, agg, index_base, tok=WORDPIECE):
    """postprocess of one window.  toks: [(token, start, end, is_unk)] of the
    window's pieces (no specials); scores [n x labels]."""
    pre = []
    for i, (token, start, end, is_unk) in enumerate(toks):
        word_ref = sentence[start:end]
        if tok.by_length:
            is_subword = len(token) != len(word_ref)
        else:
            is_subword = start > 0 and " " not in sentence[start - 1:start + 1]
        word = token
        if is_unk:
            word, is_subword = word_ref, False
        pre.append({"word": word, "scores": scores[i], "start": start, "end": end,
                    "index": index_base + i, "is_subword": is_subword})
    if agg in ("none", "simple"):
        entities = []
        for p in pre:
            idx = int(p["scores"].argmax())
            entities.append({"entity": id2label[idx], "score": float(p["scores"][idx]), "index": p["index"],
                             "word": p["word"], "start": p["start"], "end": p["end"]})
    else:
        entities, group = [], None
        for p in pre:
            if group is None:
                group = [p]
            elif p["is_subword"]:
                group.append(p)
            else:
                entities.append(aggregate_word(group, agg, id2label, tok))
                group = [p]
        if group is not None:
            entities.append(aggregate_word(group, agg, id2label, tok))
    if agg != "none":
        entities = group_entities(entities, tok)
    key = "entity" if agg == "none" else "entity_group"
    return [e for e in entities if e[key] != "O"]


def aggregate_word(group, agg, id2label, tok):
    word = tok.to_string([p["word"] for p in group])
    if agg == "first":
        scores = group[0]["scores"]
        idx = int(scores.argmax())
        score = scores[idx]
    elif agg == "max":
        best = max(group, key=lambda p: p["scores"].max())
        scores = best["scores"]
        idx = int(scores.argmax())
        score = scores[idx]
    else:
        avg = np.nanmean(np.stack([p["scores"] for p in group]), axis=0)
        idx = int(avg.argmax())
        score = avg[idx]
    return {"entity": id2label[idx], "score": float(score), "word": word,
            "start": group[0]["start"], "end": group[-1]["end"]}


def group_sub_entities(group, tok):
    return {"entity_group": group[0]["entity"].split("-", 1)[-1],
            "score": float(np.mean([e["score"] for e in group])),
            "word": tok.to_string([e["word"] for e in group]),
            "start": group[0]["start"], "end": group[-1]["end"]}


def group_entities(entities, tok):
    groups, disagg = [], []
    for e in entities:
        if not disagg:
            disagg.append(e)
            continue
        bi, tag = get_tag(e["entity"])
        _, last_tag = get_tag(disagg[-1]["entity"])
        if tag == last_tag and bi != "B":
            disagg.append(e)
        else:
            groups.append(group_sub_entities(disagg, tok))
            disagg = [e]
    if disagg:
        groups.append(group_sub_entities(disagg, tok))
    return groups


def aggregate_overlapping_entities(entities):
    if not entities:
        return entities
    entities = sorted(entities, key=lambda x: x["start"])
    out, prev = [], entities[0]
    for e in entities:
        if prev["start"] <= e["start"] < prev["end"]:
            cur_len, prev_len = e["end"] - e["start"], prev["end"] - prev["start"]
            if cur_len > prev_len or cur_len == prev_len and e["score"] > prev["score"]:
                prev = e
        else:
            out.append(prev)
            prev = e
    out.append(prev)
    return out


def ner_text(m, text, enc, logits_of, agg, tok=WORDPIECE):
    """The pipeline over every window of text; logits_of(ids) -> [seq x labels]."""
    n = len(enc["ids"]) - 2
    content = list(range(1, n + 1))
    spans = windows(n, m.max_length - 2, NER_STRIDE(m.max_length))
    id2label = m.id2label
    found = []
    for (a, b) in spans:
        ids = [enc["ids"][0]] + [enc["ids"][k] for k in content[a:b]] + [enc["ids"][-1]]
        scores = softmax_rows(logits_of(ids))[1:-1]
        toks = [(tok.piece(enc, k)[0], enc["offsets"][k][0], enc["offsets"][k][1], tok.piece(enc, k)[1])
                for k in content[a:b]]
        found.extend(ner_window(text, toks, scores, id2label, agg, 1 + a, tok))
    if len(spans) > 1:
        found = aggregate_overlapping_entities(found)
    return found, len(spans)


# ---- question_answering.py ----------------------------------------------------------------

def decode_spans(start, end, topk, max_answer_len, undesired):
    outer = np.matmul(start[:, None], end[None, :])
    candidates = np.tril(np.triu(outer), max_answer_len - 1)
    flat = candidates.flatten()
    if topk == 1:
        idx_sort = [int(np.argmax(flat))]
    elif len(flat) < topk:
        idx_sort = np.argsort(-flat, kind="stable")
    else:
        idx = np.argpartition(-flat, topk)[0:topk]
        idx_sort = idx[np.argsort(-flat[idx], kind="stable")]
    starts, ends = np.unravel_index(idx_sort, candidates.shape)
    # The pipeline tests membership in undesired_tokens.nonzero() of a
    # [1 x seq] array, whose first row of indices is all zeros: index 0
    # passes too (its probability is 0 by then).
    allowed = set(np.nonzero(undesired)[0].tolist()) | {0}
    keep = [k for k in range(len(starts)) if int(starts[k]) in allowed and int(ends[k]) in allowed]
    return [(int(starts[k]), int(ends[k]), float(candidates[starts[k], ends[k]])) for k in keep]


def qa_window_spans(start_logits, end_logits, p_mask, top_k):
    undesired = np.abs(np.asarray(p_mask) - 1)
    mask = undesired == 0
    start = np.where(mask, -10000.0, start_logits)
    end = np.where(mask, -10000.0, end_logits)
    start = np.exp(start - start.max())
    start = start / start.sum()
    end = np.exp(end - end.max())
    end = end / end.sum()
    start[0] = end[0] = 0.0
    return decode_spans(start, end, top_k, MAX_ANSWER_LEN, undesired)


def qa_answers(m, question, context, enc, logits_of, top_k, seps=1):
    """seps: separators between question and context, 1 for BERT's
    [CLS] q [SEP] c [SEP], 2 for RoBERTa's and MPNet's <s> q </s></s> c </s>."""
    seq = enc["sequence_ids"]
    q_idx = [k for k, s in enumerate(seq) if s == 0]
    c_idx = [k for k, s in enumerate(seq) if s == 1]
    cls, sep = enc["ids"][0], enc["ids"][q_idx[-1] + 1]
    max_seq_len, stride = QA_WINDOW(m.max_length)
    fixed = len(q_idx) + 2 + seps
    if len(c_idx) + fixed <= max_seq_len:
        spans = [(0, len(c_idx))]
    else:
        spans = windows(len(c_idx), max_seq_len - fixed, stride)
    answers = []
    for (a, b) in spans:
        ctx = c_idx[a:b]
        ids = [cls] + [enc["ids"][k] for k in q_idx] + [sep] * seps + [enc["ids"][k] for k in ctx] + [sep]
        types = [0] * (len(q_idx) + 1 + seps) + [1] * (len(ctx) + 1)
        p_mask = [1] * (len(q_idx) + 1 + seps) + [0] * len(ctx) + [1]
        p_mask[0] = 0
        start_logits, end_logits = logits_of(ids, types)
        first_ctx = len(q_idx) + 1 + seps
        words = [enc["word_ids"][k] for k in ctx]
        for s, e, score in qa_window_spans(start_logits, end_logits, p_mask, top_k):
            if not (first_ctx <= s < first_ctx + len(ctx)) or not (first_ctx <= e < first_ctx + len(ctx)):
                raise ValueError("a span outside the context reached the answers: top_k too large for the context")
            ws, we = words[s - first_ctx], words[e - first_ctx]
            in_s = [j for j, w in enumerate(words) if w == ws]
            in_e = [j for j, w in enumerate(words) if w == we]
            start_char = enc["offsets"][ctx[in_s[0]]][0]
            end_char = enc["offsets"][ctx[in_e[-1]]][1]
            target = context[start_char:end_char]
            same = next((x for x in answers if x["answer"].lower() == target.lower()), None)
            if same:
                same["score"] += score
            else:
                answers.append({"score": score, "start": start_char, "end": end_char, "answer": target})
    answers = sorted(answers, key=lambda x: x["score"], reverse=True)[:top_k]
    return answers, len(spans)


# ---- checks -----------------------------------------------------------------------------

def same_structure(a, b, what, tol=1e-5):
    """Everything but the scores identical, scores within tol."""
    if len(a) != len(b):
        raise SystemExit(f"not decisive: {what}: {len(a)} against {len(b)} results")
    for x, y in zip(a, b):
        for k in x:
            if k == "score":
                if abs(x[k] - y[k]) > tol:
                    raise SystemExit(f"not decisive: {what}: score {x[k]} against {y[k]}")
            elif x[k] != y[k]:
                raise SystemExit(f"not decisive: {what}: {k} {x[k]!r} against {y[k]!r}")


def rounded(results):
    return [{k: (r7(v) if k == "score" else v) for k, v in r.items()} for r in results]


def main():
    models_dir, out_dir, tokenizer_json = script_args(__doc__, 3)
    inputs = json.load(open(os.path.join(HERE, "ner_qa_inputs.json"), encoding="utf-8"))
    rng = np.random.default_rng(14)
    encs = hf_run(tokenizer_json, encode=[{"a": t, "b": None} for t in inputs["ner"]] +
                  [{"a": p["question"], "b": p["context"]} for p in inputs["qa"]])["encode"]
    ner_encs, qa_encs = encs[:len(inputs["ner"])], encs[len(inputs["ner"]):]
    manifest, ner_lines, qa_lines = {}, [], []
    word_checks, word_mismatch = 0, 0
    stats = {}

    for name in NER_MODELS:
        m = ref.Model(os.path.join(models_dir, name))
        assert m.token_classification, name
        cache64, cache32 = {}, {}

        def l64(ids):
            key = tuple(ids)
            if key not in cache64:
                cache64[key] = ref.token_logits(m, [ids])[0].numpy()
            return cache64[key]

        def l32(ids):
            key = tuple(ids)
            if key not in cache32:
                cache32[key] = ref.token_logits(m, [ids], compute=torch.float32)[0].double().numpy()
            return cache32[key]

        min_gap, label_counts, n_windows = np.inf, np.zeros(m.num_labels, dtype=int), 0
        for text, enc in zip(inputs["ner"], ner_encs):
            if len(enc["ids"]) > LONG_TEXT and m.max_length < LONG_TEXT:
                continue    # many short windows: the shorter long text tests them, in less space
            results = {}
            for agg in AGGREGATIONS:
                res, nw = ner_text(m, text, enc, l64, agg)
                same_structure(res, ner_text(m, text, enc, l32, agg)[0], f"{name} float32 {agg} {text[:30]!r}")
                for _ in range(3):
                    noisy = {}

                    def lnoise(ids):
                        key = tuple(ids)
                        if key not in noisy:
                            x = l64(ids)
                            noisy[key] = x + rng.uniform(-NOISE, NOISE, x.shape)
                        return noisy[key]
                    same_structure(res, ner_text(m, text, enc, lnoise, agg)[0], f"{name} noise {agg} {text[:30]!r}", 1e-3)
                for r in res:
                    assert text[r["start"]:r["end"]], ("empty span", name, text, r)
                # As bert_ner_each's rows: entity, score, word, start, end, index.
                key = "entity" if agg == "none" else "entity_group"
                results[agg] = [[r[key], r7(r["score"]), r["word"], r["start"], r["end"], r.get("index")]
                                for r in res]
            for (a, b) in windows(len(enc["ids"]) - 2, m.max_length - 2, NER_STRIDE(m.max_length)):
                ids = [enc["ids"][0]] + enc["ids"][1 + a:1 + b] + [enc["ids"][-1]]
                lg = np.sort(l64(ids)[1:-1], axis=-1)
                min_gap = min(min_gap, float((lg[:, -1] - lg[:, -2]).min()))
                label_counts += np.bincount(l64(ids)[1:-1].argmax(-1), minlength=m.num_labels)
            n_windows = max(n_windows, nw)
            ner_lines.append({"model": name, "text": text, "windows": nw, "results": results})
        stats[name] = (min_gap, label_counts.tolist(), n_windows)
        manifest[name] = {"path": name, "model_type": m.config["model_type"], "task": "token_classification",
                          "labels": [m.id2label[i] for i in range(m.num_labels)], "max_length": m.max_length,
                          "ner_stride": NER_STRIDE(m.max_length), "dtype": m.dtype,
                          "safetensors_bytes": os.path.getsize(os.path.join(m.dir, "model.safetensors")),
                          "safetensors_checksum": checksum(os.path.join(m.dir, "model.safetensors"))}

    # `word` against the Rust decoder itself, on every group without [UNK].
    decode_req, decode_want = [], []
    for line in ner_lines:
        enc = ner_encs[inputs["ner"].index(line["text"])]
        for e in line["results"]["simple"]:
            k = [i for i, o in enumerate(enc["offsets"]) if enc["special_tokens_mask"][i] == 0
                 and o[0] >= e[3] and o[1] <= e[4]]
            if all(enc["tokens"][i] != "[UNK]" for i in k) and not enc["tokens"][k[0]].startswith("##"):
                decode_req.append([enc["ids"][i] for i in k])
                decode_want.append(e[2])
    for got, want in zip(hf_run(tokenizer_json, decode=decode_req)["decode"], decode_want):
        word_checks += 1
        word_mismatch += got != want
    if word_mismatch:
        sys.exit(f"convert_tokens_to_string differs from the Rust decoder on {word_mismatch} of {word_checks} words")

    for name in QA_MODELS:
        m = ref.Model(os.path.join(models_dir, name))
        assert m.has_qa, name
        cache = {}

        def q64(ids, types, compute=torch.float64):
            key = (tuple(ids), compute)
            if key not in cache:
                s, e = ref.qa_logits(m, [ids], [types], compute=compute)
                cache[key] = (s[0].double().numpy(), e[0].double().numpy())
            return cache[key]

        def q32(ids, types):
            return q64(ids, types, torch.float32)

        n_windows = 0
        for pair, enc in zip(inputs["qa"], qa_encs):
            q, c = pair["question"], pair["context"]
            line = {"model": name, "question": q, "context": c}
            for k in QA_TOP_K:
                res, nw = qa_answers(m, q, c, enc, q64, k)
                same_structure(res, qa_answers(m, q, c, enc, q32, k)[0], f"{name} float32 top{k} {q!r}")
                for _ in range(3):
                    noisy = {}

                    def qnoise(ids, types):
                        key = tuple(ids)
                        if key not in noisy:
                            s, e = q64(ids, types)
                            noisy[key] = (s + rng.uniform(-NOISE, NOISE, s.shape), e + rng.uniform(-NOISE, NOISE, e.shape))
                        return noisy[key]
                    same_structure(res, qa_answers(m, q, c, enc, qnoise, k)[0], f"{name} noise top{k} {q!r}", 1e-3)
                for r in res:
                    assert c[r["start"]:r["end"]] == r["answer"]
                line["windows"] = nw
                line[f"top{k}"] = rounded(res)
            n_windows = max(n_windows, nw)
            qa_lines.append(line)
        stats[name] = n_windows
        mx, stride = QA_WINDOW(m.max_length)
        manifest[name] = {"path": name, "model_type": m.config["model_type"], "task": "question_answering",
                          "labels": None, "max_length": m.max_length, "max_seq_len": mx, "doc_stride": stride,
                          "dtype": m.dtype,
                          "safetensors_bytes": os.path.getsize(os.path.join(m.dir, "model.safetensors")),
                          "safetensors_checksum": checksum(os.path.join(m.dir, "model.safetensors"))}

    write_goldens(out_dir, "ner_qa_models.json", manifest, (("ner.jsonl", ner_lines), ("qa.jsonl", qa_lines)))
    print(f"{len(ner_lines)} NER lines, {len(qa_lines)} QA lines; `word` equal to the Rust decoder's on "
          f"{word_checks} groups")
    for name in NER_MODELS:
        gap, counts, nw = stats[name]
        print(f"{name}: smallest gap between a token's two best logits {gap:.4f}; tokens per label {counts}; "
              f"up to {nw} windows")
    for name in QA_MODELS:
        print(f"{name}: up to {stats[name]} windows")


if __name__ == "__main__":
    main()
