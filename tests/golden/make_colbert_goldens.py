#!/usr/bin/python3
"""make_colbert_goldens.py MODELS_DIR OUT_DIR - the golden data of
bert_token_vectors and bert_maxsim on them (tests/test_colbert.c), from
independent references only:

  token ids   Hugging Face's Rust tokenizer (hf_tokenizer.js, npm
              `tokenizers`) on each model's own tokenizer.json, which holds
              the [Q] and [D] added tokens: [CLS] text [SEP] truncated to
              the side's length - 1, as sentence-transformers' Transformer
              tokenizes with max_seq_length = length - 1
  encoder     tests/reference/bert_reference.py (PyTorch, float64), with
              the attention mask PyLate builds
  ColBERT     PyLate's steps, written from lightonai/pylate,
              pylate/models/colbert.py:
              * tokenize(): queries padded to query_length - 1 with the
                mask token (__init__ sets tokenizer.pad_token_id =
                mask_token_id), attention 0 on that padding; then
                insert_prefix_token puts the query or document prefix's id
                after [CLS], attention 1; with attend_to_expansion_tokens
                the attention mask is all ones
              * the Dense module (sentence_transformers/models/Dense.py:
                activation(linear(x)), identity here, no bias) on every token
              * encode(): documents keep the tokens whose id is not in the
                skiplist (convert_tokens_to_ids of skiplist_words) and whose
                attention is 1; queries keep every token, expansion tokens
                included; then torch.nn.functional.normalize(p=2, dim=1)
  maxsim      the sum over query rows of the largest dot product with a
              document row (pylate/scores/scores.py colbert_scores)

Writes OUT_DIR/colbert_models.json (the models' sizes and checksums) and
OUT_DIR/colbert.jsonl, one line per model, side and text:
  {"model", "side": "query" | "document", "text", "ids" (the encoder's
   input), "n", "d", "vectors" (n x d, row by row)}
and one line per model, query and document:
  {"model", "query", "document", "maxsim"}

  NODE_PATH=/path/to/node_modules /usr/bin/python3 tests/golden/make_colbert_goldens.py build/models tests/golden
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, HERE)
import bert_reference as bref  # noqa: E402
from golden_common import node_json, script_args, write_goldens  # noqa: E402
from make_goldens import checksum  # noqa: E402

MODELS = ["colbert-dense", "colbert-plain"]
QUERIES = ["", "what is late interaction?", "How do ColBERT models score documents, token by token?"]
DOCUMENTS = [
    "",
    "Late interaction keeps one vector per token; MaxSim sums the best matches.",
    "The quick brown fox jumps over the lazy dog!!! (Really.)",
    "ColBERT encodes queries and documents separately, then compares every query token with every document "
    "token, so long passages are cut to the document length before scoring: this one is longer than that.",
]


def colbert_vectors(m, dense, cfg, vocab, enc, side):
    query = side == "query"
    length = cfg["query_length" if query else "document_length"]
    ids = list(enc["ids"])
    mask = [1] * len(ids)
    if query:
        mask += [0] * (length - 1 - len(ids))
        ids += [vocab["[MASK]"]] * (length - 1 - len(ids))
    prefix = vocab[cfg["query_prefix" if query else "document_prefix"]]
    ids = ids[:1] + [prefix] + ids[1:]
    mask = mask[:1] + [1] + mask[1:]
    if query and cfg["attend_to_expansion_tokens"]:
        mask = [1] * len(ids)
    hidden, _ = bref.encode(m, [ids], attention_mask=[mask])
    x = hidden[0]
    if dense is not None:
        x = x @ dense.T
    if query:
        keep = [True] * len(ids)
    else:
        skip = {vocab.get(w, vocab["[UNK]"]) for w in cfg["skiplist_words"]}
        keep = [i not in skip and a == 1 for i, a in zip(ids, mask)]
    x = torch.nn.functional.normalize(x[torch.tensor(keep)], p=2, dim=1)
    return ids, x


def main():
    models_dir, out_dir = script_args(__doc__, 2)
    manifest, lines = {}, []
    for name in MODELS:
        path = os.path.join(models_dir, name)
        m = bref.Model(path)
        cfg = bref.read_json(os.path.join(path, "config_sentence_transformers.json"))
        tj = bref.read_json(os.path.join(path, "tokenizer.json"))
        vocab = dict(tj["model"]["vocab"])
        vocab.update({t["content"]: t["id"] for t in tj["added_tokens"]})
        dense_path = os.path.join(path, "1_Dense", "model.safetensors")
        dense = torch.from_numpy(bref.read_safetensors(dense_path)[0]["linear.weight"]) \
            if os.path.exists(dense_path) else None
        st = os.path.join(path, "model.safetensors")
        manifest[name] = {"safetensors_bytes": os.path.getsize(st), "safetensors_checksum": checksum(st)}
        vectors = {}
        for side, texts in (("query", QUERIES), ("document", DOCUMENTS)):
            length = cfg["query_length" if side == "query" else "document_length"]
            req = {"encode": [{"a": t, "b": None, "max_length": length - 1} for t in texts]}
            encs = node_json("hf_tokenizer.js", os.path.join(path, "tokenizer.json"), req)["encode"]
            for text, enc in zip(texts, encs):
                ids, x = colbert_vectors(m, dense, cfg, vocab, enc, side)
                vectors[side, text] = x
                lines.append({"model": name, "side": side, "text": text, "ids": ids, "n": x.shape[0],
                              "d": x.shape[1], "vectors": [float("%.9g" % v) for v in x.flatten().tolist()]})
        for q in QUERIES:
            for d in DOCUMENTS:
                score = (vectors["query", q] @ vectors["document", d].T).max(dim=1).values.sum().item()
                lines.append({"model": name, "query": q, "document": d, "maxsim": score})
    write_goldens(out_dir, "colbert_models.json", manifest, [("colbert.jsonl", lines)])


if __name__ == "__main__":
    main()
