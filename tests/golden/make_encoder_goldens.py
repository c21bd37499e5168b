#!/usr/bin/python3
"""make_encoder_goldens.py MODELS_DIR OUT_DIR BERT_TOKENIZER_JSON - the golden
data of the ELECTRA, ModernBERT, DeBERTa-v2, JinaBERT, nomic-bert and gte "new" test models (tests/test_encoders.c), from
independent references only:

  token ids   Hugging Face's Rust tokenizer (hf_tokenizer.js and
              hf_offsets.js, npm `tokenizers`): BERT_TOKENIZER_JSON,
              bert-base-uncased's tokenizer.json, for the ELECTRA, DeBERTa,
              nomic-bert and gte models, which carry its vocab.txt (as google/electra-* do;
              DeBERTa's are tests of the encoder, whichever tokenizer the
              directory has); each
              ModernBERT model's own tokenizer.json (ModernBERT-large's), and
              deberta-v3-spm's (the DeBERTa-v3-shaped SentencePiece Unigram of
              tests/fixtures/deberta-v3, which it carries).
  numbers     tests/reference/encoder_reference.py (PyTorch, float64),
              transcribed from modeling_electra.py, modeling_modernbert.py,
              modeling_deberta_v2.py, JinaBERT's, nomic-bert's and gte's
              trust_remote_code modeling files (files and commits cited there)
  prompts     SentenceTransformer.encode's: the registration's prompt name
              looked up in config_sentence_transformers.json, prepended
  hidden      transformers' output_hidden_states, through bert_hidden_states
  results     the pipelines' post-processing as make_family_goldens.py
              assembles it (fill-mask, text classification, token
              classification with its word heuristic, question answering
              with one separator between question and context).

Writes OUT_DIR/encoders_models.json and encoders.jsonl, in
families.jsonl's format (make_family_goldens.py): SQL checks, and "encode"
lines (the mean of the last hidden state for raw token ids) at short
lengths, past ModernBERT's local windows (300 tokens against windows of 16
and 64) and past 512 tokens.  Every result is recomputed in float32 too;
the worst float32-float64 difference is printed.
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, HERE)
import bert_reference as bref  # noqa: E402
import encoder_reference as ref  # noqa: E402
from make_family_goldens import pipeline_tokenizer, prompt_of  # noqa: E402
from make_goldens import HF, checksum, r7  # noqa: E402
from make_heads_goldens import pipeline_function, sigmoid, softmax  # noqa: E402
from make_ner_qa_goldens import hf_run, ner_text, qa_answers, rounded, same_structure  # noqa: E402

REGISTRATIONS = {
    "electra-mlm": ("electra-mlm", None),
    "electra-disc": ("electra-disc", None),
    "electra-base": ("electra-base", None),
    "electra-cls-f16": ("electra-cls-f16", None),
    "electra-ner": ("electra-ner", None),
    "electra-ner-none": ("electra-ner", {"aggregation": "none"}),
    "electra-qa": ("electra-qa", None),
    "modernbert-mlm": ("modernbert-mlm", None),
    "modernbert-cls": ("modernbert-cls", None),
    "modernbert-cls-first": ("modernbert-cls-first", None),
    "modernbert-ner": ("modernbert-ner", None),
    "modernbert-ner-none": ("modernbert-ner", {"aggregation": "none"}),
    "modernbert-qa": ("modernbert-qa", None),
    "deberta-cls": ("deberta-cls", None),
    "deberta-ner": ("deberta-ner", None),
    "deberta-qa": ("deberta-qa", None),
    "deberta-mlm": ("deberta-mlm", None),
    "deberta-mlm-legacy": ("deberta-mlm-legacy", None),
    "deberta-v3-spm": ("deberta-v3-spm", None),
    "jina-mlm": ("jina-mlm", None),
    "jina-embed": ("jina-embed", None),
    "jina-cls": ("jina-cls", None),
    "nomic-mlm": ("nomic-mlm", None),
    "nomic-embed": ("nomic-embed", None),
    "nomic-embed-query": ("nomic-embed", {"prompt": "search_query"}),
    "nomic-embed-doc": ("nomic-embed", {"prompt": "search_document"}),
    "nomic-cls": ("nomic-cls", None),
    "gte-mlm": ("gte-mlm", None),
    "gte-embed": ("gte-embed", None),
    "gte-cls": ("gte-cls", None),
    "gte-ner": ("gte-ner", None),
    "gte-ner-none": ("gte-ner", {"aggregation": "none"}),
    "gte-qa": ("gte-qa", None),
}
EMBED = ["electra-disc", "electra-base", "modernbert-mlm", "modernbert-cls", "deberta-cls", "deberta-v3-spm",
         "jina-embed", "jina-mlm", "nomic-embed", "nomic-embed-query", "nomic-embed-doc", "nomic-mlm", "gte-embed",
         "gte-mlm"]
MLM = ["electra-mlm", "modernbert-mlm", "deberta-mlm", "deberta-mlm-legacy", "deberta-v3-spm", "jina-mlm", "nomic-mlm",
       "gte-mlm"]
CLASSIFY = ["electra-cls-f16", "modernbert-cls", "modernbert-cls-first", "deberta-cls", "jina-cls", "nomic-cls",
            "gte-cls"]
NER = ["electra-ner", "electra-ner-none", "modernbert-ner", "modernbert-ner-none", "deberta-ner", "gte-ner",
       "gte-ner-none"]
QA = ["electra-qa", "modernbert-qa", "deberta-qa", "gte-qa"]
# Raw token ids for the encoder: (model, length); the ModernBERT lengths pass
# the local windows (16 and 64 tokens) and 512.
ENCODE = [("electra-mlm", 6), ("electra-mlm", 600), ("electra-base", 40), ("electra-disc", 300),
          ("modernbert-mlm", 6), ("modernbert-mlm", 40), ("modernbert-mlm", 300), ("modernbert-mlm", 700),
          ("modernbert-cls", 300), ("modernbert-cls-first", 530), ("modernbert-qa", 100),
          ("deberta-cls", 6), ("deberta-cls", 300), ("deberta-ner", 40), ("deberta-qa", 512),
          # JinaBERT: ALiBi at short lengths and past 512 (its 8192 positions need no table).
          ("jina-mlm", 6), ("jina-mlm", 300), ("jina-embed", 40), ("jina-embed", 1100), ("jina-cls", 700),
          # nomic-bert and gte: rotary at short lengths and past 512; nomic-cls's
          # dynamic NTK scaling past its 256 trained positions.
          ("nomic-mlm", 6), ("nomic-mlm", 600), ("nomic-embed", 40), ("nomic-embed", 1100), ("nomic-cls", 200),
          ("nomic-cls", 700), ("gte-mlm", 6), ("gte-mlm", 700), ("gte-embed", 40), ("gte-embed", 1100),
          ("gte-cls", 530), ("gte-ner", 100), ("gte-qa", 300)]
TOL_ORDER = 2e-4
# About 700 word pieces: past 512 (ModernBERT reads all of it, up to its
# 1024 positions; ELECTRA's 512 cut it) and past every local window.
LONG_TEXT = " ".join(f"Paragraph {i} says that the river rose by {i * 7} centimetres overnight." for i in range(50))
EMBED_TEXTS = 24


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    models_dir, out_dir, bert_tokenizer = sys.argv[1:]
    torch.set_grad_enabled(False)
    torch.set_num_threads(1)
    inputs = json.load(open(os.path.join(HERE, "inputs.json"), encoding="utf-8"))
    heads = json.load(open(os.path.join(HERE, "heads_inputs.json"), encoding="utf-8"))
    nerqa = json.load(open(os.path.join(HERE, "ner_qa_inputs.json"), encoding="utf-8"))
    models = {n: ref.Model(os.path.join(models_dir, d)) for n, (d, _) in REGISTRATIONS.items()}

    def tokenizer_of(name):
        own = os.path.join(models_dir, REGISTRATIONS[name][0], "tokenizer.json")
        return own if os.path.exists(own) else bert_tokenizer

    lines, noise = [], {}

    def note(kind, a, b):
        noise[kind] = max(noise.get(kind, 0.0), float(np.max(np.abs(np.asarray(a) - np.asarray(b)))))

    def encodings(name, requests):
        return HF(tokenizer_of(name)).run(encode=requests)["encode"]

    # ---- the encoder on raw token ids ---------------------------------------------------
    for name, n in ENCODE:
        m = models[name]
        cls, sep = (50281, 50282) if m.modern else (101, 102)
        ids = [cls] + [1000 + (7 * i) % 20000 for i in range(n - 2)] + [sep]
        h64 = ref.encode(m, [ids])[0][0]
        h32 = ref.encode(m, [ids], compute=torch.float32)[0][0].double()
        note("hidden state", h64, h32)
        lines.append({"model": name, "encode": ids, "mean": [r7(x) for x in h64.mean(0).tolist()]})

    # ---- hidden states as bert_hidden_states shows them: transformers'
    # output_hidden_states (ELECTRA's first after embeddings_project,
    # ModernBERT's last before final_norm), one position's vectors -------------------------
    for name in ("electra-mlm", "modernbert-mlm", "nomic-mlm", "gte-mlm"):
        m = models[name]
        for text in ("hello world", "Rotary positions turn queries and keys by where they stand."):
            ids = encodings(name, [{"a": text, "b": None, "max_length": m.max_length}])[0]["ids"]
            trace, trace32 = bref.new_trace(), bref.new_trace()
            ref.encode(m, [ids], trace=trace)
            ref.encode(m, [ids], compute=torch.float32, trace=trace32)
            for h64, h32 in zip(trace["hidden_states"], trace32["hidden_states"]):
                note("hidden states", h64[0, 1], h32[0, 1].double())
            lines.append({"model": name, "sql": "SELECT json_group_array(json(v)) FROM (SELECT "
                          "bert_vector_to_json(vector) AS v FROM bert_hidden_states(?1, json_object('model', ?2)) "
                          "WHERE position = 1 ORDER BY layer)", "args": [text],
                          "expected": [[r7(x) for x in h[0, 1].tolist()] for h in trace["hidden_states"]]})

    # ---- embeddings (mean pooling, the default without sentence-transformers files,
    # else theirs), with the registration's prompt --------------------------------------
    # The first texts only: the goldens stay small.
    texts = (list(inputs["sentences"]) + [p for pair in inputs["similarity"] for p in pair])[:EMBED_TEXTS]
    texts.append(LONG_TEXT)
    for name in EMBED:
        m = models[name]
        prefix, mode = prompt_of(m, REGISTRATIONS[name][1]), m.st["pooling"] if m.st["present"] else "mean"
        requests = [{"a": prefix + t, "b": None, "max_length": m.max_length} for t in texts]
        for text, enc in zip(texts, encodings(name, requests)):
            ids = enc["ids"]
            v64 = bref.pool(m, ref.encode(m, [ids])[0], None, mode)
            v32 = bref.pool(m, ref.encode(m, [ids], compute=torch.float32)[0], None, mode)
            if m.st["normalize"]:
                v64, v32 = bref.normalize(v64), bref.normalize(v32)
            note("embedding", v64, v32.double())
            lines.append({"model": name, "sql": "SELECT bert_token_ids(?1, ?2)", "args": [text], "expected": ids})
            lines.append({"model": name, "sql": "SELECT bert_vector_to_json(bert_embed(?1, ?2))", "args": [text],
                          "expected": [r7(x) for x in v64[0].tolist()]})

    # ---- fill-mask ---------------------------------------------------------------------------
    for name in MLM:
        m = models[name]
        mask_id = 50284 if m.modern else 103
        if name == "deberta-v3-spm":      # its SentencePiece vocabulary's [MASK], after the pieces
            with open(tokenizer_of(name), encoding="utf-8") as f:
                mask_id = next(a["id"] for a in json.load(f)["added_tokens"] if a["content"] == "[MASK]")
        decode_requests, model_lines = [], []
        for r in inputs["fill_mask"][:30]:
            text = r["text"]
            if text.count("[MASK]") != 1:
                continue
            ids = encodings(name, [{"a": text, "b": None, "max_length": m.max_length}])[0]["ids"]
            if mask_id not in ids:
                continue
            pos = ids.index(mask_id)
            h64, _ = ref.encode(m, [ids])
            h32, _ = ref.encode(m, [ids], compute=torch.float32)
            logits = ref.lm_logits(m, h64[0, pos])
            logits32 = ref.lm_logits(m, h32[0, pos], compute=torch.float32)
            probs = torch.softmax(logits, -1)
            order = torch.topk(probs, 6).indices.tolist()
            if torch.topk(logits32, 5).indices.tolist() != order[:5]:
                continue
            gaps = [float(logits[a] - logits[b]) for a, b in zip(order, order[1:])]
            if min(gaps) < TOL_ORDER:
                continue
            note("fill-mask score", probs[order[:5]], torch.softmax(logits32.double(), -1)[order[:5]])
            cands = []
            for tid in order[:5]:
                seq = list(ids)
                seq[pos] = tid
                decode_requests += [{"ids": [tid], "skip_special": False}, {"ids": seq, "skip_special": True}]
                cands.append({"score": r7(float(probs[tid])), "token": tid, "token_str": None, "sequence": None})
            model_lines.append({"model": name, "sql": "SELECT bert_fill_mask(?1, 5, ?2)", "args": [text],
                                "expected": cands})
        decoded = iter(HF(tokenizer_of(name)).run(decode=decode_requests)["decode"])
        for line in model_lines:
            for c in line["expected"]:
                c["token_str"], c["sequence"] = next(decoded), next(decoded)
        lines += model_lines

    # ---- sequence classification, single texts and pairs ---------------------------------
    for name in CLASSIFY:
        m = models[name]
        fn = pipeline_function(m)
        long_pair = (" ".join(["the committee reviewed every chapter"] * 30), " ".join(["a short answer"] * 12))
        cases = ([(t, None) for t in heads["classify"]] + [tuple(p) for p in heads["classify_pairs"]] + [long_pair] +
                 [(LONG_TEXT, None)])
        encs = encodings(name, [{"a": a, "b": b, "max_length": m.max_length} for a, b in cases])
        for (a, b), enc in zip(cases, encs):
            ids, types = enc["ids"], enc["type_ids"]
            l64 = ref.classifier_logits(m, [ids], types=[types])[0].numpy()
            l32 = ref.classifier_logits(m, [ids], compute=torch.float32, types=[types])[0].double().numpy()
            act = {"softmax": softmax, "sigmoid": sigmoid, "none": lambda x: x}[fn]
            scores, s32 = act(l64), act(l32)
            note("classify score", scores, s32)
            order = sorted(range(m.num_labels), key=lambda i: -scores[i])
            if order != sorted(range(m.num_labels), key=lambda i: -s32[i]):
                continue
            expected = [{"label": m.id2label[i], "score": r7(float(scores[i]))} for i in order]
            if b is None:
                lines.append({"model": name, "sql": "SELECT bert_classify(?1, ?2)", "args": [a], "expected": expected})
            else:
                lines.append({"model": name, "sql": "SELECT bert_classify_pair(?1, ?2, ?3)", "args": [a, b],
                              "expected": expected})

    # ---- token classification ----------------------------------------------------------------
    decoded = {}
    for name in NER:
        m, options = models[name], REGISTRATIONS[name][1]
        agg = (options or {}).get("aggregation", "simple")
        tok = pipeline_tokenizer(tokenizer_of(name), decoded)
        texts = nerqa["ner"]
        encs = hf_run(tokenizer_of(name), encode=[{"a": t, "b": None} for t in texts])["encode"]

        def l64(ids, m=m):
            return ref.token_logits(m, [ids])[0].numpy()

        def l32(ids, m=m):
            return ref.token_logits(m, [ids], compute=torch.float32)[0].double().numpy()
        for text, enc in zip(texts, encs):
            if len(enc["ids"]) > 300:
                continue
            res, _ = ner_text(m, text, enc, l64, agg, tok)
            try:
                same_structure(res, ner_text(m, text, enc, l32, agg, tok)[0], f"{name} float32 {text[:30]!r}")
            except (AssertionError, SystemExit, ValueError):
                continue
            if agg == "none":
                expected = [{"entity": r["entity"], "score": r7(r["score"]), "index": r["index"], "word": r["word"],
                             "start": r["start"], "end": r["end"]} for r in res]
            else:
                expected = [{"entity_group": r["entity_group"], "score": r7(r["score"]), "word": r["word"],
                             "start": r["start"], "end": r["end"]} for r in res]
            lines.append({"model": name, "sql": "SELECT bert_ner(?1, ?2)", "args": [text], "expected": expected})
    for tokenizer_json, calls in decoded.items():
        rust = hf_run(tokenizer_json, tokens_to_string=[c[0] for c in calls])["tokens_to_string"]
        for (tokens, mine), theirs in zip(calls, rust):
            if mine != theirs:
                sys.exit(f"{tokenizer_json}: decoder on {tokens!r}: {mine!r} here, {theirs!r} in tokenizers")

    # ---- question answering ----------------------------------------------------------------------
    for name in QA:
        m = models[name]
        qencs = hf_run(tokenizer_of(name), encode=[{"a": p["question"], "b": p["context"]}
                                                    for p in nerqa["qa"]])["encode"]

        def q64(ids, types, m=m):
            s, e = ref.qa_logits(m, [ids], types=[types] if types is not None else None)
            return s[0].numpy(), e[0].numpy()

        def q32(ids, types, m=m):
            s, e = ref.qa_logits(m, [ids], compute=torch.float32, types=[types] if types is not None else None)
            return s[0].double().numpy(), e[0].double().numpy()
        for pair, enc in zip(nerqa["qa"], qencs):
            q, c = pair["question"], pair["context"]
            try:
                res, _ = qa_answers(m, q, c, enc, q64, 1, seps=1)
                same_structure(res, qa_answers(m, q, c, enc, q32, 1, seps=1)[0], f"{name} float32 {q!r}")
            except (ValueError, AssertionError, SystemExit):
                continue
            lines.append({"model": name, "sql": "SELECT bert_answer(?1, ?2, ?3)", "args": [q, c],
                          "expected": rounded(res)[0]})

    manifest = {}
    for name, (d, options) in REGISTRATIONS.items():
        path = os.path.join(models_dir, d, "model.safetensors")
        manifest[name] = {"path": d, "options": json.dumps(options) if options else None,
                          "model_type": models[name].family, "safetensors_bytes": os.path.getsize(path),
                          "safetensors_checksum": checksum(path)}
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "encoders_models.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(out_dir, "encoders.jsonl"), "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    kinds = {}
    for line in lines:
        k = line.get("sql", "encode").split("(")[0].replace("SELECT ", "")
        kinds[k] = kinds.get(k, 0) + 1
    print(f"{len(lines)} checks: {kinds}")
    print("float32 against float64: " + ", ".join(f"{k} {v:.2g}" for k, v in noise.items()))


if __name__ == "__main__":
    main()
