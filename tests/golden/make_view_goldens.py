#!/usr/bin/python3
"""make_view_goldens.py MODELS_DIR OUT_DIR - the golden data of bert_attention
and bert_hidden_states (tests/test_model_view.c): the model's own view of one
text per family, every layer and every head, from independent references only:

  token ids   those of the committed goldens, which Hugging Face's Rust
              tokenizer made (make_goldens.py, make_family_goldens.py): the
              text of each model below is one of its golden texts
  numbers     tests/reference/bert_reference.py and family_reference.py
              (PyTorch, float64) with a trace: transformers'
              output_attentions (each layer's softmax probabilities after the
              mask, MPNet's with its relative position bias) and
              output_hidden_states (the embeddings' LayerNorm output, then
              each layer's), dropout off

Writes OUT_DIR/model_view_models.json (the models' sizes and checksums) and
model_view.jsonl, a line per model:
  {"model", "text", "ids", "attentions": [layer][head][from][to],
   "hidden_states": [layer][position][hidden]}
with 8 significant digits.  Run through make_goldens.sh, which also builds
the models.
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
from golden_common import script_args, write_goldens  # noqa: E402
from make_goldens import checksum  # noqa: E402

# Model: (its family, the golden file that holds the ids of its text, the text).
MODELS = {
    "bert-plain-f32": ("bert", "embeddings.jsonl", "The cat sits on the mat."),
    "distil-cls": ("distilbert", "distil_embeddings.jsonl", "It is a book."),
    "roberta-st-f16": ("roberta", "families.jsonl", "The cat sits on the mat."),
    "xlmr-e5": ("xlm-roberta", "families.jsonl", "The cat sits on the mat."),
    "mpnet-st": ("mpnet", "families.jsonl", "The cat sits on the mat."),
}


def golden_ids(model, golden_file, text):
    """The ids the committed golden file gives `model` for `text`."""
    for line in open(os.path.join(HERE, golden_file), encoding="utf-8"):
        g = json.loads(line)
        if g.get("model") != model:
            continue
        if g.get("text") == text and "ids" in g:
            return g["ids"]
        if g.get("sql") == "SELECT bert_token_ids(?1, ?2)" and g["args"] == [text]:
            return g["expected"]
    sys.exit(f"{golden_file} has no ids of {text!r} for {model}")


def r8(x):
    """A tensor (or its nested lists) as nested lists of numbers with 8 significant digits."""
    if isinstance(x, torch.Tensor):
        x = x.tolist()
    return [r8(v) for v in x] if isinstance(x, list) else float(f"{x:.8g}")


def main():
    models_dir, out_dir = script_args(__doc__, 2)
    manifest, lines = {}, []
    for name, (family, golden_file, text) in MODELS.items():
        path = os.path.join(models_dir, name)
        ids = golden_ids(name, golden_file, text)
        trace = bref.new_trace()
        if family in fref.FAMILIES:
            m = fref.Model(path)
            fref.encode(m, [ids], trace=trace)
        else:
            m = bref.Model(path)
            bref.encode(m, [ids], trace=trace)
        assert m.config["model_type"] == family, name
        assert len(trace["attentions"]) == m.layers and len(trace["hidden_states"]) == m.layers + 1
        weights = os.path.join(path, "model.safetensors")
        manifest[name] = {"path": name, "model_type": family, "num_layers": m.layers, "num_heads": m.heads,
                          "hidden_size": m.hidden, "safetensors_bytes": os.path.getsize(weights),
                          "safetensors_checksum": checksum(weights)}
        lines.append({"model": name, "text": text, "ids": ids,
                      "attentions": r8(torch.stack([a[0] for a in trace["attentions"]])),
                      "hidden_states": r8(torch.stack([h[0] for h in trace["hidden_states"]]))})
    write_goldens(out_dir, "model_view_models.json", manifest, [("model_view.jsonl", lines)])


if __name__ == "__main__":
    main()
