#!/usr/bin/python3
"""Export a training checkpoint as a Hugging Face model directory.

    /usr/bin/python3 model/export.py [--ckpt model/work/ckpt.pt] [--out model/demo]

Writes config.json, vocab.txt, tokenizer_config.json, special_tokens_map.json,
model.safetensors (float16, BertForPreTraining names with the MLM decoder
tied to the word embeddings, so no cls.predictions.decoder.* tensors) and the
sentence-transformers files that select mean pooling."""
import argparse
import json
import os
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bert_torch import load_checkpoint, save_safetensors  # noqa: E402


def dump(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def architecture(tensors):
    """The Hugging Face class whose checkpoint has these heads."""
    mlm = any(k.startswith("cls.predictions.") for k in tensors)
    nsp = any(k.startswith("cls.seq_relationship.") for k in tensors)
    if mlm and nsp:
        return "BertForPreTraining"
    if mlm:
        return "BertForMaskedLM"
    if nsp:
        return "BertForNextSentencePrediction"
    return "BertModel"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt", default=os.path.join(HERE, "work", "ckpt.pt"))
    ap.add_argument("--vocab", default=os.path.join(HERE, "work", "vocab.txt"))
    ap.add_argument("--out", default=os.path.join(HERE, "demo"))
    args = ap.parse_args()

    ck = load_checkpoint(args.ckpt)
    c, st = ck["config"], ck["state"]
    n_vocab = sum(1 for _ in open(args.vocab, encoding="utf-8"))
    if n_vocab != c["vocab_size"]:
        sys.exit(f"export: {args.vocab} has {n_vocab} tokens but the checkpoint was trained "
                 f"with {c['vocab_size']}; pass the vocabulary the run used with --vocab")
    os.makedirs(os.path.join(args.out, "1_Pooling"), exist_ok=True)

    tensors = {k: v.to(torch.float16) for k, v in ck["model"].items()}
    for k, v in tensors.items():
        if not torch.isfinite(v).all():
            sys.exit(f"export: tensor {k} overflows float16")
    save_safetensors(os.path.join(args.out, "model.safetensors"), tensors,
                     {"format": "pt", "step": str(st["step"]), "tokens_seen": str(st["tokens"])})

    dump(os.path.join(args.out, "config.json"), {
        # what model.safetensors holds: the encoder, the pooler, the masked-LM
        # head and the next-sentence head (Hugging Face's BertForPreTraining)
        "architectures": [architecture(tensors)],
        "model_type": "bert",
        "vocab_size": c["vocab_size"],
        "hidden_size": c["hidden_size"],
        "num_hidden_layers": c["num_hidden_layers"],
        "num_attention_heads": c["num_attention_heads"],
        "intermediate_size": c["intermediate_size"],
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": c["max_position_embeddings"],
        "type_vocab_size": c["type_vocab_size"],
        "initializer_range": 0.02,
        "layer_norm_eps": c["layer_norm_eps"],
        "pad_token_id": c["pad_token_id"],
        "position_embedding_type": "absolute",
        "tie_word_embeddings": True,
        "torch_dtype": "float16",
    })
    shutil.copyfile(args.vocab, os.path.join(args.out, "vocab.txt"))
    specials = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                "cls_token": "[CLS]", "mask_token": "[MASK]"}
    dump(os.path.join(args.out, "tokenizer_config.json"), {
        "tokenizer_class": "BertTokenizer", "do_lower_case": True, "strip_accents": None,
        "tokenize_chinese_chars": True, "model_max_length": c["max_position_embeddings"],
        **specials})
    dump(os.path.join(args.out, "special_tokens_map.json"), specials)
    dump(os.path.join(args.out, "modules.json"), [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])
    dump(os.path.join(args.out, "1_Pooling", "config.json"), {
        "word_embedding_dimension": c["hidden_size"], "pooling_mode_cls_token": False,
        "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
        "pooling_mode_mean_sqrt_len_tokens": False})
    dump(os.path.join(args.out, "sentence_bert_config.json"),
         {"max_seq_length": c["max_position_embeddings"], "do_lower_case": False})
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.out) for f in fs)
    print(f"exported step {st['step']} ({st['tokens']} tokens, {st['seconds'] / 60:.1f} min) "
          f"to {args.out}: {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
