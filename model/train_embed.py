#!/usr/bin/python3
"""Stage 3 of the demo model: sentence embeddings for semantic search,
while the masked-LM and next-sentence heads keep being trained.

    /usr/bin/python3 model/train_embed.py --steps N [--init-model model/demo]

Starts from an exported model's weights (by default the shipped one) and
minimises, at every step, the sum of
  - masked-LM + next-sentence loss on a batch of the second stage's text
    (train2.bin), exactly as train.py builds it, so fill-mask does not drift;
  - unsupervised SimCSE (Gao et al., 2021): a batch of single sentences of
    the same text, each encoded twice with dropout; the two encodings of a
    sentence are a positive pair, the other sentences of the batch negatives;
  - the same contrastive loss, both directions, on a batch of text pairs
    from prep_pairs.py (a headword and its definition, a gloss and its
    example, consecutive sentences, two related WordNet words, two
    sentences of one WordNet topic), or, with --everyday-pairs, on the
    fourth stage's pairs of everyday English (prep_everyday.py), with an
    SNLI contradiction as a hard negative where there is one.
With --distill-weight, the masked-LM and next-sentence heads are also (or,
with --mlm-weight 0, only) held by distillation: a frozen copy of the
shipped model (--teacher) sees the same masked batch, and the student's
output distributions are pulled towards the teacher's, KL(teacher ||
student) at temperature 1 over the whole vocabulary, on the masked
positions and on a sample of the unmasked ones (--distill-unmasked), and
on the next-sentence logits.  Plain masked-LM loss only pulls towards the
one right answer, so the rest of the teacher's distribution, and with it
the fill-mask ranking, drifts; distillation holds all of it.
Sentence embeddings are the mean over the tokens, as the shipped
sentence-transformers files select; similarities are cosines over a
temperature of 0.05.  One CPU thread, fixed seed; the weights are saved to
--ckpt every --ckpt-minutes and at the end (export with export.py)."""
import argparse
import json
import os
import sys
import time

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bert_torch import Bert, Cfg, data_units, load_checkpoint, load_safetensors, save_checkpoint  # noqa: E402
from train import CLS, PAD, SEP, batches_for_epoch, collate, lr_at, mask_tokens  # noqa: E402

WORK = os.path.join(HERE, "work")
KINDS = ("define", "example", "next", "synonym", "topic")
# What --heads-only trains: the masked-LM transform and output bias (the
# decoder itself is the word embeddings, tied) and the next-sentence head.
HEADS = ("cls.", "bert.pooler.")


def pad_batch(seqs):
    t = max(map(len, seqs))
    ids = torch.full((len(seqs), t), PAD, dtype=torch.long)
    mask = torch.zeros((len(seqs), t), dtype=torch.long)
    for r, s in enumerate(seqs):
        ids[r, :len(s)] = torch.as_tensor(s)
        mask[r, :len(s)] = 1
    return ids, mask


def embed(model, seqs, dropout):
    ids, mask = pad_batch(seqs)
    return F.normalize(model.mean_pool(model.encode(ids, torch.zeros_like(ids), mask, dropout), mask), dim=-1)


def contrastive(za, zb, temp, same=None, both_ways=False, zneg=None):
    """In-batch InfoNCE: row i of za should be nearest to row i of zb.
    same[i, j] marks off-diagonal pairs with identical text (or of one
    group), which are not negatives.  zneg: hard negatives, more candidates
    for every row of za (not for the reverse direction)."""
    logits = za @ zb.t() / temp
    if same is not None:
        logits = logits.masked_fill(same, float("-inf"))
    labels = torch.arange(len(za))
    full = logits if zneg is None or len(zneg) == 0 else torch.cat([logits, za @ zneg.t() / temp], 1)
    loss = F.cross_entropy(full, labels)
    if both_ways:
        loss = (loss + F.cross_entropy(logits.t(), labels)) / 2
    return loss


def load_exported(directory):
    """An exported model directory's config and weights (float16 -> float32)."""
    cfg_json = json.load(open(os.path.join(directory, "config.json")))
    cfg = Cfg(**{k: cfg_json[k] for k in Cfg().to_dict() if k in cfg_json})
    return cfg, load_safetensors(os.path.join(directory, "model.safetensors"))


def kl_to(teacher_logits, student_logits):
    """KL(teacher || student), temperature 1, mean over the rows."""
    return F.kl_div(F.log_softmax(student_logits, -1), F.log_softmax(teacher_logits, -1),
                    log_target=True, reduction="batchmean")


