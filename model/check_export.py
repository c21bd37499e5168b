#!/usr/bin/python3
"""Check an exported model against the project's independent reference
implementation (tests/reference/bert_reference.py, float64): the training
code's forward pass, read back from model.safetensors, must give the same
masked-LM and next-sentence probabilities.

    /usr/bin/python3 model/check_export.py [--model model/demo] [--n 20]"""
import argparse
import os
import sys

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
import bert_reference as ref  # noqa: E402
from bert_torch import data_units, load_safetensors  # noqa: E402
from eval_heldout import load_model  # noqa: E402
from train import CLS, MASK, SEP  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(HERE, "demo"))
    ap.add_argument("--data", default=os.path.join(HERE, "work", "heldout.bin"))
    ap.add_argument("--n", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(1)
    mine = load_model(args.model)
    mine.load_state_dict(load_safetensors(os.path.join(args.model, "model.safetensors")), strict=False)
    theirs = ref.Model(args.model)
    units = [u for doc in data_units(args.data) for u in doc if 4 <= len(u) <= 60]
    rng = np.random.default_rng(0)
    worst_p = worst_nsp = 0.0
    same_top5 = 0
    for i in rng.choice(len(units), args.n, replace=False):
        a = units[i].tolist()
        k = int(rng.integers(len(a)))
        ids = [CLS, *a[:k], MASK, *a[k + 1:], SEP]
        with torch.no_grad():
            t = torch.tensor([ids])
            h = mine.encode(t, torch.zeros_like(t), torch.ones_like(t))
            p = mine.mlm_logits(h[0, k + 1]).softmax(-1).double()
            nsp = float(mine.nsp_logits(h).softmax(-1)[0, 0])
        r = ref.fill_mask_topk(theirs, ids, MASK, 5)[0]
        top = p.topk(5)
        same_top5 += top.indices.tolist() == r["ids"] or r["min_logit_gap"] < 1e-4
        worst_p = max(worst_p, float((top.values - torch.tensor(r["scores"])).abs().max()))
        hidden, pooled = ref.encode(theirs, [ids])
        worst_nsp = max(worst_nsp, abs(nsp - float(ref.nsp_probability(theirs, pooled)[0])))
    print(f"{args.n} held-out sentences: same top-5 ids {same_top5}/{args.n}, "
          f"max |score diff| {worst_p:.2e}, max |NSP diff| {worst_nsp:.2e}")
    if same_top5 != args.n or worst_p > 1e-4 or worst_nsp > 1e-4:
        sys.exit("check_export: the exported model disagrees with the reference")


if __name__ == "__main__":
    main()
