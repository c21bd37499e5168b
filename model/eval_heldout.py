#!/usr/bin/python3
"""Held-out masked-token accuracy of an exported model, with PyTorch.

    /usr/bin/python3 model/eval_heldout.py [--model model/demo] [--data model/work/heldout.bin]

The held-out documents (never trained on, see prep_corpus.py) are packed into
sequences as in training; 15% of the pieces of each, chosen with a fixed seed,
are replaced by [MASK], and the model's top-1 and top-5 predictions at those
positions are compared with the original pieces.

With --nsp, next-sentence prediction instead: the held-out documents cut into
sentence pairs as in training (build_examples with every chunk a pair),
half of the second sentences following the first and half from another
document; prints the accuracy and the mean probability of "follows" for
each half."""
import argparse
import json
import math
import os
import sys

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bert_torch import Bert, Cfg, data_units, load_safetensors  # noqa: E402
from train import CLS, MASK, SEP, build_examples  # noqa: E402


def load_model(path):
    cfg = json.load(open(os.path.join(path, "config.json")))
    model = Bert(Cfg(**{k: cfg[k] for k in Cfg().to_dict() if k in cfg}))
    missing, unexpected = model.load_state_dict(load_safetensors(os.path.join(path, "model.safetensors")),
                                                strict=False)
    if unexpected or [m for m in missing if not m.startswith(("cls.seq", "bert.pooler"))]:
        sys.exit(f"eval: weight names do not match: missing {missing}, unexpected {unexpected}")
    return model.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(HERE, "demo"))
    ap.add_argument("--data", default=os.path.join(HERE, "work", "heldout.bin"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--nsp", action="store_true", help="measure next-sentence prediction instead")
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = load_model(args.model)
    if args.nsp:
        return eval_nsp(model, args)
    rng = np.random.default_rng(args.seed)
    ex = build_examples(data_units(args.data), rng, args.max_len, 0.0)
    gen = torch.Generator().manual_seed(args.seed)
    n = top1 = top5 = 0
    nll = 0.0
    with torch.no_grad():
        for i in range(0, len(ex), 32):
            rows = [[CLS, *a.tolist(), SEP] for a, _, _ in ex[i:i + 32]]
            t = max(map(len, rows))
            ids = torch.zeros((len(rows), t), dtype=torch.long)
            attn = torch.zeros_like(ids)
            for r, row in enumerate(rows):
                ids[r, :len(row)] = torch.tensor(row)
                attn[r, :len(row)] = 1
            cand = (attn == 1) & (ids != CLS) & (ids != SEP)
            chosen = cand & (torch.rand(ids.shape, generator=gen) < 0.15)
            inp = ids.masked_fill(chosen, MASK)
            pos = chosen.nonzero(as_tuple=True)
            if len(pos[0]) == 0:
                continue
            logits = model.mlm_logits(model.encode(inp, torch.zeros_like(ids), attn)[pos])
            target = ids[pos]
            best = logits.topk(5, dim=-1).indices
            top1 += int((best[:, 0] == target).sum())
            top5 += int((best == target[:, None]).any(-1).sum())
            nll += float(F.cross_entropy(logits, target, reduction="sum"))
            n += len(target)
    print(f"held-out masked pieces: {n} in {len(ex)} sequences")
    print(f"top-1 accuracy {100 * top1 / n:.2f}%  top-5 accuracy {100 * top5 / n:.2f}%  "
          f"loss {nll / n:.3f}  perplexity {math.exp(nll / n):.1f}")


def eval_nsp(model, args):
    rng = np.random.default_rng(args.seed)
    pairs = [e for e in build_examples(data_units(args.data), rng, args.max_len, 1.0) if e[1] is not None]
    right = 0
    prob = {0: [], 1: []}
    with torch.no_grad():
        for i in range(0, len(pairs), 32):
            batch = pairs[i:i + 32]
            rows = [([CLS, *a.tolist(), SEP, *b.tolist(), SEP], len(a) + 2) for a, b, _ in batch]
            t = max(len(r) for r, _ in rows)
            ids = torch.zeros((len(rows), t), dtype=torch.long)
            types = torch.zeros_like(ids)
            attn = torch.zeros_like(ids)
            for r, (row, first) in enumerate(rows):
                ids[r, :len(row)] = torch.tensor(row)
                types[r, first:len(row)] = 1
                attn[r, :len(row)] = 1
            follows = F.softmax(model.nsp_logits(model.encode(ids, types, attn)), dim=-1)[:, 0]
            for (_, _, label), p in zip(batch, follows.tolist()):
                prob[label].append(p)
                right += (p > 0.5) == (label == 0)
    n = len(pairs)
    print(f"held-out sentence pairs: {n} ({len(prob[0])} following, {len(prob[1])} from another document)")
    print(f"next-sentence accuracy {100 * right / n:.2f}%  mean P(follows): following {np.mean(prob[0]):.3f}, "
          f"other document {np.mean(prob[1]):.3f}")


if __name__ == "__main__":
    main()
