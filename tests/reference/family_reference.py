#!/usr/bin/python3
"""family_reference.py - an independent reference for RoBERTa, XLM-RoBERTa and
MPNet checkpoints in the Hugging Face layout, transcribed operation by
operation from transformers (huggingface/transformers):

  * src/transformers/models/roberta/modeling_roberta.py at commit
    87b236ba2be8b3e48a7d0c8ca6513302736d2886: RobertaEmbeddings (word +
    token type + position embeddings, LayerNorm), position ids from
    create_position_ids_from_input_ids (non-pad tokens count from
    padding_idx + 1 = pad_token_id + 1, pad tokens keep padding_idx),
    BERT's post-LayerNorm layers under BERT's names, RobertaLMHead (dense,
    gelu() whatever hidden_act says, layer_norm, decoder + bias, tied to
    the word embeddings), RobertaClassificationHead (<s> token, dense, tanh,
    out_proj), RobertaForTokenClassification (classifier per token),
    RobertaForQuestionAnswering (qa_outputs split into start and end);
  * src/transformers/models/xlm_roberta/modeling_xlm_roberta.py at commit
    c919542dd33c97943005f9a6e298e23d9ba6f009: the same classes, "Copied
    from transformers.models.roberta.modeling_roberta", base_model_prefix
    "roberta";
  * src/transformers/models/mpnet/modeling_mpnet.py at commit
    ade3d756fc1af824c0f1ced44fa5f98335b6394b: MPNetEmbeddings (padding_idx
    fixed at 1, word + position embeddings, no token types), MPNetEncoder
    .compute_position_bias (called with its default num_buckets=32 whatever
    relative_attention_num_buckets says) and relative_position_bucket
    (max_distance 128, the logarithm taken in float32 as there), added to
    every layer's scaled scores; MPNetSelfAttention's q, k, v, o and
    MPNetAttention's LayerNorm(o + x); MPNetLMHead and
    MPNetClassificationHead as RoBERTa's.

Runs in float64 by default on the exact stored weights (compute=torch.float32
for the float32 run).  Reuses bert_reference.py's safetensors reader,
activations, pooling and normalization.
"""
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_reference as bref  # noqa: E402

FAMILIES = ("roberta", "xlm-roberta", "mpnet")


class Model(bref.Model):
    """A RoBERTa, XLM-RoBERTa or MPNet checkpoint, tensors under their names
    without the "roberta." / "mpnet." prefix.  Offers the attributes the
    golden scripts read from bert_reference.Model (max_length, id2label,
    num_labels, st, problem_type, dtype, config)."""

    def __init__(self, model_dir):  # noqa: super().__init__ is BERT-only
        self.dir = model_dir
        c = self.config = bref.read_json(os.path.join(model_dir, "config.json"))
        if c is None or c.get("model_type") not in FAMILIES:
            raise ValueError(f"{model_dir}: not a RoBERTa, XLM-RoBERTa or MPNet config.json")
        self.family = c["model_type"]
        self.mpnet = self.family == "mpnet"
        self.distilbert = False
        raw, self.header = bref.read_safetensors(os.path.join(model_dir, "model.safetensors"))
        self.dtype = {v["dtype"] for k, v in self.header.items() if k != "__metadata__" and v["dtype"] != "I64"}.pop()
        prefix = "mpnet." if self.mpnet else "roberta."
        self.w = {}
        for name, arr in raw.items():
            if name.startswith(prefix):
                name = name[len(prefix):]
            self.w[name] = torch.from_numpy(np.ascontiguousarray(arr))
        self.hidden, self.heads = c["hidden_size"], c["num_attention_heads"]
        self.layers, self.intermediate = c["num_hidden_layers"], c["intermediate_size"]
        self.eps = c.get("layer_norm_eps", 1e-12)
        self.act = c.get("hidden_act", "gelu")
        self.padding_idx = 1 if self.mpnet else c.get("pad_token_id", 1)
        self.has_pooler = "pooler.dense.weight" in self.w
        self.has_classifier = "classifier.out_proj.weight" in self.w
        self.token_classification = "classifier.weight" in self.w
        self.has_qa = "qa_outputs.weight" in self.w
        self.has_mlm = "lm_head.bias" in self.w
        self.has_nsp = False
        if self.has_mlm:
            self.decoder_name = ("lm_head.decoder.weight" if "lm_head.decoder.weight" in self.w
                                 else "embeddings.word_embeddings.weight")
        if "id2label" in c:
            self.id2label = {int(k): v for k, v in c["id2label"].items()}
        else:
            self.id2label = {i: f"LABEL_{i}" for i in range(c.get("num_labels", 2))}
        self.num_labels = len(self.id2label)
        self.problem_type = c.get("problem_type")
        self.st = self._sentence_transformers()
        tok = bref.read_json(os.path.join(model_dir, "tokenizer_config.json"), {})
        mml = tok.get("model_max_length") or 0
        mml = mml if 0 < mml < 1e29 else 0
        positions = c["max_position_embeddings"] - (self.padding_idx + 1)
        self.max_length = min(mml, positions) if mml else positions
        if self.st["max_seq_length"]:
            self.max_length = self.st["max_seq_length"]
        st_cfg = bref.read_json(os.path.join(model_dir, "config_sentence_transformers.json"), {})
        self.prompts = st_cfg.get("prompts") or {}
        self.default_prompt_name = st_cfg.get("default_prompt_name")


