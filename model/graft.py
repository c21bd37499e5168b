#!/usr/bin/python3
"""Put an encoder fine-tuned by bert_train under another model's heads.

    /usr/bin/python3 model/graft.py HEADS ENCODER OUT

bert_train's "embed" task saves the encoder alone (a sentence-transformers
directory, BertModel's tensor names, float32); the masked-LM and
next-sentence heads stay with the model it started from.  OUT gets HEADS's
files (config, vocabulary, pooling files) and HEADS's tensors, every
encoder tensor replaced by ENCODER's (under the "bert." prefix), float16 as
shipped.  The masked-LM decoder is the word embeddings (tied), so it moves
with the encoder; the heads' own layers keep HEADS's values."""
import argparse
import os
import shutil
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bert_torch import load_safetensors, save_safetensors  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("heads")
    ap.add_argument("encoder")
    ap.add_argument("out")
    args = ap.parse_args()
    heads = load_safetensors(os.path.join(args.heads, "model.safetensors"))
    encoder = load_safetensors(os.path.join(args.encoder, "model.safetensors"))
    out = dict(heads)
    for name, t in encoder.items():
        key = "bert." + name
        if key not in heads or heads[key].shape != t.shape:
            sys.exit(f"graft: {args.encoder} has {name} {tuple(t.shape)}, which {args.heads} "
                     "does not hold as bert.{name}")
        out[key] = t
    kept = sorted(k for k in heads if k[5:] not in encoder)
    if os.path.abspath(args.out) != os.path.abspath(args.heads):
        shutil.copytree(args.heads, args.out, dirs_exist_ok=True)
    save_safetensors(os.path.join(args.out, "model.safetensors"), {k: v.to(torch.float16) for k, v in out.items()},
                     {"format": "pt", "graft": f"encoder of {args.encoder}, heads of {args.heads}"})
    print(f"wrote {args.out}: {len(encoder)} encoder tensors from {args.encoder}; kept {', '.join(kept)}")


if __name__ == "__main__":
    main()