def param_groups(model, args):
    """AdamW groups: no weight decay on biases and norms; with
    --layer-lr-decay d, layer i of n trains at lr * d^(n-1-i) and the
    embeddings at lr * d^n (the heads at lr), so the lower layers, which
    the masked-LM head's answers rest on, move less."""
    n = model.c.num_hidden_layers
    groups = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if name.startswith("bert.embeddings."):
            depth = n
        elif name.startswith("bert.encoder.layer."):
            depth = n - 1 - int(name.split(".")[3])
        else:
            depth = 0
        key = (depth, p.dim() >= 2)
        groups.setdefault(key, []).append(p)
    return [{"params": ps, "weight_decay": args.weight_decay if decay else 0.0,
             "lr_scale": args.layer_lr_decay ** depth} for (depth, decay), ps in sorted(groups.items())]


def load_everyday_pairs(directory, kinds, max_len):
    """prepare_everyday.sh's pairs: (a, b, hard negative or None, group) by
    kind; pairs of one group are not each other's in-batch negatives."""
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(directory, "pairs.tsv"), encoding="utf-8")]
    cols = []
    for c in (3, 4, 5):
        with open(os.path.join(directory, f"pairs_{c}.jsonl"), encoding="utf-8") as f:
            cols.append([json.loads(line) for line in f if line.strip()])
    if not len(rows) == len(cols[0]) == len(cols[1]) == len(cols[2]):
        sys.exit(f"train_embed: {directory}: pairs.tsv and pairs_*.jsonl differ in length; "
                 "run prepare_everyday.sh again")
    cut = lambda s: s if len(s) <= max_len else s[:max_len - 1] + [SEP]
    by_kind = {k: [] for k in kinds}
    for r, a, b, n in zip(rows, *cols):
        if r[0] in by_kind:
            neg = cut(n) if len(r) > 4 and r[4] else None
            by_kind[r[0]].append((cut(a), cut(b), neg, r[1]))
    return by_kind