def position_ids(ids, padding_idx):
    """create_position_ids_from_input_ids (modeling_roberta.py; MPNet's is the same)."""
    mask = ids.ne(padding_idx).int()
    incremental = torch.cumsum(mask, dim=1).type_as(mask) * mask
    return incremental.long() + padding_idx


def relative_position_bucket(relative_position, num_buckets=32, max_distance=128):
    """MPNetEncoder.relative_position_bucket, as written there."""
    ret = 0
    n = -relative_position
    num_buckets //= 2
    ret += (n < 0).to(torch.long) * num_buckets
    n = torch.abs(n)
    max_exact = num_buckets // 2
    is_small = n < max_exact
    val_if_large = max_exact + (
        torch.log(n.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    val_if_large = torch.min(val_if_large, torch.full_like(val_if_large, num_buckets - 1))
    ret += torch.where(is_small, n, val_if_large)
    return ret


def position_bias(m, seq, compute):
    """MPNetEncoder.compute_position_bias(x) with position_ids None: [heads x seq x seq]."""
    context = torch.arange(seq, dtype=torch.long)[:, None]
    memory = torch.arange(seq, dtype=torch.long)[None, :]
    bucket = relative_position_bucket(memory - context, num_buckets=32)
    values = m.t("encoder.relative_attention_bias.weight", compute)[bucket]    # [seq x seq x heads]
    return values.permute([2, 0, 1])


def encode(m, ids, attention_mask=None, compute=torch.float64, trace=None):
    """RobertaModel.forward / MPNetModel.forward on ids [batch x seq] (token
    types all 0, as RoBERTa's tokenizers give them).  Returns
    (last_hidden_state, pooler_output or None); with trace
    (bert_reference.new_trace()), also the hidden states and attentions
    (MPNet's with the relative position bias in the scores)."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    if ids.dim() == 1:
        ids = ids[None]
    batch, seq = ids.shape
    mask = torch.ones_like(ids) if attention_mask is None else torch.as_tensor(attention_mask).reshape(batch, seq)
    pos = position_ids(ids, m.padding_idx)
    x = m.t("embeddings.word_embeddings.weight", compute)[ids]
    if not m.mpnet:
        x = x + m.t("embeddings.token_type_embeddings.weight", compute)[torch.zeros_like(ids)]
    x = x + m.t("embeddings.position_embeddings.weight", compute)[pos]
    x = bref.layer_norm(x, m, "embeddings.LayerNorm", compute)
    if trace is not None:
        trace["hidden_states"].append(x)
    additive = (1.0 - mask[:, None, None, :].to(compute)) * torch.finfo(compute).min
    bias = position_bias(m, seq, compute)[None] if m.mpnet else 0.0
    heads, hd = m.heads, m.hidden // m.heads
    act = bref.activation(m.act)
    names = (("attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o", "attention.LayerNorm")
             if m.mpnet else
             ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
              "attention.output.LayerNorm"))
    for i in range(m.layers):
        p = f"encoder.layer.{i}."

        def split(t):
            return t.view(batch, seq, heads, hd).permute(0, 2, 1, 3)
        q = split(bref.linear(x, m, p + names[0], compute))
        k = split(bref.linear(x, m, p + names[1], compute))
        v = split(bref.linear(x, m, p + names[2], compute))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(hd) + bias + additive
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(batch, seq, m.hidden)
        x = bref.layer_norm(bref.linear(ctx, m, p + names[3], compute) + x, m, p + names[4], compute)
        inter = act(bref.linear(x, m, p + "intermediate.dense", compute))
        x = bref.layer_norm(bref.linear(inter, m, p + "output.dense", compute) + x, m, p + "output.LayerNorm", compute)
        bref.observe(trace, probs, x)
    pooled = torch.tanh(bref.linear(x[:, 0], m, "pooler.dense", compute)) if m.has_pooler else None
    return x, pooled


def lm_logits(m, hidden, compute=torch.float64):
    """RobertaLMHead / MPNetLMHead: dense, gelu (erf), layer_norm, decoder + bias."""
    h = torch.nn.functional.gelu(bref.linear(hidden, m, "lm_head.dense", compute))
    h = bref.layer_norm(h, m, "lm_head.layer_norm", compute)
    return torch.nn.functional.linear(h, m.t(m.decoder_name, compute), m.t("lm_head.bias", compute))


def classifier_logits(m, ids, compute=torch.float64):
    """RobertaClassificationHead / MPNetClassificationHead on <s>: [batch x labels]."""
    hidden, _ = encode(m, ids, compute=compute)
    x = torch.tanh(bref.linear(hidden[:, 0], m, "classifier.dense", compute))
    return bref.linear(x, m, "classifier.out_proj", compute)


def token_logits(m, ids, compute=torch.float64):
    hidden, _ = encode(m, ids, compute=compute)
    return bref.linear(hidden, m, "classifier", compute)


def qa_logits(m, ids, compute=torch.float64):
    hidden, _ = encode(m, ids, compute=compute)
    logits = bref.linear(hidden, m, "qa_outputs", compute)
    return logits[..., 0], logits[..., 1]
