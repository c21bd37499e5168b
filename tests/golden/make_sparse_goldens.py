#!/usr/bin/python3
"""make_sparse_goldens.py MODELS_DIR OUT_DIR TOKENIZER_JSON FAMILY_TOKENIZER_JSON -
the golden data of bert_sparse and bert_sparse_terms (tests/test_sparse.c),
from independent references only:

  token ids   Hugging Face's Rust tokenizer (hf_tokenizer.js, npm
              `tokenizers`): bert-base-uncased's tokenizer.json
              (TOKENIZER_JSON) for the BERT and DistilBERT models,
              all-mpnet-base-v2's (FAMILY_TOKENIZER_JSON) for MPNet, the
              model's own tokenizer.json where it has one (RoBERTa)
  logits      tests/reference/bert_reference.py and family_reference.py
              (PyTorch, float64): the masked-LM heads at every position
  weights     SPLADE's pooling, written from the sources:
              * naver/splade, splade/models/transformer_rep.py (class Splade,
                SpladeDoc: torch.log1p(torch.relu(out)) *
                attention_mask.unsqueeze(-1), then torch.max over the
                sequence dimension)
              * UKPLab/sentence-transformers,
                sentence_transformers/sparse_encoder/models/SpladePooling.py
                (pooling_strategy "max", activation "relu", log1p)
              The texts run as one padded batch, so the attention mask is
              what keeps the padding out of the max.
  specials    left out as opensearch-project's neural-sparse model cards do
              (opensearch-neural-sparse-encoding-doc-v1 README.md,
              get_sparse_vector: values[:, special_token_ids] = 0, the ids of
              tokenizer.special_tokens_map's tokens)
  query side  the same model cards' query encoding for the document-only
              models: query_vector[input_ids] = 1, times the idf vector read
              from idf.json (get_tokenizer_idf: 0 for a token it lacks); the
              special tokens are zeroed as on the document side, which
              changes no score (the documents have 0 there).

Writes OUT_DIR/sparse_models.json (the models' sizes and checksums) and
OUT_DIR/sparse.jsonl, one line per model and text:
  {"model", "text", "ids", "mode": "document" | "query", "top_k": k,
   "terms": [[id, token, weight], ...] the k heaviest, heaviest first (equal
   weights by id), "next": the weight of the (k+1)-th term (0 if none),
   "nonzero": how many terms are above 0}
k is at most 40, lowered until the k-th and (k+1)-th weights are 1e-3
apart, so that float32 noise cannot change which terms make the cut.
Also prints the float32-vs-float64 difference of the weights.
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, HERE)
import bert_reference as bref  # noqa: E402
import family_reference as fref  # noqa: E402
from golden_common import node_json, script_args, write_goldens  # noqa: E402
from make_goldens import checksum  # noqa: E402

# (model directory, tokenizer: "bert", "family" or "own")
MODELS = [("mlm-tied-f32", "bert"), ("pretrain-untied-bf16", "bert"), ("distil-mlm", "bert"),
          ("roberta-mlm", "own"), ("mpnet-mlm-f16", "family")]
QUERY_MODELS = ["distil-mlm"]
TEXTS = [
    "",
    "Sparse retrieval with learned term weights.",
    "The quick brown fox jumps over the lazy dog; the dog sleeps.",
    "What's the weather in New York now?",
    "Café au lait, naïve résumé: 東京 and Zürich.",
    "repeat repeat repeat repeat words words",
    "BM25 ranks documents by term frequency and inverse document frequency, "
    "while dense retrieval compares embeddings and learned sparse models expand the text.",
]
TOP_K = 40
MIN_CUT_GAP = 1e-3


def load(models_dir, name):
    path = os.path.join(models_dir, name)
    family = bref.read_json(os.path.join(path, "config.json"))["model_type"] in fref.FAMILIES
    return (fref.Model(path) if family else bref.Model(path)), family


def vocabulary(tokenizer_json):
    """id -> token of a tokenizer.json's model (WordPiece and BPE: a dict)."""
    vocab = json.load(open(tokenizer_json, encoding="utf-8"))["model"]["vocab"]
    out = {i: t for t, i in vocab.items()}
    for added in json.load(open(tokenizer_json, encoding="utf-8")).get("added_tokens", []):
        out[added["id"]] = added["content"]
    return out


