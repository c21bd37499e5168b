#!/usr/bin/python3
"""Train the demo BERT: masked-language model plus next-sentence prediction,
on one CPU thread, with a fixed seed, resumable from its checkpoints.

    /usr/bin/python3 model/train.py --steps N            # fresh run
    /usr/bin/python3 model/train.py --steps N --resume   # continue model/work/ckpt.pt

--steps on a resume may differ from the first run's: the learning rate then
decays linearly from the resumed step to the new end.

The demo model is trained in two stages (see model/README.md); the second
starts from the first one's weights with a fresh optimizer and schedule:

    /usr/bin/python3 model/train.py --steps N --data train2.bin \
        --init-from ckpt.pt --ckpt ckpt2.pt [--resume]

Reads model/work/{train.bin,vocab.txt} (see prepare.sh).  The order of the
examples is a function of (seed, epoch) and the masks of (seed, step), so a
resumed run sees exactly the batches the uninterrupted run would have seen.
"""
import argparse
import json
import math
import os
import sys
import time

# One core: numpy's BLAS and torch's OpenMP pools would otherwise start a
# thread per core before torch.set_num_threads is reached.
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_torch import Bert, Cfg, data_units, load_checkpoint, save_checkpoint  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(HERE, "work")
CLS, SEP, MASK, PAD = 2, 3, 4, 0  # ids in the trimmed vocabulary, checked below


def build_examples(docs, rng, max_len, nsp_prob):
    """Pack consecutive units of a document into sequences of at most
    max_len pieces; some become sentence pairs for next-sentence prediction
    (label 0: B follows A, 1: B is from another document)."""
    body = max_len - 3
    chunks = []  # (doc index, list of unit arrays)
    for di, units in enumerate(docs):
        cur, n = [], 0
        for u in units:
            while len(u) > body:  # an over-long unit is cut into pieces
                if cur:
                    chunks.append((di, cur))
                    cur, n = [], 0
                chunks.append((di, [u[:body]]))
                u = u[body:]
            if n + len(u) > body and cur:
                chunks.append((di, cur))
                cur, n = [], 0
            cur.append(u)
            n += len(u)
        if cur:
            chunks.append((di, cur))
    out = []
    for ci in rng.permutation(len(chunks)):
        di, units = chunks[ci]
        if len(units) >= 2 and rng.random() < nsp_prob:
            cut = int(rng.integers(1, len(units)))
            a = np.concatenate(units[:cut])
            if rng.random() < 0.5:
                b, label = np.concatenate(units[cut:]), 0
            else:
                while True:
                    dj, other = chunks[int(rng.integers(len(chunks)))]
                    if dj != di:
                        break
                b, label = np.concatenate(other), 1
            b = b[:body - len(a)]
            if len(b) == 0:
                out.append((np.concatenate(units), None, -100))
            else:
                out.append((a, b, label))
        else:
            out.append((np.concatenate(units), None, -100))
    return out


def batches_for_epoch(docs, seed, epoch, max_len, tokens_per_batch, nsp_prob):
    rng = np.random.default_rng([seed, epoch])
    ex = build_examples(docs, rng, max_len, nsp_prob)
    lens = np.array([len(a) + (len(b) + 1 if b is not None else 0) + 2 for a, b, _ in ex])
    # Sort within windows of ~100 batches so a batch holds similar lengths
    # (little padding) while the epoch order stays random.
    batches, i, window = [], 0, 100 * tokens_per_batch // 64
    while i < len(ex):
        idx = np.arange(i, min(i + window, len(ex)))
        idx = idx[np.argsort(lens[idx], kind="stable")]
        j = 0
        while j < len(idx):
            k = j
            while k < len(idx) and (k - j + 1) * lens[idx[k]] <= tokens_per_batch:
                k += 1
            k = max(k, j + 1)
            batches.append(idx[j:k])
            j = k
        i += window
    order = rng.permutation(len(batches))
    return ex, [batches[o] for o in order]