def load_pairs(work, max_len):
    kinds = [line.split("\t", 1)[0] for line in open(os.path.join(work, "pairs.tsv"), encoding="utf-8")]
    sides = []
    for side in ("a", "b"):
        with open(os.path.join(work, f"pairs_{side}.jsonl"), encoding="utf-8") as f:
            sides.append([json.loads(line) for line in f if line.strip()])
    if not len(kinds) == len(sides[0]) == len(sides[1]):
        sys.exit("train_embed: pairs.tsv and pairs_{a,b}.jsonl differ in length; run prepare.sh again")
    cut = lambda s: s if len(s) <= max_len else s[:max_len - 1] + [SEP]
    by_kind = {k: [] for k in KINDS}
    for k, a, b in zip(kinds, *sides):
        by_kind[k].append((cut(a), cut(b)))
    return by_kind


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--init-model", default=os.path.join(HERE, "demo"), help="an exported model directory")
    ap.add_argument("--init-from", default="", help="or start from this checkpoint's weights (in --work)")
    ap.add_argument("--embed-weight", type=float, default=1.0,
                    help="weight of the two contrastive losses against masked-LM + NSP")
    ap.add_argument("--mlm-weight", type=float, default=1.0,
                    help="weight of the plain masked-LM + NSP loss (0: distillation only)")
    ap.add_argument("--distill-weight", type=float, default=0.0,
                    help="weight of the distillation loss towards --teacher (0: none)")
    ap.add_argument("--teacher", default=os.path.join(HERE, "demo"), help="an exported model directory")
    ap.add_argument("--distill-unmasked", type=float, default=0.15,
                    help="share of the unmasked pieces also distilled")
    ap.add_argument("--layer-lr-decay", type=float, default=1.0)
    ap.add_argument("--heads-only", action="store_true",
                    help="train only the masked-LM and next-sentence heads (with --embed-weight 0): "
                         "fit them to the teacher again after the encoder has learned embeddings, "
                         "which leaves the embeddings exactly as they are")
    ap.add_argument("--lr", type=float, default=2e-4)
    ap.add_argument("--warmup", type=float, default=0.05)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--tokens-per-batch", type=int, default=1536, help="of the masked-LM batch")
    ap.add_argument("--nsp-prob", type=float, default=0.3)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--unsup-batch", type=int, default=32, help="sentences per SimCSE batch")
    ap.add_argument("--pair-batch", type=int, default=64, help="pairs per supervised batch")
    ap.add_argument("--pair-mix", default="0.3,0.25,0.15,0.3",
                    help="shares of define,example,next,synonym[,topic] pairs (kinds left off are not drawn), "
                         "or of --pair-kinds")
    ap.add_argument("--everyday-pairs", default="",
                    help="draw the pairs from this directory of prepare_everyday.sh (in --work) instead")
    ap.add_argument("--pair-kinds", default="nli,intent,service,sts,qa,story",
                    help="the kinds of --everyday-pairs that --pair-mix shares out, in its order")
    ap.add_argument("--sentence-len", type=int, default=32, help="pieces, [CLS] and [SEP] included")
    ap.add_argument("--temperature", type=float, default=0.05)
    ap.add_argument("--dropout", type=float, default=0.1, help="in the contrastive passes")
    ap.add_argument("--ckpt-minutes", type=float, default=8.0)
    ap.add_argument("--keep-checkpoints", action="store_true", help="also keep each as CKPT-stepN.pt")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--work", default=WORK)
    ap.add_argument("--data", default="train2.bin")
    ap.add_argument("--ckpt", default="ckpt3.pt")
    ap.add_argument("--log", default="train3.log")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    log = open(os.path.join(args.work, args.log), "a")

    if args.init_from:
        init = load_checkpoint(os.path.join(args.work, args.init_from))
        cfg, weights, source = Cfg(**init["config"]), init["model"], args.init_from
    else:
        cfg, weights = load_exported(args.init_model)
        source = args.init_model
    model = Bert(cfg)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    if missing or unexpected:
        sys.exit(f"train_embed: {source} lacks {missing} or has unknown {unexpected}")
    teacher = None
    if args.distill_weight > 0:
        tcfg, tweights = load_exported(args.teacher)
        teacher = Bert(tcfg)
        missing, unexpected = teacher.load_state_dict(tweights, strict=False)
        if missing or unexpected or tcfg.vocab_size != cfg.vocab_size:
            sys.exit(f"train_embed: teacher {args.teacher} lacks {missing} or has unknown {unexpected}")
        teacher.eval()
        for p in teacher.parameters():
            p.requires_grad_(False)
    if args.heads_only:
        if args.embed_weight > 0:
            sys.exit("train_embed: --heads-only trains no embeddings; give --embed-weight 0")
        for name, p in model.named_parameters():
            p.requires_grad_(name.startswith(HEADS))
    opt = torch.optim.AdamW(param_groups(model, args), lr=args.lr, betas=(0.9, 0.98), eps=1e-6)
    print(f"start {json.dumps(vars(args))} from {source}", file=log, flush=True)

    docs = data_units(os.path.join(args.work, args.data))
    body = args.sentence_len - 2
    sentences = [u for d in docs for u in d if len(u) >= 5]
    kinds = KINDS
    if args.everyday_pairs:
        kinds = tuple(args.pair_kinds.split(","))
        pairs = load_everyday_pairs(os.path.join(args.work, args.everyday_pairs), kinds, args.sentence_len)
    else:
        pairs = load_pairs(args.work, args.sentence_len)
    # Only the kinds given are drawn from, so a four-share mix draws its
    # batches exactly as before the topic kind existed.
    mix = np.array([float(x) for x in args.pair_mix.split(",")])
    if not 1 <= len(mix) <= len(kinds):
        sys.exit(f"train_embed: --pair-mix takes 1 to {len(kinds)} shares ({', '.join(kinds)})")
    mix /= mix.sum()
    print(f"{len(sentences)} sentences; pairs: " + ", ".join(f"{k} {len(v)}" for k, v in pairs.items()),
          file=log, flush=True)

    state = {"step": 0, "epoch": 0, "batch": 0, "tokens": 0, "seconds": 0.0}
    t0 = last_ckpt = time.time()
    acc = dict.fromkeys(("mlm", "nsp", "kl_mlm", "kl_nsp", "unsup", "sup"), 0.0)
    n_acc = 0
    epoch_data = None
    model.train()
    while state["step"] < args.steps:
        if epoch_data is None or epoch_data[0] != state["epoch"]:
            epoch_data = (state["epoch"], *batches_for_epoch(docs, args.seed, state["epoch"], args.max_len,
                                                              args.tokens_per_batch, args.nsp_prob))
        _, ex, batches = epoch_data
        if state["batch"] >= len(batches):
            state["epoch"] += 1
            state["batch"] = 0
            continue
        for g in opt.param_groups:
            g["lr"] = lr_at(state["step"], args) * g["lr_scale"]

        # masked LM + next sentence, as in train.py
        ids, types, attn, nsp = collate(ex, batches[state["batch"]])
        gen = torch.Generator().manual_seed(args.seed * 1_000_003 + state["step"])
        inp, pos, target = mask_tokens(ids, attn, gen, cfg.vocab_size, 5)
        with torch.set_grad_enabled(not args.heads_only):
            hidden = model.encode(inp, types, attn)
        has_nsp = bool((nsp >= 0).any())
        if teacher is not None:
            # the masked positions and a sample of the others, in one set
            keep = (attn == 1) & (torch.rand(ids.shape, generator=gen) < args.distill_unmasked)
            keep[pos] = True
            dpos = keep.nonzero(as_tuple=True)
            with torch.no_grad():
                t_hidden = teacher.encode(inp, types, attn)
                t_mlm = teacher.mlm_logits(t_hidden[dpos])
                t_nsp = teacher.nsp_logits(t_hidden)[nsp >= 0] if has_nsp else None
            s_mlm = model.mlm_logits(hidden[dpos])
            kl_mlm = kl_to(t_mlm, s_mlm)
            kl_nsp = kl_to(t_nsp, model.nsp_logits(hidden)[nsp >= 0]) if has_nsp else torch.zeros(())
            # the masked positions' logits again, for the plain loss
            is_masked = torch.zeros(ids.shape, dtype=torch.bool)
            is_masked[pos] = True
            mlm = F.cross_entropy(s_mlm[is_masked[dpos]], ids[dpos][is_masked[dpos]])
        else:
            kl_mlm = kl_nsp = torch.zeros(())
            mlm = F.cross_entropy(model.mlm_logits(hidden[pos]), target)
        nsp_loss = (F.cross_entropy(model.nsp_logits(hidden), nsp, ignore_index=-100)
                    if has_nsp else torch.zeros(()))

        seqs, a, b = [], [], []
        unsup = sup = torch.zeros(())
        if args.embed_weight > 0 and args.unsup_batch > 0:
            # unsupervised SimCSE: one sentence, two dropout masks
            pick = rng.choice(len(sentences), args.unsup_batch, replace=False)
            seqs = [[CLS, *sentences[i][:body].tolist(), SEP] for i in pick]
            unsup = contrastive(embed(model, seqs, args.dropout), embed(model, seqs, args.dropout),
                                args.temperature)
        if args.embed_weight > 0:
            # supervised pairs, in-batch negatives, both directions; the
            # everyday pairs' hard negatives are more candidates for each a
            counts = rng.multinomial(args.pair_batch, mix)
            batch = []
            for k, c in zip(kinds, counts):
                batch += [pairs[k][i] for i in rng.choice(len(pairs[k]), c, replace=False)]
            a = [p[0] for p in batch]
            b = [p[1] for p in batch]
            group = [p[3] if len(p) > 3 else None for p in batch]
            same = torch.tensor([[i != j and (a[i] == a[j] or b[i] == b[j]
                                              or (group[i] is not None and group[i] == group[j]))
                                  for j in range(len(batch))] for i in range(len(batch))])
            negs = [p[2] for p in batch if len(p) > 2 and p[2] is not None]
            zneg = embed(model, negs, args.dropout) if negs else None
            sup = contrastive(embed(model, a, args.dropout), embed(model, b, args.dropout),
                              args.temperature, same, both_ways=True, zneg=zneg)
            a = a + negs

        loss = (args.mlm_weight * (mlm + nsp_loss) + args.distill_weight * (kl_mlm + kl_nsp)
                + args.embed_weight * (unsup + sup))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        for k, v in (("mlm", mlm), ("nsp", nsp_loss), ("kl_mlm", kl_mlm), ("kl_nsp", kl_nsp),
                     ("unsup", unsup), ("sup", sup)):
            acc[k] += float(v)
        n_acc += 1
        state["step"] += 1
        state["batch"] += 1
        state["tokens"] += int(attn.sum()) + 2 * sum(map(len, seqs)) + sum(map(len, a + b))
        state["seconds"] = time.time() - t0
        if state["step"] % 25 == 0 or state["step"] == args.steps:
            print(f"step {state['step']} " + " ".join(f"{k} {v / n_acc:.4f}" for k, v in acc.items())
                  + f" lr {lr_at(state['step'] - 1, args):.2e} time {state['seconds']:.0f}s",
                  file=log, flush=True)
            acc = dict.fromkeys(acc, 0.0)
            n_acc = 0
        if time.time() - last_ckpt > 60 * args.ckpt_minutes or state["step"] == args.steps:
            plain = {"state": state, "args": vars(args), "config": cfg.to_dict()}
            save_checkpoint(os.path.join(args.work, args.ckpt), model, plain)
            if args.keep_checkpoints:  # to compare the stages of the run afterwards
                root, ext = os.path.splitext(args.ckpt)
                save_checkpoint(os.path.join(args.work, f"{root}-step{state['step']}{ext}"), model, plain)
            last_ckpt = time.time()
            print(f"checkpoint step {state['step']}", file=log, flush=True)
    log.close()


if __name__ == "__main__":
    main()
