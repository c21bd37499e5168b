#!/usr/bin/python3
"""train_reference.py - fine-tuning as transformers' Trainer does it, in
PyTorch autograd, for the trainer suite's goldens (tests/golden/make_train_goldens.py).

The modules are transcribed from huggingface/transformers, with the
parameters named as there, so that a checkpoint's tensor names are the
state_dict's:

  * src/transformers/models/bert/modeling_bert.py (commit
    8ec58104181bfb34d824d89bccc009b4f6be6e0e): BertEmbeddings (word +
    position + token type, LayerNorm, dropout; word_embeddings with
    padding_idx=pad_token_id), BertSelfAttention in its eager form (scores /
    sqrt(head size) + the extended mask (1 - mask) * finfo.min, softmax,
    dropout, context), BertSelfOutput and BertOutput (dense, dropout,
    LayerNorm of the sum with the input), BertPooler (dense, tanh on the
    first token), BertForSequenceClassification (pooler, dropout of
    classifier_dropout or hidden_dropout_prob, classifier; the loss by
    problem_type: CrossEntropyLoss, BCEWithLogitsLoss, MSELoss on the
    squeezed logit), BertForTokenClassification (dropout, classifier,
    CrossEntropyLoss whose ignore_index -100 skips tokens),
    BertForQuestionAnswering (qa_outputs split into start and end, positions
    clamped to the sequence length, which is the loss's ignore_index, and
    (start loss + end loss) / 2);
  * src/transformers/models/distilbert/modeling_distilbert.py (commit
    00b326f4caca2d1fbebe5c86e1693475fd4d0c9a): Embeddings (no token types),
    MultiHeadSelfAttention (q / sqrt(dim per head) before the product,
    masked_fill with finfo.min, attention_dropout; no dropout after
    out_lin), FFN (lin1, activation, lin2, dropout), TransformerBlock
    (sa_layer_norm, output_layer_norm), DistilBertForSequenceClassification
    (pre_classifier, ReLU, dropout of seq_classif_dropout, classifier),
    DistilBertForTokenClassification (dropout, classifier),
    DistilBertForQuestionAnswering (dropout of qa_dropout, qa_outputs);
    with sinusoidal_pos_embds, create_sinusoidal_embeddings (fixed sinusoids,
    requires_grad False);
  * src/transformers/models/roberta/modeling_roberta.py (commit
    87b236ba2be8b3e48a7d0c8ca6513302736d2886): RobertaEmbeddings (position
    ids from create_position_ids_from_input_ids, position_embeddings with
    padding_idx), BERT's layers, RobertaClassificationHead (dropout, dense,
    tanh, dropout, out_proj on <s>);
  * src/transformers/models/mpnet/modeling_mpnet.py (commit
    ade3d756fc1af824c0f1ced44fa5f98335b6394b): MPNetEmbeddings (padding_idx
    1 for words and positions, no token types), MPNetSelfAttention (q, k, v,
    o; the relative position bias of MPNetEncoder.compute_position_bias,
    from family_reference.py's relative_position_bucket, added to the scaled
    scores before the mask), MPNetAttention (LayerNorm(dropout(o) + x)),
    MPNetClassificationHead (as RoBERTa's);
  * src/transformers/models/electra/modeling_electra.py (commit
    014873b4dfa2482fa4f8e79e6e4fb955461f4373): ElectraEmbeddings (BERT's,
    embedding_size wide: word, position and token type embeddings,
    LayerNorm, dropout), ElectraModel (embeddings_project, a Linear from
    embedding_size to hidden_size when the two differ, after the
    embeddings' dropout; no pooler), BERT's layers,
    ElectraClassificationHead (dropout, dense, gelu in its erf form
    whatever hidden_act says, dropout, out_proj on the first token),
    ElectraForTokenClassification (dropout, classifier) and
    ElectraForQuestionAnswering (qa_outputs, no dropout);
  * src/transformers/trainer.py (commit
    2cda12cbf6e476183e68ec476551fa7e3717394a; get_decay_parameter_names:
    every parameter but those of LayerNorm modules and those whose full name
    holds "bias"; create_optimizer's two groups, weight_decay and 0.0;
    clip_grad_norm_ on every parameter before optimizer.step();
    scheduler.step() after it) and src/transformers/optimization.py (commit
    ad1fc9639f2e7b6808a2ca982c0a9b3134d76ee8; get_linear_schedule_with_warmup's
    lr_lambda through LambdaLR, so the first step uses lr_lambda(0));
  * pytorch torch/optim/adamw.py and torch/nn/utils/clip_grad.py (torch 1.13
    as Debian ships it): decoupled decay p *= 1 - lr * wd, the moments,
    bias corrections, denom = sqrt(v) / sqrt(bc2) + eps, p -= lr / bc1 * m /
    denom; the total norm, max_norm / (norm + 1e-6) clamped to 1;
  * sentence-transformers' Pooling (mean over the attention mask, CLS, max
    with masked tokens at -1e9) and MultipleNegativesRankingLoss (cos_sim of
    every anchor with every positive then every negative, times scale,
    cross-entropy with anchor i's own positive as target).

Runs in float64 by default: the goldens are then the exact trajectory, which
the C engine (float32) follows within its own rounding.  In float32, PyTorch's
rounding noise on gradients that are zero in exact arithmetic (the key bias,
which the softmax cancels) is what AdamW's division by sqrt(v) turns into
steps of a tenth of the learning rate, and two float32 runs part there.
"""
import json
import math
import os
import struct

