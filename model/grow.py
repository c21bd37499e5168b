#!/usr/bin/python3
"""A deeper model from an exported one: new encoder layers inserted after
chosen ones, each a copy of the layer before it, as a training checkpoint
for train_embed.py --init-from.

    /usr/bin/python3 model/grow.py --model model/demo --after 1,3 --out grown.pt

A copied layer whose two output projections are scaled by --scale adds
that fraction of the copy's change to the stream; with 0 it adds nothing
but still normalizes again (post-LayerNorm), so the grown model starts
close to, not exactly at, the model it grew from.  Training then has the
copies' attention and feed-forward weights to start from instead of noise
(stacking, Gong et al., 2019)."""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bert_torch import Bert, Cfg, save_checkpoint  # noqa: E402
from train_embed import load_exported  # noqa: E402

OUTPUTS = ("attention.output.dense.", "output.dense.")


def grown_weights(weights, n_layers, after, scale):
    """The state dict with a copy of layer i inserted after it, for each i
    in after; returns the new weights and the number of layers."""
    order = []
    for i in range(n_layers):
        order.append((i, False))
        if i in after:
            order.append((i, True))
    out = {k: v for k, v in weights.items() if not k.startswith("bert.encoder.layer.")}
    for new, (old, is_copy) in enumerate(order):
        prefix = f"bert.encoder.layer.{old}."
        for k, v in weights.items():
            if k.startswith(prefix):
                rest = k[len(prefix):]
                t = v.clone()
                if is_copy and rest.startswith(OUTPUTS):
                    t *= scale
                out[f"bert.encoder.layer.{new}.{rest}"] = t
    return out, len(order)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=os.path.join(HERE, "demo"), help="an exported model directory")
    ap.add_argument("--after", default="1,3", help="comma-separated layers to copy (0-based)")
    ap.add_argument("--scale", type=float, default=0.0, help="of the copies' output projections")
    ap.add_argument("--out", required=True, help="checkpoint to write (in model/work unless a path)")
    args = ap.parse_args()
    cfg, weights = load_exported(args.model)
    after = {int(x) for x in args.after.split(",") if x}
    if not after or min(after) < 0 or max(after) >= cfg.num_hidden_layers:
        sys.exit(f"grow: --after takes layers 0 to {cfg.num_hidden_layers - 1}")
    weights, n = grown_weights(weights, cfg.num_hidden_layers, after, args.scale)
    cfg.num_hidden_layers = n
    model = Bert(cfg)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    if missing or unexpected:
        sys.exit(f"grow: missing {missing}, unexpected {unexpected}")
    out = args.out if os.sep in args.out else os.path.join(HERE, "work", args.out)
    save_checkpoint(out, model, {"config": cfg.to_dict(), "grown_from": args.model,
                                 "state": {"step": 0, "tokens": 0, "seconds": 0.0},
                                 "after": sorted(after), "scale": args.scale})
    print(f"{out}: {n} layers")


if __name__ == "__main__":
    main()