def special_ids(model_dir, vocab):
    """The ids of tokenizer.special_tokens_map's tokens (BERT's defaults
    when the directory names none)."""
    names = {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]",
             "mask_token": "[MASK]"}
    for f in ("special_tokens_map.json", "tokenizer_config.json"):
        cfg = bref.read_json(os.path.join(model_dir, f), {})
        for key in list(names):
            v = cfg.get(key)
            if isinstance(v, dict):
                v = v.get("content")
            if isinstance(v, str):
                names[key] = v
    by_token = {t: i for i, t in vocab.items()}
    return sorted({by_token[t] for t in names.values() if t in by_token})


def splade_batch(m, family, batch_ids, pad, compute):
    """SpladeDoc over a padded batch: [batch x vocab] weights."""
    seq = max(len(ids) for ids in batch_ids)
    ids = torch.tensor([ids + [pad] * (seq - len(ids)) for ids in batch_ids])
    mask = torch.tensor([[1] * len(ids) + [0] * (seq - len(ids)) for ids in batch_ids])
    if family:
        hidden, _ = fref.encode(m, ids, attention_mask=mask, compute=compute)
        logits = fref.lm_logits(m, hidden, compute)
    else:
        hidden, _ = bref.encode(m, ids, attention_mask=mask, compute=compute)
        logits = bref.mlm_logits(m, hidden, compute)
    values = torch.log1p(torch.relu(logits)) * mask.unsqueeze(-1).to(compute)
    return torch.max(values, dim=1).values


def line(model, text, ids, mode, weights, specials, vocab):
    w = weights.clone()
    w[specials] = 0
    order = sorted((i for i in range(len(w)) if w[i] > 0), key=lambda i: (-float(w[i]), i))
    k = min(TOP_K, len(order))
    while 0 < k < len(order) and float(w[order[k - 1]]) - float(w[order[k]]) < MIN_CUT_GAP:
        k -= 1
    return {"model": model, "text": text, "ids": ids, "mode": mode, "top_k": k,
            "terms": [[i, vocab[i], round(float(w[i]), 7)] for i in order[:k]],
            "next": round(float(w[order[k]]), 7) if k < len(order) else 0,
            "nonzero": len(order)}


def main():
    models_dir, out_dir, tokenizer_json, family_tokenizer_json = script_args(__doc__, 4)
    lines = []
    for name, which in MODELS:
        m, family = load(models_dir, name)
        tj = {"bert": tokenizer_json, "family": family_tokenizer_json,
              "own": os.path.join(m.dir, "tokenizer.json")}[which]
        vocab = vocabulary(tj)
        specials = special_ids(m.dir, vocab)
        enc = node_json("hf_tokenizer.js", tj, {"encode": [{"a": t, "b": None, "max_length": m.max_length}
                                                           for t in TEXTS], "decode": []})["encode"]
        batch = [e["ids"] for e in enc]
        by_token = {t: i for i, t in vocab.items()}
        pad = by_token["<pad>" if family else "[PAD]"]
        weights = splade_batch(m, family, batch, pad, torch.float64)
        single = splade_batch(m, family, batch[1:2], pad, torch.float64)[0]
        as_float32 = splade_batch(m, family, batch, pad, torch.float32)
        print(f"{name}: padded batch vs alone {float((weights[1] - single).abs().max()):.2e}, "
              f"float32 vs float64 {float((weights - as_float32.double()).abs().max()):.2e}, "
              f"vocab {weights.shape[1]}, specials {specials}")
        for text, ids, w in zip(TEXTS, batch, weights):
            lines.append(line(name, text, ids, "document", w, specials, vocab))
        if name in QUERY_MODELS:
            idf_doc = json.load(open(os.path.join(m.dir, "idf.json"), encoding="utf-8"))
            idf = torch.zeros(len(weights[0]), dtype=torch.float64)
            for token, weight in idf_doc.items():
                idf[by_token[token]] = weight
            for text, ids in zip(TEXTS, batch):
                q = torch.zeros(len(idf), dtype=torch.float64)
                q[ids] = 1
                lines.append(line(name, text, ids, "query", q * idf, specials, vocab))
    manifest = {}
    for name, _ in MODELS:
        st = os.path.join(models_dir, name, "model.safetensors")
        manifest[name] = {"safetensors_bytes": os.path.getsize(st), "safetensors_checksum": checksum(st)}
    write_goldens(out_dir, "sparse_models.json", manifest, [("sparse.jsonl", lines)])


if __name__ == "__main__":
    main()