import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

F32_MIN = float(np.finfo(np.float32).min)


class Dropout(nn.Dropout):
    pass


def create_sinusoidal_embeddings(n_pos, dim, out):
    """modeling_distilbert.py's _create_sinusoidal_embeddings: fixed
    sinusoids computed in float64 by numpy, stored as float32, and
    requires_grad False, so that the Trainer neither optimizes, decays nor
    clips them (its optimizer takes only parameters that require grad)."""
    position_enc = np.array([[pos / np.power(10000, 2 * (j // 2) / dim) for j in range(dim)] for pos in range(n_pos)])
    out.requires_grad = False
    with torch.no_grad():
        out[:, 0::2] = torch.FloatTensor(np.sin(position_enc[:, 0::2]))
        out[:, 1::2] = torch.FloatTensor(np.cos(position_enc[:, 1::2]))
    out.detach_()


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        fam = c["family"]
        self.family = fam
        self.pad = c["pad_token_id"]
        width = c.get("embedding_size") or c["hidden"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], width, padding_idx=self.pad)
        self.position_embeddings = nn.Embedding(c["max_pos"], width,
                                                padding_idx=self.pad if fam in ("roberta", "mpnet") else None)
        if fam == "distilbert" and c.get("sinusoidal"):
            create_sinusoidal_embeddings(c["max_pos"], width, self.position_embeddings.weight)
        if fam not in ("distilbert", "mpnet"):
            self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], width)
        self.LayerNorm = nn.LayerNorm(width, eps=c["eps"])
        self.dropout = Dropout(c["p_hidden"])

    def forward(self, ids, types):
        seq = ids.shape[1]
        if self.family in ("roberta", "mpnet"):
            # create_position_ids_from_input_ids
            mask = ids.ne(self.pad).int()
            pos = (torch.cumsum(mask, dim=1).type_as(mask) * mask).long() + self.pad
        else:
            pos = torch.arange(seq, dtype=torch.long)[None].expand_as(ids)
        x = self.word_embeddings(ids) + self.position_embeddings(pos)
        if self.family not in ("distilbert", "mpnet"):
            x = x + self.token_type_embeddings(types)
        return self.dropout(self.LayerNorm(x))


class Linear(nn.Linear):
    pass


class BertSelf(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden"]
        self.query, self.key, self.value = Linear(h, h), Linear(h, h), Linear(h, h)
        self.dropout = Dropout(c["p_attention"])


class BertSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = Linear(c["hidden"], c["hidden"])
        self.LayerNorm = nn.LayerNorm(c["hidden"], eps=c["eps"])
        self.dropout = Dropout(c["p_hidden"])


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        setattr(self, "self", BertSelf(c))
        self.output = BertSelfOutput(c)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = Linear(c["hidden"], c["ff"])


class BertOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = Linear(c["ff"], c["hidden"])
        self.LayerNorm = nn.LayerNorm(c["hidden"], eps=c["eps"])
        self.dropout = Dropout(c["p_hidden"])


def activation(name):
    if name == "gelu":
        return lambda x: nn.functional.gelu(x)
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return lambda x: nn.functional.gelu(x, approximate="tanh")
    if name == "relu":
        return nn.functional.relu
    raise ValueError(name)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)
        self.act = activation(c["act"])

    def forward(self, x, additive):
        c, att = self.c, getattr(self.attention, "self")
        b, s, h = x.shape
        n, d = c["heads"], h // c["heads"]

        def split(t):
            return t.view(b, s, n, d).permute(0, 2, 1, 3)
        q, k, v = split(att.query(x)), split(att.key(x)), split(att.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d) + additive
        probs = att.dropout(torch.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, s, h)
        o = self.attention.output
        h1 = o.LayerNorm(o.dropout(o.dense(ctx)) + x)
        f = self.act(self.intermediate.dense(h1))
        out = self.output
        return out.LayerNorm(out.dropout(out.dense(f)) + h1)


class DistilAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden"]
        self.q_lin, self.k_lin, self.v_lin, self.out_lin = Linear(h, h), Linear(h, h), Linear(h, h), Linear(h, h)
        self.dropout = Dropout(c["p_attention"])


class FFN(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.lin1, self.lin2 = Linear(c["hidden"], c["ff"]), Linear(c["ff"], c["hidden"])
        self.dropout = Dropout(c["p_hidden"])


class DistilLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.attention = DistilAttention(c)
        self.sa_layer_norm = nn.LayerNorm(c["hidden"], eps=1e-12)
        self.ffn = FFN(c)
        self.output_layer_norm = nn.LayerNorm(c["hidden"], eps=1e-12)
        self.act = activation(c["act"])

    def forward(self, x, mask):
        a, (b, s, h) = self.attention, x.shape
        n, d = self.c["heads"], h // self.c["heads"]

        def split(t):
            return t.view(b, s, n, d).transpose(1, 2)
        q = split(a.q_lin(x)) / math.sqrt(d)
        k, v = split(a.k_lin(x)), split(a.v_lin(x))
        scores = torch.matmul(q, k.transpose(2, 3))
        masked = (mask == 0).view(b, 1, 1, s).expand_as(scores)
        scores = scores.masked_fill(masked, torch.tensor(torch.finfo(scores.dtype).min))
        w = a.dropout(nn.functional.softmax(scores, dim=-1))
        ctx = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, s, h)
        sa = self.sa_layer_norm(a.out_lin(ctx) + x)
        f = self.ffn
        return self.output_layer_norm(f.dropout(f.lin2(self.act(f.lin1(sa)))) + sa)


class MPNetSelf(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden"]
        self.q, self.k, self.v, self.o = Linear(h, h), Linear(h, h), Linear(h, h), Linear(h, h)
        self.dropout = Dropout(c["p_attention"])


class MPNetAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn = MPNetSelf(c)
        self.LayerNorm = nn.LayerNorm(c["hidden"], eps=c["eps"])
        self.dropout = Dropout(c["p_hidden"])


class MPNetLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.attention = MPNetAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)
        self.act = activation(c["act"])

    def forward(self, x, additive, position_bias):
        c, att = self.c, self.attention.attn
        b, s, h = x.shape
        n, d = c["heads"], h // c["heads"]

        def split(t):
            return t.view(b, s, n, d).permute(0, 2, 1, 3)
        q, k, v = split(att.q(x)), split(att.k(x)), split(att.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(d)
        scores = scores + position_bias
        scores = scores + additive
        probs = att.dropout(torch.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(b, s, h)
        h1 = self.attention.LayerNorm(self.attention.dropout(att.o(ctx)) + x)
        f = self.act(self.intermediate.dense(h1))
        out = self.output
        return out.LayerNorm(out.dropout(out.dense(f)) + h1)


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        cls = {"distilbert": DistilLayer, "mpnet": MPNetLayer}.get(c["family"], BertLayer)
        self.layer = nn.ModuleList([cls(c) for _ in range(c["layers"])])
        if c["family"] == "mpnet":
            self.relative_attention_bias = nn.Embedding(32, c["heads"])

    def position_bias(self, seq):
        """MPNetEncoder.compute_position_bias: [1 x heads x seq x seq]."""
        import family_reference
        context = torch.arange(seq, dtype=torch.long)[:, None]
        memory = torch.arange(seq, dtype=torch.long)[None, :]
        bucket = family_reference.relative_position_bucket(memory - context, num_buckets=32)
        return self.relative_attention_bias(bucket).permute([2, 0, 1])[None]


class Pooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = Linear(c["hidden"], c["hidden"])


class Base(nn.Module):
    """BertModel / DistilBertModel / RobertaModel: embeddings, encoder (or
    transformer), pooler when asked."""

    def __init__(self, c, pooler):
        super().__init__()
        self.c = c
        self.embeddings = Embeddings(c)
        width = c.get("embedding_size") or c["hidden"]
        if width != c["hidden"]:
            self.embeddings_project = Linear(width, c["hidden"])
        if c["family"] == "distilbert":
            self.transformer = Encoder(c)
        else:
            self.encoder = Encoder(c)
        if pooler:
            self.pooler = Pooler(c)

    def forward(self, ids, types, mask):
        x = self.embeddings(ids, types)
        if hasattr(self, "embeddings_project"):
            x = self.embeddings_project(x)
        if self.c["family"] == "distilbert":
            for layer in self.transformer.layer:
                x = layer(x, mask)
            return x
        # get_extended_attention_mask: (1 - mask) * finfo(dtype).min
        additive = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        if self.c["family"] == "mpnet":
            bias = self.encoder.position_bias(x.shape[1])
            for layer in self.encoder.layer:
                x = layer(x, additive, bias)
            return x
        for layer in self.encoder.layer:
            x = layer(x, additive)
        return x


class RobertaHead(nn.Module):
    def __init__(self, c, labels):
        super().__init__()
        self.dense = Linear(c["hidden"], c["hidden"])
        self.dropout = Dropout(c["p_head"])
        self.out_proj = Linear(c["hidden"], labels)

    def forward(self, x):
        x = self.dropout(x[:, 0, :])
        x = torch.tanh(self.dense(x))
        return self.out_proj(self.dropout(x))


class ElectraHead(RobertaHead):
    def forward(self, x):
        x = self.dropout(x[:, 0, :])
        x = nn.functional.gelu(self.dense(x))
        return self.out_proj(self.dropout(x))


PREFIX = {"bert": "bert", "distilbert": "distilbert", "roberta": "roberta", "mpnet": "mpnet", "electra": "electra"}


class Model(nn.Module):
    """One of transformers' *For* classes (or a sentence-transformers
    encoder for "embed"), with its loss."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        fam, task = c["family"], c["task"]
        labels = c.get("num_labels", 0)
        embed = task == "embed"
        pooler = fam == "bert" and (task in ("classify", "multi_label", "regression") or embed)
        base = Base(c, pooler)
        if embed:
            # sentence-transformers saves the bare model: its modules at the top.
            self.base_name = None
            for name, module in base.named_children():
                self.add_module(name, module)
            object.__setattr__(self, "_base", base)
        else:
            self.base_name = PREFIX[fam]
            self.add_module(self.base_name, base)
        self.dropout = Dropout(c["p_head"])
        if task in ("classify", "multi_label", "regression"):
            if fam in ("roberta", "mpnet"):
                self.classifier = RobertaHead(c, labels)
            elif fam == "electra":
                self.classifier = ElectraHead(c, labels)
            else:
                if fam == "distilbert":
                    self.pre_classifier = Linear(c["hidden"], c["hidden"])
                self.classifier = Linear(c["hidden"], labels)
        elif task == "tokens":
            self.classifier = Linear(c["hidden"], labels)
        elif task == "qa":
            self.qa_outputs = Linear(c["hidden"], 2)

    def encoder_module(self):
        return self._base if self.base_name is None else getattr(self, self.base_name)

    def head_parameter_names(self):
        """What freeze_encoder trains: everything outside the encoder, and BERT's pooler."""
        prefix = (self.base_name or "") + "."
        return [n for n, _ in self.named_parameters()
                if not n.startswith(prefix) or n.startswith(prefix + "pooler.")]

    def forward(self, batch):
        c, fam, task = self.c, self.c["family"], self.c["task"]
        ids, types, mask = batch["ids"], batch["types"], batch["mask"]
        base = self.encoder_module()
        h = base(ids, types, mask)
        if task in ("classify", "multi_label", "regression"):
            if fam == "bert":
                pooled = torch.tanh(base.pooler.dense(h[:, 0]))
                logits = self.classifier(self.dropout(pooled))
            elif fam == "distilbert":
                x = nn.functional.relu(self.pre_classifier(h[:, 0]))
                logits = self.classifier(self.dropout(x))
            else:
                logits = self.classifier(h)
            if task == "classify":
                return nn.functional.cross_entropy(logits.view(-1, c["num_labels"]), batch["labels"].view(-1))
            if task == "multi_label":
                return nn.functional.binary_cross_entropy_with_logits(logits, batch["targets"])
            return nn.functional.mse_loss(logits.squeeze(), batch["targets"].squeeze())
        if task == "tokens":
            logits = self.classifier(self.dropout(h))
            return nn.functional.cross_entropy(logits.view(-1, c["num_labels"]), batch["labels"].view(-1))
        if task == "qa":
            x = self.dropout(h) if fam == "distilbert" else h
            start, end = self.qa_outputs(x).split(1, dim=-1)
            start, end = start.squeeze(-1).contiguous(), end.squeeze(-1).contiguous()
            ignored = start.size(1)
            sp = batch["labels"][:, 0].clamp(0, ignored)
            ep = batch["labels"][:, 1].clamp(0, ignored)
            loss_start = nn.functional.cross_entropy(start, sp, ignore_index=ignored)
            loss_end = nn.functional.cross_entropy(end, ep, ignore_index=ignored)
            return (loss_start + loss_end) / 2
        # embed: sentence-transformers Pooling + MultipleNegativesRankingLoss
        m = mask[..., None].to(h.dtype)
        if c["pooling"] == "mean":
            pooled = (h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
        elif c["pooling"] == "cls":
            pooled = h[:, 0]
        else:
            pooled = torch.where(m > 0, h, torch.full_like(h, -1e9)).max(1)[0]
        rows = pooled.shape[0] // batch["columns"]
        a = nn.functional.normalize(pooled[:rows], p=2, dim=1)
        b = nn.functional.normalize(pooled[rows:], p=2, dim=1)
        scores = a @ b.T * c["scale"]
        return nn.functional.cross_entropy(scores, torch.arange(rows))


def decay_parameter_names(model):
    """Trainer.get_decay_parameter_names: not in a LayerNorm, and "bias"
    nowhere in the full name (so MPNet's relative_attention_bias.weight is
    not decayed either)."""
    out = []
    for mod_name, module in model.named_modules():
        for p_name, _ in module.named_parameters(recurse=False):
            full = f"{mod_name}.{p_name}" if mod_name else p_name
            if not isinstance(module, nn.LayerNorm) and "bias" not in full:
                out.append(full)
    return out


def linear_schedule(warmup, total):
    """get_linear_schedule_with_warmup's lr_lambda."""
    def lr_lambda(step):
        if step < warmup:
            return float(step) / float(max(1, warmup))
        return max(0.0, float(total - step) / float(max(1, total - warmup)))
    return lr_lambda


def to_batch(b, dtype):
    ids = torch.tensor(b["ids"], dtype=torch.long)
    n, L = ids.shape
    mask = torch.zeros(n, L, dtype=torch.long)
    for i, length in enumerate(b["lengths"]):
        mask[i, :length] = 1
    types = torch.tensor(b["type_ids"], dtype=torch.long) if b.get("type_ids") else torch.zeros_like(ids)
    out = {"ids": ids, "types": types, "mask": mask, "columns": b.get("columns", 0)}
    if "labels" in b:
        out["labels"] = torch.tensor(b["labels"], dtype=torch.long)
    if "targets" in b:
        out["targets"] = torch.tensor(b["targets"], dtype=dtype)
    return out


def train(model, steps, s, dtype=torch.float64):
    """Trainer's loop: per step, each micro-batch's loss / accumulation
    backward, clip_grad_norm_, AdamW.step, scheduler.step, zero_grad.
    Returns per step (losses of its micro-batches, rate, grad norm)."""
    model.train()
    if s["freeze_encoder"]:
        keep = set(model.head_parameter_names())
        for n, p in model.named_parameters():
            p.requires_grad_(n in keep)
    decay = set(decay_parameter_names(model))
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in params if n in decay], "weight_decay": s["weight_decay"]},
              {"params": [p for n, p in params if n not in decay], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=s["learning_rate"], betas=(0.9, 0.999), eps=1e-8, foreach=False)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear_schedule(s["warmup_steps"], s["total_steps"]))
    log = []
    for micro in steps:
        losses = []
        for b in micro:
            loss = model(to_batch(b, dtype))
            (loss / len(micro)).backward()
            losses.append(loss.item())
        rate = opt.param_groups[0]["lr"]
        norm = torch.nn.utils.clip_grad_norm_([p for _, p in params], s["max_grad_norm"])
        opt.step()
        sched.step()
        opt.zero_grad()
        log.append({"losses": losses, "rate": rate, "grad_norm": float(norm)})
    return log


# ---- checkpoints (float32 safetensors, written by hand) ----------------------

def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name], dtype="<f4")
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + arr.nbytes]}
        blobs.append(arr.tobytes())
        off += arr.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], dtype="<f4").reshape(info["shape"])
    return out


def load_state(model, tensors, dtype):
    state = {k: torch.tensor(np.array(v, dtype=np.float64), dtype=dtype) for k, v in tensors.items()}
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    if missing:
        raise ValueError(f"checkpoint lacks {missing[:4]}")
    model.load_state_dict({k: state[k] for k in own})


def state_f32(model):
    return {k: v.detach().to(torch.float64).numpy().astype(np.float32) for k, v in model.state_dict().items()}


def save_model(model, out_dir, config_json, extra=None):
    os.makedirs(out_dir, exist_ok=True)
    tensors = state_f32(model)
    if extra:
        tensors.update(extra)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config_json, f, indent=1)
