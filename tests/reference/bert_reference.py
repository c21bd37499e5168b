#!/usr/bin/python3
"""bert_reference.py - an independent reference for BERT checkpoints in the
Hugging Face layout: reads config.json, model.safetensors (parsed by hand:
float32, float16, bfloat16; BertModel names with or without "bert.", old
LayerNorm gamma/beta) and the sentence-transformers files, and computes what
transformers' BertModel, BertForMaskedLM, BertForPreTraining and
BertForSequenceClassification, BertForTokenClassification (classifier on
every token's hidden state), BertForQuestionAnswering (qa_outputs: start and
end logits per token), DistilBertModel and DistilBertForSequenceClassification
(modeling_distilbert.py: no segment embeddings, q scaled before the product,
pre_classifier -> ReLU -> classifier on the first token),
DistilBertForTokenClassification, DistilBertForQuestionAnswering and
DistilBertForMaskedLM (the same heads on DistilBERT's hidden states), and sentence-transformers'
Pooling/Normalize compute, on the CPU.

Needs only torch and numpy (Debian's python3-torch, python3-numpy). The
forward pass mirrors transformers' modeling_bert.py operation by operation;
by default it runs in float64 on the exact stored weights, which makes it a
tighter reference than float32 (compute=torch.float32 gives the float32 run).

As a program, it prints one embedding, the masked-LM top-k, or the NSP
probability for a list of token ids:

    bert_reference.py MODEL_DIR --ids 101,7592,102 [--pooling mean|cls|max|pooler] [--normalize]
    bert_reference.py MODEL_DIR --ids 101,103,102 --fill-mask [--top-k 5]
    bert_reference.py MODEL_DIR --ids 101,7592,102,2088,102 --types 0,0,0,1,1 --nsp
    bert_reference.py MODEL_DIR --ids 101,7592,102 --classify    (the classifier's logits)
    bert_reference.py MODEL_DIR --ids 101,7592,102 --token-logits   (per token, token classification)
    bert_reference.py MODEL_DIR --ids 101,2054,102,7592,102 --types 0,0,0,1,1 --qa-logits  (start, end)
    bert_reference.py MODEL_DIR --crosscheck     (compare with torch.nn.TransformerEncoderLayer)
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4}


def read_safetensors(path):
    """Returns {name: float64 numpy array} for the float tensors of a
    safetensors file, checking the layout as strictly as the format defines it."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    (hlen,) = struct.unpack("<Q", data[:8])
    if 8 + hlen > len(data):
        raise ValueError(f"{path}: header length {hlen} beyond the file")
    header = json.loads(data[8:8 + hlen].decode("utf-8"))
    body = memoryview(data)[8 + hlen:]
    out, spans = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt, shape, (start, end) = info["dtype"], info["shape"], info["data_offsets"]
        count = math.prod(shape)
        if dt not in DTYPES or end - start != count * DTYPES[dt] or end > len(body):
            raise ValueError(f"{path}: tensor {name} has a bad dtype, shape or byte range")
        spans.append((start, end))
        raw = body[start:end]
        if dt == "F32":
            arr = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif dt == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif dt == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = bits.view(np.float32).astype(np.float64)
        elif dt == "F64":
            arr = np.frombuffer(raw, dtype="<f8").copy()
        else:
            continue    # integer buffers such as embeddings.position_ids
        out[name] = arr.reshape(shape)
    spans.sort()
    pos = 0
    for start, end in spans:
        if start != pos:
            raise ValueError(f"{path}: tensor data is not contiguous at byte {start}")
        pos = end
    if pos != len(body):
        raise ValueError(f"{path}: {len(body) - pos} bytes after the last tensor")
    return out, header