def collate(ex, idx):
    rows = []
    for i in idx:
        a, b, label = ex[i]
        ids = [CLS, *a.tolist(), SEP]
        types = [0] * len(ids)
        if b is not None:
            ids += [*b.tolist(), SEP]
            types += [1] * (len(b) + 1)
        rows.append((ids, types, label))
    t = max(len(r[0]) for r in rows)
    ids = torch.full((len(rows), t), PAD, dtype=torch.long)
    types = torch.zeros((len(rows), t), dtype=torch.long)
    mask = torch.zeros((len(rows), t), dtype=torch.long)
    for r, (i_, ty, _) in enumerate(rows):
        ids[r, :len(i_)] = torch.tensor(i_)
        types[r, :len(ty)] = torch.tensor(ty)
        mask[r, :len(i_)] = 1
    nsp = torch.tensor([r[2] for r in rows], dtype=torch.long)
    return ids, types, mask, nsp


def mask_tokens(ids, attn, gen, vocab_size, n_special, prob=0.15):
    """BERT's recipe: choose 15% of the real pieces; of those 80% become
    [MASK], 10% a random piece, 10% stay.  Returns inputs, positions, targets."""
    cand = (attn == 1) & (ids != CLS) & (ids != SEP)
    r = torch.rand(ids.shape, generator=gen)
    chosen = cand & (r < prob)
    if not chosen.any():
        chosen = cand & (r == r[cand].min())
    inp = ids.clone()
    act = torch.rand(ids.shape, generator=gen)
    inp[chosen & (act < 0.8)] = MASK
    rnd = chosen & (act >= 0.8) & (act < 0.9)
    inp[rnd] = torch.randint(n_special, vocab_size, ids.shape, generator=gen)[rnd]
    pos = chosen.nonzero(as_tuple=True)
    return inp, pos, ids[pos]


def lr_at(step, args):
    warm = max(1, int(args.warmup * args.steps))
    if step < warm:
        return args.lr * (step + 1) / warm
    return args.lr * max(0.0, (args.steps - step) / max(1, args.steps - warm))


