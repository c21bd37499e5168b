#!/usr/bin/python3
"""make_family_goldens.py MODELS_DIR OUT_DIR TOKENIZER_JSON - the golden data of
the RoBERTa, XLM-RoBERTa and MPNet test models (tests/test_families.c), from
independent references only:

  token ids   Hugging Face's Rust tokenizer (hf_tokenizer.js and
              hf_offsets.js, npm `tokenizers`) on TOKENIZER_JSON, the
              tokenizer.json of sentence-transformers/all-mpnet-base-v2
              (WordPiece with <s>/</s> specials and the RobertaProcessing
              post-processor: <s> a </s> and <s> a </s></s> b </s>), whose
              vocabulary the generated MPNet models carry
              (tests/tools/make_test_models.sh); truncated to each model's
              max_length as transformers does; for a model whose directory
              holds a tokenizer.json of its own (the byte-level BPE and
              Unigram fixtures the RoBERTa and XLM-RoBERTa models carry),
              that file instead.
  numbers     tests/reference/family_reference.py (PyTorch, float64),
              transcribed from modeling_roberta.py, modeling_xlm_roberta.py
              and modeling_mpnet.py (files and commits cited there)
  results     the pipelines' post-processing of the existing goldens:
              sentence-transformers' mean pooling and Normalize with the
              prompt prepended to the text (SentenceTransformer.encode with
              prompt_name or prompt), the fill-mask pipeline as
              make_goldens.py assembles it, the text-classification pipeline
              as make_heads_goldens.py, token classification and question
              answering as make_ner_qa_goldens.py (QA with RoBERTa's two
              separators).  Token classification runs every aggregation, with
              the words of src/transformers/pipelines/token_classification.py
              gather_pre_entities as huggingface/transformers PR #18402
              (merged 2022-08-01, "Update pipeline word heuristic to work with
              whitespace in token offsets") made it and the revision of v4.53
              read here keeps it: a tokenizer whose model has a
              continuing_subword_prefix calls a piece a subword when
              len(token) != len(its span); any other (byte-level BPE, Unigram)
              when start > 0 and " " not in sentence[start - 1:start + 1];
              [UNK] by id starts a word with the text itself as its token.
              convert_tokens_to_string is the tokenizer's decoder on token
              strings (re-implemented below and checked call by call against
              the Rust decoder); the word strategies decode the pieces, then
              decode the words again in group_sub_entities, as the pipeline
              does.

Writes OUT_DIR/families_models.json (registrations and the models' sizes and
checksums) and families.jsonl, one SQL check per line:
  {"model": registered name, "sql": statement whose last parameter is the
   model name, "args": [the others], "expected": the JSON value the
   statement's single result must parse to (numbers within 1e-4)}
or, for the encoder on raw token ids, {"model", "encode": ids, "mean": the
mean of the last hidden state's rows}.  Every result is recomputed in
float32; ids, labels, tokens, words and offsets must not change.
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
import bert_reference as bref  # noqa: E402
import family_reference as ref  # noqa: E402
from make_goldens import HF, checksum, r7  # noqa: E402
from make_heads_goldens import pipeline_function, sigmoid, softmax  # noqa: E402
from make_ner_qa_goldens import (PipelineTokenizer, hf_run, ner_text, qa_answers, same_structure,  # noqa: E402
                                  rounded, wordpiece_cleanup)

# Registered name: (model directory, bert_load options or None).
REGISTRATIONS = {
    "roberta-mlm": ("roberta-mlm", None),
    "roberta-st-f16": ("roberta-st-f16", None),
    "xlmr-e5": ("xlmr-e5", None),
    "xlmr-e5-query": ("xlmr-e5", {"prompt": "query"}),
    "xlmr-e5-literal": ("xlmr-e5", {"prompt": {"text": "passage: "}}),
    "xlmr-cls-bf16": ("xlmr-cls-bf16", None),
    "roberta-ner": ("roberta-ner", None),
    "roberta-ner-none": ("roberta-ner", {"aggregation": "none"}),
    "roberta-ner-first": ("roberta-ner", {"aggregation": "first"}),
    "roberta-ner-average": ("roberta-ner", {"aggregation": "average"}),
    "roberta-ner-max": ("roberta-ner", {"aggregation": "max"}),
    "xlmr-ner": ("xlmr-ner", None),
    "xlmr-ner-none": ("xlmr-ner", {"aggregation": "none"}),
    "xlmr-ner-first": ("xlmr-ner", {"aggregation": "first"}),
    "xlmr-ner-average": ("xlmr-ner", {"aggregation": "average"}),
    "xlmr-ner-max": ("xlmr-ner", {"aggregation": "max"}),
    "roberta-qa": ("roberta-qa", None),
    "mpnet-st": ("mpnet-st", None),
    "mpnet-mlm-f16": ("mpnet-mlm-f16", None),
    "mpnet-cls": ("mpnet-cls", None),
    "mpnet-ner": ("mpnet-ner", None),
}
EMBED = ["roberta-st-f16", "xlmr-e5", "xlmr-e5-query", "xlmr-e5-literal", "mpnet-st"]
MLM = ["roberta-mlm", "mpnet-mlm-f16"]
CLASSIFY = ["xlmr-cls-bf16", "mpnet-cls"]
NER = ["roberta-ner", "roberta-ner-none", "roberta-ner-first", "roberta-ner-average", "roberta-ner-max",
       "xlmr-ner", "xlmr-ner-none", "xlmr-ner-first", "xlmr-ner-average", "xlmr-ner-max", "mpnet-ner"]
# Texts whose words the byte-level BPE and Metaspace tokenizers split at
# punctuation, accents and repeated spaces (the heuristic's hard cases),
# besides ner_qa_inputs.json's.
NER_EXTRA = ["Zoë Saldaña met José in São Paulo.", "  Two  spaces before Berlin and (Paris) too.",
             "Ünïcödé names: Ørsted, Åbo and Łódź.", "New-York's mayor and O'Neill met at 5pm in L.A."]


# ---- convert_tokens_to_string: the decoders of tokenizer.json ------------------------
# Re-implemented from tokenizers (decoders/byte_level.rs, metaspace.rs,
# wordpiece.rs); every string they give is checked against the Rust decoder
# itself (hf_offsets.js, tokens_to_string) before it is written.

def byte_level_decoder():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    char_byte = {chr(c): b for b, c in zip(bs, cs)}

    def decode(tokens):
        raw = b""
        for t in tokens:
            # A token with a character outside the byte alphabet is its own bytes.
            raw += bytes(char_byte[c] for c in t) if all(c in char_byte for c in t) else t.encode("utf-8")
        return raw.decode("utf-8", errors="replace")
    return decode


def metaspace_decoder(d):
    rep, first_drops = d.get("replacement", "\u2581"), d.get("prepend_scheme", "always") != "never"
    return lambda tokens: "".join(t.replace(rep, "" if i == 0 and first_drops else " ") for i, t in enumerate(tokens))


def wordpiece_decoder(d):
    prefix, cleanup = d.get("prefix", "##"), d.get("cleanup", True)

    def decode(tokens):
        out = []
        for i, t in enumerate(tokens):
            if i:
                t = t.replace(prefix, "", 1) if t.startswith(prefix) else " " + t
            out.append(wordpiece_cleanup(t) if cleanup else t)
        return "".join(out)
    return decode


def pipeline_tokenizer(tokenizer_json, checked):
    """PipelineTokenizer of a tokenizer.json; every convert_tokens_to_string
    call is recorded in `checked` as (tokens, result)."""
    tj = json.load(open(tokenizer_json, encoding="utf-8"))
    model, dec = tj["model"], tj.get("decoder")
    kind = (dec or {}).get("type")
    if kind == "ByteLevel":
        decode = byte_level_decoder()
    elif kind == "Metaspace":
        decode = metaspace_decoder(dec)
    elif kind == "WordPiece":
        decode = wordpiece_decoder(dec)
    else:
        sys.exit(f"{tokenizer_json}: decoder {kind} not re-implemented here")
    # convert_ids_to_tokens: the model's vocabulary and the added tokens.
    if model["type"] == "Unigram":
        vocab = {i: piece for i, (piece, _) in enumerate(model["vocab"])}
        unk_id = model.get("unk_id")
    else:
        vocab = {i: t for t, i in model["vocab"].items()}
        unk_id = model["vocab"].get(model.get("unk_token") or "", None)
    vocab.update({a["id"]: a["content"] for a in tj.get("added_tokens", [])})

    def to_string(tokens):
        text = decode(tokens)
        checked.setdefault(tokenizer_json, []).append((list(tokens), text))
        return text
    # tokenizers' model.continuing_subword_prefix: WordPiece's "##"; a BPE's, when set.
    return PipelineTokenizer(bool(model.get("continuing_subword_prefix")), to_string, vocab, unk_id)
QA = ["roberta-qa"]
TOL_ORDER = 2e-4     # neighbouring logits closer than this could swap under float32 noise


def prompt_of(m, options):
    """SentenceTransformer.encode: an explicit prompt, else prompt_name's, else
    default_prompt_name's, prepended to the text."""
    p = (options or {}).get("prompt")
    if isinstance(p, dict):
        return p["text"]
    if isinstance(p, str):
        return m.prompts[p]
    return m.prompts.get(m.default_prompt_name, "") if m.default_prompt_name else ""


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    models_dir, out_dir, tokenizer_json = sys.argv[1:]
    torch.set_grad_enabled(False)
    torch.set_num_threads(1)
    inputs = json.load(open(os.path.join(HERE, "inputs.json"), encoding="utf-8"))
    heads = json.load(open(os.path.join(HERE, "heads_inputs.json"), encoding="utf-8"))
    nerqa = json.load(open(os.path.join(HERE, "ner_qa_inputs.json"), encoding="utf-8"))
    models = {n: ref.Model(os.path.join(models_dir, d)) for n, (d, _) in REGISTRATIONS.items()}

    def tokenizer_of(name):
        own = os.path.join(models_dir, REGISTRATIONS[name][0], "tokenizer.json")
        return own if os.path.exists(own) else tokenizer_json

    def mask_id_of(name):
        added = json.load(open(tokenizer_of(name), encoding="utf-8"))["added_tokens"]
        return next(t["id"] for t in added if t["content"] == "<mask>")
    lines, noise = [], {}

    def note(kind, a, b):
        noise[kind] = max(noise.get(kind, 0.0), float(np.max(np.abs(np.asarray(a) - np.asarray(b)))))

    def ids_of(name, requests):
        return [r["ids"] for r in HF(tokenizer_of(name)).run(encode=requests)["encode"]]

    # ---- the encoder on token ids: a <pad> inside keeps position padding_idx ----
    for name in ("roberta-mlm", "mpnet-mlm-f16", "xlmr-e5"):
        m = models[name]
        for ids in ([0, 1596, 1, 1089, 1, 2], [0] + list(range(1000, 1118)) + [2]):
            if len(ids) > m.max_length:
                continue
            h64 = ref.encode(m, [ids])[0][0]
            h32 = ref.encode(m, [ids], compute=torch.float32)[0][0].double()
            note("hidden state", h64, h32)
            lines.append({"model": name, "encode": ids, "mean": [r7(x) for x in h64.mean(0).tolist()]})

    # ---- embeddings, with the registration's prompt --------------------------------
    texts = [s for s in inputs["sentences"]] + [p for pair in inputs["similarity"] for p in pair]
    for name in EMBED:
        m, options = models[name], REGISTRATIONS[name][1]
        prefix = prompt_of(m, options)
        ids_list = ids_of(name, [{"a": prefix + t, "b": None, "max_length": m.max_length} for t in texts])
        for text, ids in zip(texts, ids_list):
            h64, _ = ref.encode(m, [ids])
            h32, _ = ref.encode(m, [ids], compute=torch.float32)
            v64, v32 = (bref.pool(m, h, None, m.st["pooling"]) for h in (h64, h32))
            if m.st["normalize"]:
                v64, v32 = bref.normalize(v64), bref.normalize(v32)
            note("embedding", v64, v32.double())
            lines.append({"model": name, "sql": "SELECT bert_token_ids(?1, ?2)", "args": [text], "expected": ids})
            lines.append({"model": name, "sql": "SELECT bert_vector_to_json(bert_embed(?1, ?2))", "args": [text],
                          "expected": [r7(x) for x in v64[0].tolist()]})

    # ---- fill-mask (one <mask> a text) ----------------------------------------------
    fm = []
    for name in MLM:
        m = models[name]
        mask_id = mask_id_of(name)
        decode_requests, model_lines = [], []
        for r in inputs["fill_mask"]:
            text = r["text"].replace("[MASK]", "<mask>")
            if text.count("<mask>") != 1:
                continue
            ids = ids_of(name, [{"a": text, "b": None, "max_length": m.max_length}])[0]
            if mask_id not in ids:
                continue
            pos = ids.index(mask_id)
            h64, _ = ref.encode(m, [ids])
            h32, _ = ref.encode(m, [ids], compute=torch.float32)
            logits = ref.lm_logits(m, h64[0, pos])
            logits32 = ref.lm_logits(m, h32[0, pos], compute=torch.float32)
            probs = torch.softmax(logits, -1)
            order = torch.topk(probs, 6).indices.tolist()
            assert torch.topk(logits32, 5).indices.tolist() == order[:5], (name, text)
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
        fm += model_lines
    lines += fm

    # ---- sequence classification, single texts and pairs ----------------------------
    for name in CLASSIFY:
        m = models[name]
        fn = pipeline_function(m)
        # A pair longer than max_length: both texts cut longest-first, around the two separators.
        long_pair = (" ".join(["the committee reviewed every chapter"] * 30), " ".join(["a short answer"] * 12))
        cases = [(t, None) for t in heads["classify"]] + [tuple(p) for p in heads["classify_pairs"]] + [long_pair]
        ids_list = ids_of(name, [{"a": a, "b": b, "max_length": m.max_length} for a, b in cases])
        for (a, b), ids in zip(cases, ids_list):
            l64 = ref.classifier_logits(m, [ids])[0].numpy()
            l32 = ref.classifier_logits(m, [ids], compute=torch.float32)[0].double().numpy()
            scores = {"softmax": softmax, "sigmoid": sigmoid, "none": lambda x: x}[fn](l64)
            s32 = {"softmax": softmax, "sigmoid": sigmoid, "none": lambda x: x}[fn](l32)
            note("classify score", scores, s32)
            order = sorted(range(m.num_labels), key=lambda i: -scores[i])
            assert order == sorted(range(m.num_labels), key=lambda i: -s32[i]), (name, a, b)
            expected = [{"label": m.id2label[i], "score": r7(float(scores[i]))} for i in order]
            if b is None:
                lines.append({"model": name, "sql": "SELECT bert_classify(?1, ?2)", "args": [a], "expected": expected})
            else:
                lines.append({"model": name, "sql": "SELECT bert_classify_pair(?1, ?2, ?3)", "args": [a, b],
                              "expected": expected})

    # ---- token classification, each aggregation -------------------------------------
    decoded = {}
    for name in NER:
        m, options = models[name], REGISTRATIONS[name][1]
        agg = (options or {}).get("aggregation", "simple")
        tok = pipeline_tokenizer(tokenizer_of(name), decoded)
        texts = nerqa["ner"] + NER_EXTRA
        encs = hf_run(tokenizer_of(name), encode=[{"a": t, "b": None} for t in texts])["encode"]

        def l64(ids, m=m):
            return ref.token_logits(m, [ids])[0].numpy()

        def l32(ids, m=m):
            return ref.token_logits(m, [ids], compute=torch.float32)[0].double().numpy()
        for text, enc in zip(texts, encs):
            if len(enc["ids"]) > 300:
                continue
            res, _ = ner_text(m, text, enc, l64, agg, tok)
            same_structure(res, ner_text(m, text, enc, l32, agg, tok)[0], f"{name} float32 {text[:30]!r}")
            if agg == "none":
                expected = [{"entity": r["entity"], "score": r7(r["score"]), "index": r["index"], "word": r["word"],
                             "start": r["start"], "end": r["end"]} for r in res]
            else:
                expected = [{"entity_group": r["entity_group"], "score": r7(r["score"]), "word": r["word"],
                             "start": r["start"], "end": r["end"]} for r in res]
            lines.append({"model": name, "sql": "SELECT bert_ner(?1, ?2)", "args": [text], "expected": expected})
    # convert_tokens_to_string as re-implemented above, against the Rust decoder.
    word_checks = 0
    for tokenizer_json, calls in decoded.items():
        rust = hf_run(tokenizer_json, tokens_to_string=[c[0] for c in calls])["tokens_to_string"]
        for (tokens, mine), theirs in zip(calls, rust):
            if mine != theirs:
                sys.exit(f"{tokenizer_json}: decoder on {tokens!r}: {mine!r} here, {theirs!r} in tokenizers")
        word_checks += len(calls)

    # ---- question answering ------------------------------------------------------------
    for name in QA:
        m = models[name]
        qencs = hf_run(tokenizer_of(name), encode=[{"a": p["question"], "b": p["context"]}
                                                    for p in nerqa["qa"]])["encode"]

        def q64(ids, types, m=m):
            s, e = ref.qa_logits(m, [ids])
            return s[0].numpy(), e[0].numpy()

        def q32(ids, types, m=m):
            s, e = ref.qa_logits(m, [ids], compute=torch.float32)
            return s[0].double().numpy(), e[0].double().numpy()
        for pair, enc in zip(nerqa["qa"], qencs):
            q, c = pair["question"], pair["context"]
            try:
                res, _ = qa_answers(m, q, c, enc, q64, 1, seps=2)
            except ValueError:
                # A question so long in this tokenizer's pieces that the
                # context's window is no wider than doc_stride: the pipeline
                # raises too.
                continue
            same_structure(res, qa_answers(m, q, c, enc, q32, 1, seps=2)[0], f"{name} float32 {q!r}")
            lines.append({"model": name, "sql": "SELECT bert_answer(?1, ?2, ?3)", "args": [q, c],
                          "expected": rounded(res)[0]})

        # The question's length at the edge: max_seq_len - len(question) - 4
        # pieces are left for the context, which must exceed doc_stride when
        # the context needs several windows (tokenizers refuses a stride not
        # below the window, so the pipeline raises); a context that fits in
        # one window is never cut, so any question that fits is answered.
        max_seq_len, doc_stride = min(m.max_length, 384), min(min(m.max_length, 384) // 2, 128)
        edge = max_seq_len - 4 - doc_stride          # pieces of question that leave exactly doc_stride
        fillers = ["Who is" + " a" * k + "?" for k in range(edge + 4)]
        counts = [len(e["ids"]) - 2 for e in hf_run(tokenizer_of(name), encode=[{"a": f, "b": None}
                                                                               for f in fillers])["encode"]]
        q_ok, q_edge = fillers[counts.index(edge - 1)], fillers[counts.index(edge)]
        long_c = next(p["context"] for p, e in zip(nerqa["qa"], qencs)
                      if max_seq_len < e["sequence_ids"].count(1) < 3 * max_seq_len)
        short_c = "Marie Curie was born in Warsaw in 1867 and moved to Paris."
        for q, c in ((q_ok, long_c), (q_edge, short_c), (q_edge, long_c)):
            enc = hf_run(tokenizer_of(name), encode=[{"a": q, "b": c}])["encode"][0]
            try:
                res, _ = qa_answers(m, q, c, enc, q64, 1, seps=2)
            except ValueError:
                assert q is q_edge and c is long_c
                lines.append({"model": name, "sql": "SELECT bert_answer(?1, ?2, ?3)", "args": [q, c],
                              "error": ["question is too long", f"its {edge} word pieces leave {doc_stride}",
                                        f"overlap of {doc_stride}", "shorten the question"]})
                continue
            assert not (q is q_edge and c is long_c), "the reference answers where the pipeline raises"
            same_structure(res, qa_answers(m, q, c, enc, q32, 1, seps=2)[0], f"{name} float32 edge {len(q)}")
            lines.append({"model": name, "sql": "SELECT bert_answer(?1, ?2, ?3)", "args": [q, c],
                          "expected": rounded(res)[0]})

    manifest = {}
    for name, (d, options) in REGISTRATIONS.items():
        path = os.path.join(models_dir, d, "model.safetensors")
        manifest[name] = {"path": d, "options": json.dumps(options) if options else None,
                          "model_type": models[name].family, "safetensors_bytes": os.path.getsize(path),
                          "safetensors_checksum": checksum(path)}
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "families_models.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(out_dir, "families.jsonl"), "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    kinds = {}
    for line in lines:
        k = line.get("sql", "encode").split("(")[0].replace("SELECT ", "")
        kinds[k] = kinds.get(k, 0) + 1
    print(f"{len(lines)} checks: {kinds}; {word_checks} convert_tokens_to_string calls equal to the Rust decoder's")
    print("float32 against float64: " + ", ".join(f"{k} {v:.2g}" for k, v in noise.items()))


if __name__ == "__main__":
    main()