def read_json(path, default=None):
    if not os.path.exists(path):
        return default
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class Model:
    """A checkpoint's weights (float64 torch tensors) under canonical names:
    BertModel names without prefix, "weight"/"bias" for every LayerNorm."""

    def __init__(self, model_dir):
        self.dir = model_dir
        self.config = read_json(os.path.join(model_dir, "config.json"))
        if self.config is None or self.config.get("model_type") not in ("bert", "distilbert"):
            raise ValueError(f"{model_dir}: no BERT or DistilBERT config.json")
        self.distilbert = self.config["model_type"] == "distilbert"
        raw, self.header = read_safetensors(os.path.join(model_dir, "model.safetensors"))
        self.dtype = {v["dtype"] for k, v in self.header.items()
                      if k != "__metadata__" and v["dtype"] != "I64"}.pop()
        self.w = {}
        for name, arr in raw.items():
            # transformers renames these when it loads old checkpoints.
            name = name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
            for prefix in ("bert.", "distilbert."):
                if name.startswith(prefix):
                    name = name[len(prefix):]
            self.w[name] = torch.from_numpy(np.ascontiguousarray(arr))
        c = self.config
        if self.distilbert:
            # configuration_distilbert.py's keys; its LayerNorms use eps 1e-12, fixed in the code.
            self.hidden, self.heads, self.layers = c["dim"], c["n_heads"], c["n_layers"]
            self.intermediate = c["hidden_dim"]
            self.eps = 1e-12
            self.act = c.get("activation", "gelu")
            if c.get("sinusoidal_pos_embds"):
                raise ValueError("sinusoidal position embeddings are not supported")
        else:
            self.hidden = c["hidden_size"]
            self.heads = c["num_attention_heads"]
            self.layers = c["num_hidden_layers"]
            self.intermediate = c["intermediate_size"]
            self.eps = c.get("layer_norm_eps", 1e-12)
            self.act = c.get("hidden_act", "gelu")
        self.has_pooler = "pooler.dense.weight" in self.w
        self.has_classifier = "classifier.weight" in self.w
        self.has_qa = "qa_outputs.weight" in self.w
        # transformers decides the head by the class (config.json's
        # architectures); without it, a classifier that has neither a pooler
        # (BERT) nor a pre_classifier (DistilBERT) can only be per token.
        archs = c.get("architectures") or [""]
        if archs[0].endswith("ForTokenClassification"):
            self.token_classification = self.has_classifier
        elif archs[0].endswith("ForSequenceClassification"):
            self.token_classification = False
        else:
            self.token_classification = self.has_classifier and not (
                "pre_classifier.weight" in self.w if self.distilbert else "pooler.dense.weight" in self.w)
        # PretrainedConfig: id2label decides the number of labels; without it
        # num_labels (default 2) makes LABEL_<i>.
        if "id2label" in c:
            self.id2label = {int(k): v for k, v in c["id2label"].items()}
        else:
            self.id2label = {i: f"LABEL_{i}" for i in range(c.get("num_labels", 2))}
        self.num_labels = len(self.id2label)
        self.problem_type = c.get("problem_type")
        if self.has_classifier and self.w["classifier.weight"].shape != (self.num_labels, self.hidden):
            raise ValueError(f"classifier.weight is {tuple(self.w['classifier.weight'].shape)}, "
                             f"config.json says {self.num_labels} labels")
        self.has_mlm = "cls.predictions.bias" in self.w or "vocab_projector.bias" in self.w
        self.has_nsp = "cls.seq_relationship.weight" in self.w
        if self.has_mlm:
            tied = c.get("tie_word_embeddings", True)
            own = "vocab_projector.weight" if self.distilbert else "cls.predictions.decoder.weight"
            self.decoder_name = "embeddings.word_embeddings.weight" if tied or own not in self.w else own
        self.st = self._sentence_transformers()
        tok = read_json(os.path.join(model_dir, "tokenizer_config.json"), {})
        mml = tok.get("model_max_length") or 0
        mml = mml if 0 < mml < 1e29 else 0
        positions = c["max_position_embeddings"]
        self.max_length = min(mml, positions) if mml else positions
        if self.st["max_seq_length"]:
            self.max_length = self.st["max_seq_length"]

    def _sentence_transformers(self):
        st = {"present": False, "pooling": "mean", "normalize": False, "max_seq_length": 0}
        modules = read_json(os.path.join(self.dir, "modules.json"))
        pooling_path = os.path.join(self.dir, "1_Pooling", "config.json")
        if modules is not None:
            st["present"] = True
            for m in modules:
                if m.get("type", "").endswith(".Normalize"):
                    st["normalize"] = True
                if m.get("type", "").endswith(".Pooling"):
                    pooling_path = os.path.join(self.dir, m.get("path", "1_Pooling"), "config.json")
        pool = read_json(pooling_path)
        if pool is not None:
            st["present"] = True
            if pool.get("pooling_mode_cls_token"):
                st["pooling"] = "cls"
            elif pool.get("pooling_mode_max_tokens"):
                st["pooling"] = "max"
        sbc = read_json(os.path.join(self.dir, "sentence_bert_config.json"), {})
        st["max_seq_length"] = sbc.get("max_seq_length") or 0
        return st

    def t(self, name, compute):
        return self.w[name].to(compute)