def save(path, model, opt, state, args):
    save_checkpoint(path, model, {"state": state, "args": vars(args), "config": model.c.to_dict()},
                    opt=opt, torch_rng=torch.get_rng_state())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, required=True, help="total optimizer steps of the schedule")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=1024)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--tokens-per-batch", type=int, default=6144)
    ap.add_argument("--lr", type=float, default=7e-4)
    ap.add_argument("--warmup", type=float, default=0.04)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--nsp-prob", type=float, default=0.3, help="share of examples made sentence pairs")
    ap.add_argument("--ckpt-minutes", type=float, default=10.0)
    ap.add_argument("--stop-after-minutes", type=float, default=0, help="leave after this long (0: run to the end)")
    ap.add_argument("--stop-at-step", type=int, default=0, help="checkpoint and leave at this step")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--work", default=WORK)
    ap.add_argument("--data", default="train.bin", help="token ids, in --work")
    ap.add_argument("--ckpt", default="ckpt.pt", help="this run's checkpoint, in --work")
    ap.add_argument("--log", default="train.log", help="progress log, in --work")
    ap.add_argument("--init-from", default="", help="start from this checkpoint's weights (in --work)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    vocab = open(os.path.join(args.work, "vocab.txt"), encoding="utf-8").read().split("\n")[:-1]
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "unexpected vocab order"
    ckpt_path = os.path.join(args.work, args.ckpt)
    log = open(os.path.join(args.work, args.log), "a")

    if args.resume:
        ck = load_checkpoint(ckpt_path)
        saved = ck["args"]
        for k in ("seed", "hidden", "layers", "heads", "ff", "max_len", "tokens_per_batch",
                  "lr", "warmup", "weight_decay", "nsp_prob", "data", "init_from"):
            if k not in saved:
                continue  # a checkpoint written before the option existed
            setattr(args, k, saved[k])  # the schedule and data order belong to the run
        cfg = Cfg(**ck["config"])
    else:
        cfg = Cfg(vocab_size=len(vocab), hidden_size=args.hidden, num_hidden_layers=args.layers,
                  num_attention_heads=args.heads, intermediate_size=args.ff,
                  max_position_embeddings=args.max_len)
    torch.manual_seed(args.seed)
    model = Bert(cfg)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.98), eps=1e-6)
    state = {"step": 0, "epoch": 0, "batch": 0, "tokens": 0, "seconds": 0.0}
    if args.resume:
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        state = ck["state"]
        torch.set_rng_state(ck["torch_rng"])
        print(f"resumed at step {state['step']}", file=log, flush=True)
    elif args.init_from:
        init = load_checkpoint(os.path.join(args.work, args.init_from))
        if Cfg(**init["config"]).to_dict() != cfg.to_dict():
            sys.exit(f"train: --init-from {args.init_from}: its sizes differ from this run's options")
        model.load_state_dict(init["model"])
        print(f"start {json.dumps(vars(args))} from the weights of {args.init_from} "
              f"(step {init['state']['step']})", file=log, flush=True)
    else:
        print(f"start {json.dumps(vars(args))} params={sum(p.numel() for p in model.parameters())}",
              file=log, flush=True)

    docs = data_units(os.path.join(args.work, args.data))
    n_special = 5
    model.train()
    t0, last_ckpt = time.time(), time.time()
    base_seconds = state["seconds"]
    acc = {"mlm": 0.0, "nsp": 0.0, "n": 0, "nspn": 0}
    epoch_data = None
    while state["step"] < args.steps:
        if epoch_data is None or epoch_data[0] != state["epoch"]:
            ex, batches = batches_for_epoch(docs, args.seed, state["epoch"], args.max_len,
                                            args.tokens_per_batch, args.nsp_prob)
            epoch_data = (state["epoch"], ex, batches)
        _, ex, batches = epoch_data
        if state["batch"] >= len(batches):
            state["epoch"] += 1
            state["batch"] = 0
            continue
        ids, types, attn, nsp = collate(ex, batches[state["batch"]])
        gen = torch.Generator().manual_seed(args.seed * 1_000_003 + state["step"])
        inp, pos, target = mask_tokens(ids, attn, gen, cfg.vocab_size, n_special)
        for g in opt.param_groups:
            g["lr"] = lr_at(state["step"], args)
        hidden = model.encode(inp, types, attn)
        mlm = F.cross_entropy(model.mlm_logits(hidden[pos]), target)
        loss = mlm
        has_nsp = (nsp >= 0).any()
        if has_nsp:
            nsp_loss = F.cross_entropy(model.nsp_logits(hidden), nsp, ignore_index=-100)
            loss = loss + nsp_loss
            acc["nsp"] += nsp_loss.item()
            acc["nspn"] += 1
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        acc["mlm"] += mlm.item()
        acc["n"] += 1
        state["step"] += 1
        state["batch"] += 1
        state["tokens"] += int(attn.sum())
        state["seconds"] = base_seconds + time.time() - t0
        if state["step"] % 100 == 0 or state["step"] == args.steps:
            print(f"step {state['step']} epoch {state['epoch']} mlm {acc['mlm'] / acc['n']:.4f} "
                  f"nsp {acc['nsp'] / max(1, acc['nspn']):.4f} lr {lr_at(state['step'] - 1, args):.2e} "
                  f"tokens {state['tokens']} time {state['seconds']:.0f}s "
                  f"tok/s {state['tokens'] / max(1e-9, state['seconds']):.0f}", file=log, flush=True)
            acc = {"mlm": 0.0, "nsp": 0.0, "n": 0, "nspn": 0}
        stop = ((args.stop_after_minutes and time.time() - t0 > 60 * args.stop_after_minutes)
                or state["step"] == args.stop_at_step)
        if time.time() - last_ckpt > 60 * args.ckpt_minutes or state["step"] == args.steps or stop:
            save(ckpt_path, model, opt, state, args)
            last_ckpt = time.time()
            print(f"checkpoint step {state['step']}", file=log, flush=True)
            if stop:
                break
    log.close()


if __name__ == "__main__":
    main()
