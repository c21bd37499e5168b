#!/usr/bin/python3
"""torch_train_bench.py - the PyTorch side of `make bench-train`: the same
fine-tuning step as tests/bench/bench_train.c, in PyTorch float32.

    torch_train_bench.py MODEL_DIR LABEL BATCH LENGTH THREADS STEPS

The model is tests/reference/train_reference.py's BertForSequenceClassification
(transformers' modules transcribed: eager attention, pooler, dropout, 2
labels) with MODEL_DIR's config.json and weights, in float32; the loop is
Trainer's (loss.backward(), clip_grad_norm_ at 1.0, AdamW with weight decay
0.01 on the weights, get_linear_schedule_with_warmup through LambdaLR,
zero_grad), on the same batches of random ids as bench_train.c, with
torch.set_num_threads(THREADS).  One warm-up step, then STEPS timed; prints

    RESULT engine=torch label=LABEL batch=B length=L threads=T steps=S
           examples_per_s=X step_s=Y maxrss_mb=Z

maxrss_mb: resource.getrusage's ru_maxrss, the process's peak resident set
(the interpreter and torch's libraries included).  Needs Debian's
python3-torch; run it with /usr/bin/python3.
"""
import json
import os
import resource
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import train_reference as ref  # noqa: E402

MASK64 = (1 << 64) - 1


def make_batch(step, n, L, vocab):
    """bench_train.c's make_batch: the same LCG, the same ids."""
    s = (1000003 * (step + 1)) & MASK64
    ids = np.empty((n, L), dtype=np.int64)
    for i in range(n):
        for q in range(L):
            if q == 0:
                ids[i, q] = 101
            elif q == L - 1:
                ids[i, q] = 102
            else:
                s = (s * 6364136223846793005 + 1442695040888963407) & MASK64
                ids[i, q] = 1000 + (s >> 33) % (vocab - 1000)
    ids = torch.from_numpy(ids)
    return {"ids": ids, "types": torch.zeros_like(ids), "mask": torch.ones_like(ids), "columns": 0,
            "labels": torch.tensor([(step + i) % 2 for i in range(n)], dtype=torch.long)}


def main():
    if len(sys.argv) != 7:
        raise SystemExit("usage: torch_train_bench.py MODEL_DIR LABEL BATCH LENGTH THREADS STEPS")
    model_dir, label = sys.argv[1], sys.argv[2]
    n, L, threads, steps = (int(a) for a in sys.argv[3:])
    torch.set_num_threads(threads)
    torch.manual_seed(42)
    with open(os.path.join(model_dir, "config.json")) as f:
        mc = json.load(f)
    c = {"family": "bert", "task": "classify", "num_labels": 2, "vocab_size": mc["vocab_size"],
         "hidden": mc["hidden_size"], "layers": mc["num_hidden_layers"], "heads": mc["num_attention_heads"],
         "ff": mc["intermediate_size"], "max_pos": mc["max_position_embeddings"],
         "type_vocab_size": mc.get("type_vocab_size", 2), "eps": mc.get("layer_norm_eps", 1e-12),
         "act": mc.get("hidden_act", "gelu"), "pad_token_id": mc.get("pad_token_id", 0),
         "p_hidden": mc.get("hidden_dropout_prob", 0.1), "p_attention": mc.get("attention_probs_dropout_prob", 0.1),
         "p_head": mc.get("classifier_dropout") or mc.get("hidden_dropout_prob", 0.1)}
    model = ref.Model(c).to(torch.float32)
    # The checkpoint's encoder (and pooler when it has one); the classifier stays new.
    tensors = ref.read_safetensors(os.path.join(model_dir, "model.safetensors"))
    own = model.state_dict()
    load = {}
    for name, arr in tensors.items():
        key = name if name.startswith("bert.") else "bert." + name
        if key in own and tuple(own[key].shape) == arr.shape:
            load[key] = torch.from_numpy(np.array(arr, dtype=np.float32))
    model.load_state_dict(load, strict=False)
    del tensors, load

    model.train()
    decay = set(ref.decay_parameter_names(model))
    params = list(model.named_parameters())
    groups = [{"params": [p for nm, p in params if nm in decay], "weight_decay": 0.01},
              {"params": [p for nm, p in params if nm not in decay], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=5e-5, betas=(0.9, 0.999), eps=1e-8)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, ref.linear_schedule(1, steps + 1))
    batches = [make_batch(step, n, L, c["vocab_size"]) for step in range(steps + 1)]
    t0 = 0.0
    for step in range(steps + 1):
        if step == 1:
            t0 = time.perf_counter()
        loss = model(batches[step])
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for _, p in params], 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        print(f"step {step} loss {loss.item():.5f}", file=sys.stderr)
    elapsed = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"RESULT engine=torch label={label} batch={n} length={L} threads={threads} steps={steps} "
          f"examples_per_s={n * steps / elapsed:.3f} step_s={elapsed / steps:.3f} maxrss_mb={rss:.0f}")


if __name__ == "__main__":
    main()