def activation(name):
    if name == "gelu":
        return lambda x: torch.nn.functional.gelu(x)     # erf form, as transformers' GELUActivation
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        # transformers' NewGELUActivation, written out.
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    if name == "relu":
        return torch.relu
    raise ValueError(f"hidden_act {name} is not supported")


def linear(x, m, prefix, compute):
    return torch.nn.functional.linear(x, m.t(prefix + ".weight", compute), m.t(prefix + ".bias", compute))


def layer_norm(x, m, prefix, compute):
    return torch.nn.functional.layer_norm(x, (m.hidden,), m.t(prefix + ".weight", compute),
                                          m.t(prefix + ".bias", compute), m.eps)


def new_trace():
    """What encode(..., trace=) fills: transformers' output_hidden_states
    ("hidden_states": the embeddings' output, then each layer's, each [batch
    x seq x hidden]) and output_attentions ("attentions": each layer's
    softmax probabilities after the mask, [batch x heads x seq x seq])."""
    return {"hidden_states": [], "attentions": []}


def encode(m, ids, type_ids=None, attention_mask=None, compute=torch.float64, trace=None):
    """BertModel.forward: ids [batch x seq] (lists or tensor, padded with any id
    where attention_mask is 0).  Returns (last_hidden_state, pooler_output or None).
    A DistilBERT checkpoint runs DistilBertModel.forward (type_ids ignored).
    With trace (new_trace()), also the hidden states and attentions."""
    if m.distilbert:
        return distil_encode(m, ids, attention_mask, compute, trace), None
    ids = torch.as_tensor(ids, dtype=torch.long)
    if ids.dim() == 1:
        ids = ids[None]
    batch, seq = ids.shape
    type_ids = torch.zeros_like(ids) if type_ids is None else torch.as_tensor(type_ids, dtype=torch.long).reshape(batch, seq)
    mask = torch.ones_like(ids) if attention_mask is None else torch.as_tensor(attention_mask).reshape(batch, seq)
    positions = torch.arange(seq)[None].expand(batch, seq)

    x = (m.t("embeddings.word_embeddings.weight", compute)[ids]
         + m.t("embeddings.token_type_embeddings.weight", compute)[type_ids]
         + m.t("embeddings.position_embeddings.weight", compute)[positions])
    x = layer_norm(x, m, "embeddings.LayerNorm", compute)
    if trace is not None:
        trace["hidden_states"].append(x)

    # transformers' get_extended_attention_mask: 0 where attended, the dtype's
    # minimum where masked, added to the scores before the softmax.
    additive = (1.0 - mask[:, None, None, :].to(compute)) * torch.finfo(compute).min
    heads, hd = m.heads, m.hidden // m.heads
    act = activation(m.act)
    for i in range(m.layers):
        p = f"encoder.layer.{i}."

        def split(t):
            return t.view(batch, seq, heads, hd).permute(0, 2, 1, 3)
        q = split(linear(x, m, p + "attention.self.query", compute))
        k = split(linear(x, m, p + "attention.self.key", compute))
        v = split(linear(x, m, p + "attention.self.value", compute))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + additive
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(batch, seq, m.hidden)
        x = layer_norm(linear(ctx, m, p + "attention.output.dense", compute) + x, m,
                       p + "attention.output.LayerNorm", compute)
        inter = act(linear(x, m, p + "intermediate.dense", compute))
        x = layer_norm(linear(inter, m, p + "output.dense", compute) + x, m, p + "output.LayerNorm", compute)
        observe(trace, probs, x)

    pooled = None
    if m.has_pooler:
        pooled = torch.tanh(linear(x[:, 0], m, "pooler.dense", compute))
    return x, pooled


def observe(trace, probs, x):
    """One layer's attention probabilities and output hidden state into trace (or None)."""
    if trace is not None:
        trace["attentions"].append(probs)
        trace["hidden_states"].append(x)


