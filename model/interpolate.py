#!/usr/bin/python3
"""Mix two exported models of the same lineage weight by weight:
(1 - alpha) * BASE + alpha * TUNED, written as a third model directory.

    /usr/bin/python3 model/interpolate.py BASE TUNED OUT --alpha A

A model fine-tuned for one task and the model it started from can be mixed
along the straight line between them (Wortsman et al., 2022, "Robust
fine-tuning of zero-shot models"): the mix keeps much of what each end is
good at.  Here BASE is the masked-LM model (stage 2) and TUNED the
sentence-embedding one (stage 3): alpha trades fill-mask quality for
sentence similarity.  OUT gets TUNED's files with the mixed weights
(float16, the same tensor names)."""
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
    ap.add_argument("base")
    ap.add_argument("tuned")
    ap.add_argument("out")
    ap.add_argument("--alpha", type=float, required=True, help="share of TUNED, 0..1")
    args = ap.parse_args()
    if not 0.0 <= args.alpha <= 1.0:
        sys.exit("interpolate: --alpha must be between 0 and 1")
    a = load_safetensors(os.path.join(args.base, "model.safetensors"))
    b = load_safetensors(os.path.join(args.tuned, "model.safetensors"))
    if a.keys() != b.keys() or any(a[k].shape != b[k].shape for k in a):
        sys.exit("interpolate: the two models' tensors differ in names or shapes")
    mixed = {k: ((1 - args.alpha) * a[k] + args.alpha * b[k]).to(torch.float16) for k in a}
    if os.path.abspath(args.out) != os.path.abspath(args.tuned):
        shutil.copytree(args.tuned, args.out, dirs_exist_ok=True)
    save_safetensors(os.path.join(args.out, "model.safetensors"), mixed,
                     {"format": "pt", "interpolation": f"{1 - args.alpha:g} base + {args.alpha:g} tuned"})
    print(f"wrote {args.out}: {1 - args.alpha:g} x {args.base} + {args.alpha:g} x {args.tuned}")


if __name__ == "__main__":
    main()