def distil_encode(m, ids, attention_mask=None, compute=torch.float64, trace=None):
    """DistilBertModel.forward (modeling_distilbert.py): word + position
    embeddings, LayerNorm; per block: attention with q scaled by
    1/sqrt(head size) before the product and masked scores set to the dtype's
    minimum, sa_layer_norm(attention + x), output_layer_norm(lin2(act(lin1)) + that)."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    if ids.dim() == 1:
        ids = ids[None]
    batch, seq = ids.shape
    mask = torch.ones_like(ids) if attention_mask is None else torch.as_tensor(attention_mask).reshape(batch, seq)
    x = (m.t("embeddings.word_embeddings.weight", compute)[ids]
         + m.t("embeddings.position_embeddings.weight", compute)[torch.arange(seq)][None])
    x = layer_norm(x, m, "embeddings.LayerNorm", compute)
    if trace is not None:
        trace["hidden_states"].append(x)
    heads, hd = m.heads, m.hidden // m.heads
    act = activation(m.act)
    masked = (mask == 0).view(batch, 1, 1, seq)
    for i in range(m.layers):
        p = f"transformer.layer.{i}."

        def split(t):
            return t.view(batch, -1, heads, hd).transpose(1, 2)
        q = split(linear(x, m, p + "attention.q_lin", compute)) / math.sqrt(hd)
        k = split(linear(x, m, p + "attention.k_lin", compute))
        v = split(linear(x, m, p + "attention.v_lin", compute))
        scores = torch.matmul(q, k.transpose(2, 3))
        scores = scores.masked_fill(masked.expand_as(scores), torch.finfo(compute).min)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, m.hidden)
        sa = layer_norm(linear(ctx, m, p + "attention.out_lin", compute) + x, m, p + "sa_layer_norm", compute)
        ffn = linear(act(linear(sa, m, p + "ffn.lin1", compute)), m, p + "ffn.lin2", compute)
        x = layer_norm(ffn + sa, m, p + "output_layer_norm", compute)
        observe(trace, probs, x)
    return x


def classifier_logits(m, ids, type_ids=None, attention_mask=None, compute=torch.float64):
    """The logits of BertForSequenceClassification (classifier on the pooler's
    output) or DistilBertForSequenceClassification (pre_classifier, ReLU,
    classifier on the first token's hidden state): [batch x num_labels]."""
    if not m.has_classifier:
        raise ValueError("this checkpoint has no sequence-classification head")
    hidden, pooled = encode(m, ids, type_ids, attention_mask, compute)
    if m.distilbert:
        pooled = torch.relu(linear(hidden[:, 0], m, "pre_classifier", compute))
    return linear(pooled, m, "classifier", compute)


def token_logits(m, ids, type_ids=None, attention_mask=None, compute=torch.float64):
    """BertForTokenClassification / DistilBertForTokenClassification: the
    classifier (after a dropout that is the identity in eval mode) on every
    token's last hidden state: [batch x seq x num_labels]."""
    if not m.has_classifier:
        raise ValueError("this checkpoint has no token-classification head")
    hidden, _ = encode(m, ids, type_ids, attention_mask, compute)
    return linear(hidden, m, "classifier", compute)


def qa_logits(m, ids, type_ids=None, attention_mask=None, compute=torch.float64):
    """BertForQuestionAnswering / DistilBertForQuestionAnswering: qa_outputs
    on every token's last hidden state, split into (start_logits, end_logits),
    each [batch x seq]."""
    if not m.has_qa:
        raise ValueError("this checkpoint has no question-answering head")
    hidden, _ = encode(m, ids, type_ids, attention_mask, compute)
    logits = linear(hidden, m, "qa_outputs", compute)
    return logits[..., 0], logits[..., 1]


def pool(m, hidden, pooled, mode, attention_mask=None):
    """sentence-transformers' Pooling (mean over every real token, [CLS] and
    [SEP] included; cls; max) or BERT's pooler output.  hidden [batch x seq x H]."""
    batch, seq, _ = hidden.shape
    mask = torch.ones(batch, seq) if attention_mask is None else torch.as_tensor(attention_mask).reshape(batch, seq)
    mask = mask[:, :, None].to(hidden.dtype).expand(hidden.shape)
    if mode == "cls":
        return hidden[:, 0]
    if mode == "mean":
        return (hidden * mask).sum(1) / torch.clamp(mask.sum(1), min=1e-9)
    if mode == "max":
        h = hidden.clone()
        h[mask == 0] = -1e9
        return torch.max(h, 1)[0]
    if mode == "pooler":
        if pooled is None:
            raise ValueError("this checkpoint has no pooler")
        return pooled
    raise ValueError(f"unknown pooling {mode}")


def normalize(v):
    """sentence-transformers' Normalize: torch.nn.functional.normalize(p=2, dim=1)."""
    return torch.nn.functional.normalize(v, p=2, dim=1)


def mlm_logits(m, hidden, compute=torch.float64):
    """BertOnlyMLMHead / BertPreTrainingHeads.predictions on hidden [.. x H];
    DistilBertForMaskedLM's vocab_transform, activation (config.activation),
    vocab_layer_norm and vocab_projector, the same steps under other names."""
    if m.distilbert:
        dense, norm, bias = "vocab_transform", "vocab_layer_norm", "vocab_projector.bias"
    else:
        dense, norm, bias = "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.bias"
    h = linear(hidden, m, dense, compute)
    h = activation(m.act)(h)
    h = layer_norm(h, m, norm, compute)
    return torch.nn.functional.linear(h, m.t(m.decoder_name, compute), m.t(bias, compute))


def nsp_probability(m, pooled, compute=torch.float64):
    """Probability of label 0, "B follows A", from the seq_relationship head."""
    logits = linear(pooled, m, "cls.seq_relationship", compute)
    return torch.softmax(logits, dim=-1)[..., 0]


def fill_mask_topk(m, ids, mask_id, top_k=5, compute=torch.float64):
    """The fill-mask pipeline's numbers: per [MASK] position, left to right,
    the top_k (score, id) of the softmax over the whole vocabulary, plus the
    gap between the k-th and the (k+1)-th logit (how clearly the order is decided)."""
    hidden, _ = encode(m, [ids], compute=compute)
    rows = [i for i, t in enumerate(ids) if t == mask_id]
    logits = mlm_logits(m, hidden[0, rows], compute)
    probs = torch.softmax(logits, dim=-1)
    out = []
    for r in range(len(rows)):
        values, order = torch.topk(probs[r], top_k + 1)
        sorted_logits = logits[r][order]
        gaps = (sorted_logits[:-1] - sorted_logits[1:]).min().item()
        out.append({"scores": values[:top_k].tolist(), "ids": order[:top_k].tolist(), "min_logit_gap": gaps})
    return out


def crosscheck(m, ids_list):
    """Runs the encoder a second way, through PyTorch's own
    nn.TransformerEncoderLayer (post-LayerNorm, the same block BERT uses),
    batched with padding, and returns the largest difference from encode()."""
    H = m.hidden
    act = {"gelu": "gelu", "relu": "relu"}.get(m.act, activation(m.act))
    layers = []
    if m.distilbert:
        names = {"query": "attention.q_lin", "key": "attention.k_lin", "value": "attention.v_lin",
                 "out": "attention.out_lin", "ln1": "sa_layer_norm", "lin1": "ffn.lin1", "lin2": "ffn.lin2",
                 "ln2": "output_layer_norm", "layer": "transformer.layer."}
    else:
        names = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
                 "out": "attention.output.dense", "ln1": "attention.output.LayerNorm",
                 "lin1": "intermediate.dense", "lin2": "output.dense", "ln2": "output.LayerNorm",
                 "layer": "encoder.layer."}
    for i in range(m.layers):
        p = f"{names['layer']}{i}."

        def w(key, part):
            return m.w[p + names[key] + "." + part]
        layer = torch.nn.TransformerEncoderLayer(H, m.heads, m.intermediate, dropout=0.0,
                                                 activation=act, layer_norm_eps=m.eps, batch_first=True,
                                                 norm_first=False).double().eval()
        sd = {
            "self_attn.in_proj_weight": torch.cat([w(n, "weight") for n in ("query", "key", "value")]),
            "self_attn.in_proj_bias": torch.cat([w(n, "bias") for n in ("query", "key", "value")]),
            "self_attn.out_proj.weight": w("out", "weight"), "self_attn.out_proj.bias": w("out", "bias"),
            "linear1.weight": w("lin1", "weight"), "linear1.bias": w("lin1", "bias"),
            "linear2.weight": w("lin2", "weight"), "linear2.bias": w("lin2", "bias"),
            "norm1.weight": w("ln1", "weight"), "norm1.bias": w("ln1", "bias"),
            "norm2.weight": w("ln2", "weight"), "norm2.bias": w("ln2", "bias"),
        }
        layer.load_state_dict(sd)
        layers.append(layer)
    seq = max(len(ids) for ids in ids_list)
    batch = torch.zeros(len(ids_list), seq, dtype=torch.long)
    pad = torch.ones(len(ids_list), seq, dtype=torch.bool)
    for b, ids in enumerate(ids_list):
        batch[b, :len(ids)] = torch.tensor(ids)
        pad[b, :len(ids)] = False
    emb = torch.nn.Embedding.from_pretrained
    x = (emb(m.w["embeddings.word_embeddings.weight"])(batch)
         + emb(m.w["embeddings.position_embeddings.weight"])(torch.arange(seq))[None])
    if not m.distilbert:
        x = x + emb(m.w["embeddings.token_type_embeddings.weight"])(torch.zeros_like(batch))
    ln = torch.nn.LayerNorm(H, eps=m.eps).double()
    ln.load_state_dict({"weight": m.w["embeddings.LayerNorm.weight"], "bias": m.w["embeddings.LayerNorm.bias"]})
    with torch.no_grad():
        x = ln(x)
        for layer in layers:
            x = layer(x, src_key_padding_mask=pad)
    worst = 0.0
    for b, ids in enumerate(ids_list):
        mine, _ = encode(m, [ids])
        worst = max(worst, (mine[0] - x[b, :len(ids)]).abs().max().item())
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--ids", help="comma-separated token ids, [CLS] ... [SEP] included")
    ap.add_argument("--types", help="comma-separated segment ids (default all 0)")
    ap.add_argument("--pooling", choices=["mean", "cls", "max", "pooler"])
    ap.add_argument("--normalize", action="store_true")
    ap.add_argument("--fill-mask", action="store_true")
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--nsp", action="store_true")
    ap.add_argument("--classify", action="store_true")
    ap.add_argument("--token-logits", action="store_true")
    ap.add_argument("--qa-logits", action="store_true")
    ap.add_argument("--float32", action="store_true", help="compute in float32 instead of float64")
    ap.add_argument("--crosscheck", action="store_true")
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    m = Model(a.model_dir)
    compute = torch.float32 if a.float32 else torch.float64
    if a.crosscheck:
        rng = np.random.default_rng(0)
        lists = [[101] + rng.integers(1000, m.config["vocab_size"], n).tolist() + [102] for n in (0, 1, 7, 30, 100)]
        print(json.dumps({"max_abs_diff": crosscheck(m, lists)}))
        return
    if not a.ids:
        ap.error("--ids is needed")
    ids = [int(x) for x in a.ids.split(",")]
    types = [int(x) for x in a.types.split(",")] if a.types else None
    if a.fill_mask:
        print(json.dumps(fill_mask_topk(m, ids, 103, a.top_k, compute)))
    elif a.classify:
        print(json.dumps(classifier_logits(m, [ids], types and [types], compute=compute)[0].tolist()))
    elif a.token_logits:
        print(json.dumps(token_logits(m, [ids], types and [types], compute=compute)[0].tolist()))
    elif a.qa_logits:
        start, end = qa_logits(m, [ids], types and [types], compute=compute)
        print(json.dumps({"start": start[0].tolist(), "end": end[0].tolist()}))
    elif a.nsp:
        _, pooled = encode(m, [ids], types and [types], compute=compute)
        print(json.dumps(nsp_probability(m, pooled, compute).item()))
    else:
        hidden, pooled = encode(m, [ids], types and [types], compute=compute)
        v = pool(m, hidden, pooled, a.pooling or m.st["pooling"])
        if a.normalize or (a.pooling is None and m.st["normalize"]):
            v = normalize(v)
        print(json.dumps(v[0].tolist()))


if __name__ == "__main__":
    sys.exit(main())
