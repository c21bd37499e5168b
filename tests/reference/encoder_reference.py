#!/usr/bin/python3
"""encoder_reference.py - an independent reference for ELECTRA, ModernBERT and DeBERTa-v2
checkpoints in the Hugging Face layout, transcribed operation by operation
from transformers (huggingface/transformers):

  * src/transformers/models/electra/modeling_electra.py at commit
    014873b4dfa2482fa4f8e79e6e4fb955461f4373: ElectraEmbeddings (word +
    token type + absolute position embeddings of embedding_size, LayerNorm),
    ElectraModel's embeddings_project (Linear embedding_size -> hidden_size,
    present when the two differ), BERT's post-LayerNorm layers ("Copied from
    transformers.models.bert"), ElectraGeneratorPredictions (dense to
    embedding_size, get_activation("gelu"), LayerNorm with layer_norm_eps)
    and generator_lm_head (tied to the word embeddings, with its bias),
    ElectraClassificationHead (first token, dense, gelu, out_proj),
    ElectraForTokenClassification (classifier per token),
    ElectraForQuestionAnswering (qa_outputs split into start and end);
  * src/transformers/models/modernbert/modeling_modernbert.py at commit
    000c33fdfde12e1ffafbfcdb3c926df5727a00b6, the eager attention path:
    ModernBertEmbeddings (tok_embeddings, norm), ModernBertEncoderLayer
    (attn_norm, the identity in layer 0; attn: Wqkv viewed as [3, heads,
    head_dim], apply_rotary_pos_emb with rotate_half, softmax(q k^T *
    head_dim^-0.5 + mask), Wo; residual; mlp_norm, ModernBertMLP: Wi
    chunked into input and gate, act(input) * gate, Wo; residual),
    ModernBertRotaryEmbedding (inv_freq = 1 / base^(arange(0, dim, 2) /
    dim) and cos/sin of position * inv_freq, computed in float32; base
    global_rope_theta where layer_id % global_attn_every_n_layers == 0,
    local_rope_theta elsewhere), _update_attention_mask's sliding window
    (|i - j| <= local_attention // 2 in local layers), final_norm;
    ModernBertPredictionHead (dense, classifier_activation, norm),
    ModernBertForMaskedLM (decoder tied to tok_embeddings, decoder.bias),
    ModernBertForSequenceClassification (classifier_pooling "cls" or "mean"
    over the attention mask, head, classifier), ModernBertForTokenClassification
    and ModernBertForQuestionAnswering (head, classifier; QA's two columns
    start and end).  LayerNorms without bias where norm_bias is false, linear
    layers without bias where attention_bias, mlp_bias or classifier_bias is;
  * src/transformers/models/deberta_v2/modeling_deberta_v2.py at commit
    0038a3caa5c7d0c5014704005dd67ab347451ddc: DebertaV2Embeddings (word +
    absolute positions where position_biased_input + token types where
    type_vocab_size > 0, embed_proj without bias, LayerNorm),
    DebertaV2Encoder.get_rel_embedding (rel_embeddings, LayerNorm where
    norm_rel_ebd says layer_norm), build_relative_position and
    make_log_bucket_position, DisentangledSelfAttention with share_att_key
    (query_proj and key_proj of the relative embeddings' first 2 att_span
    rows; c2p gathered at clamp(relative_pos + att_span), p2c at
    clamp(-relative_pos + att_span) transposed; every term divided by
    sqrt(head_size * (1 + terms))), BERT's post-LayerNorm layers, ContextPooler
    (first token, dense, pooler_hidden_act) before the classifier, the
    token classifier and qa_outputs; DebertaV2LMPredictionHead
    (lm_predictions.lm_head: dense, hidden_act, LayerNorm, times the word
    embeddings, bias) and the legacy head (cls.predictions.transform to
    embedding_size, the decoder tied to the word embeddings, bias), the
    second as later versions of that file name it
    (LegacyDebertaV2LMPredictionHead, config.legacy);
  * JinaBERT, jinaai/jina-bert-implementation's modeling_bert.py (the
    trust_remote_code of jina-embeddings-v2; model_type "bert" with
    position_embedding_type "alibi"), as its ports transcribe it
    (ml-explore-style JinaBertGLUMLP and JinaBertEncoder.rebuild_alibi_tensor):
    JinaBertEmbeddings (word + token type, no position table, LayerNorm),
    JinaBertSelfAttention (q k^T / sqrt(head_dim) + mask + alibi, where
    alibi = -slope(head) |i - j| from _get_alibi_head_slopes, float32
    slopes times the distance), BertSelfOutput, JinaBertGLUMLP
    (gated_layers without bias, act(first intermediate_size columns) *
    the rest, act nn.GELU() for "geglu" and ReLU for "reglu", wo,
    layernorm(out + residual)), BERT's pooler and heads
    (cls.predictions, classifier on the pooler);
  * nomic-bert, the trust_remote_code of nomic-ai/nomic-bert-2048 and
    nomic-embed-text-v1/v1.5 (configuration_hf_nomic_bert.py and
    modeling_hf_nomic_bert.py), from the copies in nomic-ai/contrastors,
    src/contrastors/models/huggingface/ (modeling_hf_nomic_bert.py at commit
    1e27692238fd259025c56b56926893d21f691d84, configuration_hf_nomic_bert.py
    at 4ed6743d3f724660db25e3fa9f6bfe5c8bcc61c3; the hub's own files were not
    in the index): NomicBertEmbeddings (word + token type, no position table
    when rotary_emb_fraction > 0), emb_ln; NomicBertBlock with prenorm false
    (attn: Wqkv viewed as (three h d), apply_rotary_emb on the first
    head_dim * rotary_emb_fraction values, halves or interleaved pairs,
    scores / sqrt(head_dim) + mask, out_proj; norm1(attn + x);
    NomciBertGatedMLP: fc11(x) * act(fc12(x)), act F.silu (swiglu), F.gelu
    (geglu) or the sigmoid of F.glu (glu), hidden_features n_inner or
    int(8 n_embd / 3) rounded up to a multiple of 256, fc2; norm2(mlp + x));
    NomicBertRotaryEmbedding (inv_freq = 1 / base^(arange(0, dim, 2) / dim)
    in float32, cos/sin of torch.outer(t, inv_freq)) and
    NomicBertDynamicNTKRotaryEmbedding (base * (factor seqlen /
    max_trained_positions - (factor - 1))^(dim / (dim - 2)) past
    max_trained_positions, as a fresh module computes it for one sequence);
    NomicBertPredictionHeadTransform (dense, F.silu for swiglu else GELU,
    layer_norm), the decoder tied to the word embeddings; NomicBertPooler
    and NomicBertForSequenceClassification's classifier;
  * gte's "new" architecture, Alibaba-NLP/new-impl's modeling.py (the
    trust_remote_code of Alibaba-NLP/gte-*-v1.5 and gte-multilingual-base;
    transcribed from the copy the index holds, whose repository it does not
    name): NewEmbeddings (word + token type where type_vocab_size > 0,
    LayerNorm), RotaryEmbedding and NTKScalingRotaryEmbedding (base * factor,
    inv_freq / factor^(2 / dim), the cache built past max_position_embeddings
    so that the scaling holds at every length), apply_rotary_pos_emb with
    rotate_half, NewAttention (qkv_proj split in three, o_proj), NewLayer
    (attn_ln(x + attention), NewGatedMLP: up_gate_proj split into up and
    gate, act(gate) * up, down_proj; mlp_ln(x + mlp)), NewPooler,
    NewLMPredictionHead (dense, hidden_act, norm, decoder),
    NewForSequenceClassification (classifier on the pooler),
    NewForTokenClassification and NewForQuestionAnswering.

Runs in float64 by default on the exact stored weights (compute=torch.float32
for the float32 run).  Reuses bert_reference.py's safetensors reader,
activations, pooling and normalization.  The interface is
family_reference.py's, so that the golden scripts call either alike.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bert_reference as bref  # noqa: E402

FAMILIES = ("electra", "modernbert", "deberta-v2", "jina", "nomic_bert", "new")


class Model(bref.Model):
    """An ELECTRA or ModernBERT checkpoint, tensors under their names without
    the "electra." / "model." prefix."""

    def __init__(self, model_dir):  # noqa: super().__init__ is BERT-only
        self.dir = model_dir
        c = self.config = bref.read_json(os.path.join(model_dir, "config.json"))
        jina = c is not None and c.get("model_type") == "bert" and c.get("position_embedding_type") == "alibi"
        if c is None or (c.get("model_type") not in FAMILIES and not jina):
            raise ValueError(f"{model_dir}: not an ELECTRA or ModernBERT config.json")
        self.family = c["model_type"]
        self.jina = jina
        self.modern = self.family == "modernbert"
        self.deberta = self.family == "deberta-v2"
        self.nomic = self.family == "nomic_bert"
        self.gte = self.family == "new"
        self.mpnet = self.distilbert = False
        raw, self.header = bref.read_safetensors(os.path.join(model_dir, "model.safetensors"))
        self.dtype = {v["dtype"] for k, v in self.header.items() if k != "__metadata__" and v["dtype"] != "I64"}.pop()
        prefix = ("model." if self.modern else "deberta." if self.deberta else "bert." if jina or self.nomic
                  else "new." if self.gte else "electra.")
        self.w = {}
        for name, arr in raw.items():
            if name.startswith(prefix):
                name = name[len(prefix):]
            self.w[name] = torch.from_numpy(np.ascontiguousarray(arr))
        if self.nomic:
            self.hidden, self.heads, self.layers = c["n_embd"], c["n_head"], c["n_layer"]
            inner = c.get("n_inner") or int(8 * self.hidden / 3)
            self.intermediate = (inner + 255) // 256 * 256
        else:
            self.hidden, self.heads = c["hidden_size"], c["num_attention_heads"]
            self.layers, self.intermediate = c["num_hidden_layers"], c["intermediate_size"]
        if self.nomic:
            self.eps = c.get("layer_norm_epsilon", 1e-5)
            self.act = c.get("activation_function")
            self.embedding_size = self.hidden
        elif self.modern:
            self.eps = c.get("norm_eps", 1e-5)
            self.act = c.get("hidden_activation", "gelu")
            self.head_act = c.get("classifier_activation", "gelu")
            self.embedding_size = self.hidden
        elif self.deberta:
            self.eps = c.get("layer_norm_eps", 1e-7)
            self.act = c.get("hidden_act", "gelu")
            self.head_act = c.get("pooler_hidden_act", "gelu")
            self.embedding_size = c.get("embedding_size", self.hidden)
        else:
            self.eps = c.get("layer_norm_eps", 1e-12)
            self.act = c.get("hidden_act", "gelu")
            self.embedding_size = c.get("embedding_size", 128)
        self.padding_idx = -1
        self.has_pooler = jina and "pooler.dense.weight" in self.w
        self.has_nsp = False
        arch = (c.get("architectures") or [""])[0]
        if self.modern:
            self.has_mlm = arch.endswith("ForMaskedLM")
            self.has_qa = arch.endswith("ForQuestionAnswering")
            self.token_classification = arch.endswith("ForTokenClassification")
            self.has_classifier = arch.endswith("ForSequenceClassification")
        elif self.nomic or self.gte:
            self.has_mlm = ("cls.predictions.transform.dense.weight" in self.w or "lm_head.dense.weight" in self.w)
            self.has_qa = "qa_outputs.weight" in self.w
            self.has_pooler = "pooler.dense.weight" in self.w
            self.token_classification = "classifier.weight" in self.w and not self.has_pooler
            self.has_classifier = "classifier.weight" in self.w and self.has_pooler
        elif jina:
            self.has_mlm = "cls.predictions.bias" in self.w
            self.has_qa = "qa_outputs.weight" in self.w
            self.has_pooler = "pooler.dense.weight" in self.w
            self.has_classifier = "classifier.weight" in self.w and self.has_pooler
            self.token_classification = False
        elif self.deberta:
            self.has_mlm = "lm_predictions.lm_head.bias" in self.w or "cls.predictions.bias" in self.w
            self.has_qa = "qa_outputs.weight" in self.w
            self.has_classifier = "pooler.dense.weight" in self.w
            self.token_classification = "classifier.weight" in self.w and not self.has_classifier
        else:
            self.has_mlm = "generator_lm_head.bias" in self.w
            self.has_qa = "qa_outputs.weight" in self.w
            self.token_classification = "classifier.weight" in self.w
            self.has_classifier = "classifier.out_proj.weight" in self.w
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
        positions = c["n_positions"] if self.nomic else c["max_position_embeddings"]
        self.max_length = min(mml, positions) if mml else positions
        if self.st["max_seq_length"]:
            self.max_length = self.st["max_seq_length"]
        st_cfg = bref.read_json(os.path.join(model_dir, "config_sentence_transformers.json"), {})
        self.prompts = st_cfg.get("prompts") or {}
        self.default_prompt_name = st_cfg.get("default_prompt_name")

    def bias(self, name, compute):
        """A bias, or None where the checkpoint has none (ModernBERT's *_bias false)."""
        return self.w[name].to(compute) if name in self.w else None


def linear(x, m, prefix, compute):
    return torch.nn.functional.linear(x, m.t(prefix + ".weight", compute), m.bias(prefix + ".bias", compute))


def norm(x, m, prefix, compute, dim=None):
    return torch.nn.functional.layer_norm(x, (dim or m.hidden,), m.t(prefix + ".weight", compute),
                                          m.bias(prefix + ".bias", compute), m.eps)


# ---- ELECTRA ----------------------------------------------------------------------------------

def electra_encode(m, ids, types, mask, compute, trace):
    batch, seq = ids.shape
    E = m.embedding_size
    pos = torch.arange(seq)[None].expand(batch, seq)
    x = (m.t("embeddings.word_embeddings.weight", compute)[ids]
         + m.t("embeddings.token_type_embeddings.weight", compute)[types]
         + m.t("embeddings.position_embeddings.weight", compute)[pos])
    x = norm(x, m, "embeddings.LayerNorm", compute, E)
    if "embeddings_project.weight" in m.w:
        x = linear(x, m, "embeddings_project", compute)
    if trace is not None:
        trace["hidden_states"].append(x)
    additive = (1.0 - mask[:, None, None, :].to(compute)) * torch.finfo(compute).min
    heads, hd = m.heads, m.hidden // m.heads
    act = bref.activation(m.act)

    def split(t):
        return t.view(batch, seq, heads, hd).permute(0, 2, 1, 3)
    for i in range(m.layers):
        p = f"encoder.layer.{i}."
        q = split(linear(x, m, p + "attention.self.query", compute))
        k = split(linear(x, m, p + "attention.self.key", compute))
        v = split(linear(x, m, p + "attention.self.value", compute))
        probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / np.sqrt(hd) + additive, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(batch, seq, m.hidden)
        x = norm(linear(ctx, m, p + "attention.output.dense", compute) + x, m, p + "attention.output.LayerNorm",
                 compute)
        inter = act(linear(x, m, p + "intermediate.dense", compute))
        x = norm(linear(inter, m, p + "output.dense", compute) + x, m, p + "output.LayerNorm", compute)
        bref.observe(trace, probs, x)
    return x


# ---- JinaBERT ---------------------------------------------------------------------------------

def alibi_slopes(n_heads):
    """_get_alibi_head_slopes, in Python floats as the implementation takes them."""
    def power_of_2(n):
        start = 2 ** (-(2 ** -(np.log2(n) - 3)))
        return [start * start ** i for i in range(n)]
    if float(np.log2(n_heads)).is_integer():
        return power_of_2(n_heads)
    closest = 2 ** int(np.floor(np.log2(n_heads)))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][:n_heads - closest]


def jina_encode(m, ids, types, mask, compute, trace):
    c = m.config
    batch, seq = ids.shape
    x = (m.t("embeddings.word_embeddings.weight", compute)[ids]
         + m.t("embeddings.token_type_embeddings.weight", compute)[types])
    x = norm(x, m, "embeddings.LayerNorm", compute)
    if trace is not None:
        trace["hidden_states"].append(x)
    heads, hd = m.heads, m.hidden // m.heads
    # rebuild_alibi_tensor: torch.Tensor(slopes) (float32) * -1 times |memory - context|.
    rel = torch.abs(torch.arange(seq)[None, :] - torch.arange(seq)[:, None])
    alibi = (torch.tensor(alibi_slopes(heads), dtype=torch.float32) * -1)[:, None, None] * rel[None]
    additive = (1.0 - mask[:, None, None, :].to(compute)) * -10000.0 + alibi[None].to(compute)
    act = torch.nn.functional.relu if c.get("feed_forward_type", "geglu") == "reglu" else torch.nn.functional.gelu
    I = m.intermediate

    def split(t):
        return t.view(batch, seq, heads, hd).permute(0, 2, 1, 3)
    for i in range(m.layers):
        p = f"encoder.layer.{i}."
        q = split(linear(x, m, p + "attention.self.query", compute))
        k = split(linear(x, m, p + "attention.self.key", compute))
        v = split(linear(x, m, p + "attention.self.value", compute))
        probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / np.sqrt(hd) + additive, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(batch, seq, m.hidden)
        x = norm(linear(ctx, m, p + "attention.output.dense", compute) + x, m, p + "attention.output.LayerNorm",
                 compute)
        h = torch.nn.functional.linear(x, m.t(p + "mlp.gated_layers.weight", compute))
        h = act(h[..., :I]) * h[..., I:]
        x = norm(linear(h, m, p + "mlp.wo", compute) + x, m, p + "mlp.layernorm", compute)
        bref.observe(trace, probs, x)
    return x


# ---- DeBERTa-v2 -------------------------------------------------------------------------------

def make_log_bucket_position(relative_pos, bucket_size, max_position):
    sign = torch.sign(relative_pos)
    mid = bucket_size // 2
    abs_pos = torch.where((relative_pos < mid) & (relative_pos > -mid), torch.tensor(mid - 1).type_as(relative_pos),
                          torch.abs(relative_pos))
    log_pos = torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid)) * (mid - 1)) + mid
    return torch.where(abs_pos <= mid, relative_pos.type_as(log_pos), log_pos * sign)


def build_relative_position(size, bucket_size, max_position):
    ids = torch.arange(0, size)
    rel = ids[:, None] - ids[None, :]
    if bucket_size > 0 and max_position > 0:
        rel = make_log_bucket_position(rel, bucket_size, max_position)
    return rel.to(torch.long)


def deberta_encode(m, ids, types, mask, compute, trace):
    c = m.config
    batch, seq = ids.shape
    x = m.t("embeddings.word_embeddings.weight", compute)[ids]
    if c.get("position_biased_input", True):
        x = x + m.t("embeddings.position_embeddings.weight", compute)[torch.arange(seq)[None].expand(batch, seq)]
    if c.get("type_vocab_size", 0) > 0:
        x = x + m.t("embeddings.token_type_embeddings.weight", compute)[types]
    if "embeddings.embed_proj.weight" in m.w:
        x = torch.nn.functional.linear(x, m.t("embeddings.embed_proj.weight", compute))
    x = norm(x, m, "embeddings.LayerNorm", compute)
    x = x * mask[:, :, None].to(compute)
    if trace is not None:
        trace["hidden_states"].append(x)
    heads, hd = m.heads, m.hidden // m.heads
    att = c.get("pos_att_type") or []
    if isinstance(att, str):
        att = [t for t in ("c2p", "p2c") if t in att]
    scale_factor = 1 + ("c2p" in att) + ("p2c" in att)
    max_rel = c.get("max_relative_positions", -1)
    max_rel = max_rel if max_rel >= 1 else c["max_position_embeddings"]
    buckets = c.get("position_buckets", -1)
    span = buckets if buckets > 0 else max_rel
    rel_pos = build_relative_position(seq, buckets, max_rel)
    rel_emb = m.t("encoder.rel_embeddings.weight", compute)
    if "layer_norm" in c.get("norm_rel_ebd", "none"):
        rel_emb = norm(rel_emb, m, "encoder.LayerNorm", compute)
    rel_emb = rel_emb[0:span * 2][None]
    ext = mask[:, None, None, :] * mask[:, None, :, None]
    act = bref.activation(m.act)

    def split(t):      # transpose_for_scores: [batch * heads x seq x hd]
        return t.view(t.shape[0], -1, heads, hd).permute(0, 2, 1, 3).contiguous().view(-1, t.shape[1], hd)
    for i in range(m.layers):
        p = f"encoder.layer.{i}."
        q = split(linear(x, m, p + "attention.self.query_proj", compute))
        k = split(linear(x, m, p + "attention.self.key_proj", compute))
        v = split(linear(x, m, p + "attention.self.value_proj", compute))
        scale = torch.sqrt(torch.tensor(hd, dtype=torch.float) * scale_factor)
        scores = torch.bmm(q, k.transpose(-1, -2)) / scale.to(compute)
        pos_q = split(linear(rel_emb, m, p + "attention.self.query_proj", compute)).repeat(batch, 1, 1)
        pos_k = split(linear(rel_emb, m, p + "attention.self.key_proj", compute)).repeat(batch, 1, 1)
        if "c2p" in att:
            c2p = torch.bmm(q, pos_k.transpose(-1, -2))
            c2p_pos = torch.clamp(rel_pos + span, 0, span * 2 - 1)
            c2p = torch.gather(c2p, dim=-1, index=c2p_pos.expand([q.size(0), seq, seq]))
            scores = scores + c2p / scale.to(compute)
        if "p2c" in att:
            p2c_pos = torch.clamp(-rel_pos + span, 0, span * 2 - 1)
            p2c = torch.bmm(k, pos_q.transpose(-1, -2))
            p2c = torch.gather(p2c, dim=-1, index=p2c_pos.expand([q.size(0), seq, seq])).transpose(-1, -2)
            scores = scores + p2c / scale.to(compute)
        scores = scores.view(-1, heads, seq, seq)
        rmask = ~(ext.to(torch.bool))
        probs = torch.softmax(scores.masked_fill(rmask, torch.finfo(compute).min), -1).masked_fill(rmask, 0)
        ctx = torch.bmm(probs.view(-1, seq, seq), v).view(-1, heads, seq, hd).permute(0, 2, 1, 3).reshape(batch, seq, -1)
        x = norm(linear(ctx, m, p + "attention.output.dense", compute) + x, m, p + "attention.output.LayerNorm", compute)
        inter = act(linear(x, m, p + "intermediate.dense", compute))
        x = norm(linear(inter, m, p + "output.dense", compute) + x, m, p + "output.LayerNorm", compute)
        bref.observe(trace, probs, x)
    return x


# ---- ModernBERT -------------------------------------------------------------------------------

def rotary(m, seq, theta):
    """ModernBertRotaryEmbedding.forward: cos and sin [seq x head_dim], in float32."""
    dim = m.hidden // m.heads
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    freqs = (inv_freq[None, :, None].float() @ torch.arange(seq)[None, None, :].float()).transpose(1, 2)[0]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def thetas(m):
    """The two rotary bases, from rope_parameters when config.json has them."""
    c = m.config
    g, l = c.get("global_rope_theta", 160000.0), c.get("local_rope_theta", 10000.0)
    rp = c.get("rope_parameters") or {}
    g = (rp.get("full_attention") or {}).get("rope_theta", g)
    l = (rp.get("sliding_attention") or {}).get("rope_theta", l)
    return g, l


def modern_encode(m, ids, mask, compute, trace):
    batch, seq = ids.shape
    c = m.config
    x = norm(m.t("embeddings.tok_embeddings.weight", compute)[ids], m, "embeddings.norm", compute)
    global_mask = (1.0 - mask[:, None, None, :].to(compute)) * torch.finfo(compute).min
    rows = torch.arange(seq)[None]
    window = (torch.abs(rows - rows.T) <= c.get("local_attention", 128) // 2)[None, None]
    sliding_mask = global_mask.masked_fill(window.logical_not(), torch.finfo(compute).min)
    heads, hd = m.heads, m.hidden // m.heads
    every = c.get("global_attn_every_n_layers", 3)
    g_theta, l_theta = thetas(m)
    rope = {True: [t.to(compute) for t in rotary(m, seq, g_theta)],
            False: [t.to(compute) for t in rotary(m, seq, l_theta)]}
    act = bref.activation(m.act)
    for i in range(m.layers):
        if trace is not None:
            trace["hidden_states"].append(x)
        p = f"layers.{i}."
        is_global = i % every == 0
        h = x if i == 0 else norm(x, m, p + "attn_norm", compute)
        qkv = linear(h, m, p + "attn.Wqkv", compute).view(batch, seq, 3, heads, hd)
        q, k, v = qkv.transpose(3, 1).unbind(dim=2)        # [batch x heads x seq x hd]
        cos, sin = rope[is_global]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = torch.matmul(q, k.transpose(2, 3)) * hd ** -0.5
        scores = scores + (global_mask if is_global else sliding_mask)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, m.hidden)
        x = x + linear(ctx, m, p + "attn.Wo", compute)
        inp, gate = linear(norm(x, m, p + "mlp_norm", compute), m, p + "mlp.Wi", compute).chunk(2, dim=-1)
        x = x + linear(act(inp) * gate, m, p + "mlp.Wo", compute)
        if trace is not None:
            trace["attentions"].append(probs)
    if trace is not None:
        trace["hidden_states"].append(x)
    return norm(x, m, "final_norm", compute)


def head(m, hidden, compute):
    """ModernBertPredictionHead."""
    return norm(bref.activation(m.head_act)(linear(hidden, m, "head.dense", compute)), m, "head.norm", compute)


# ---- nomic-bert -------------------------------------------------------------------------------

def nomic_rotary(m, seq):
    """NomicBertRotaryEmbedding's (or, with rotary_scaling_factor,
    NomicBertDynamicNTKRotaryEmbedding's) cos and sin [seq x rotary_dim / 2]
    as a fresh module computes them for one sequence of seq tokens, in float32."""
    c = m.config
    dim = (m.hidden // m.heads) * c.get("rotary_emb_fraction", 0.0)
    base = float(c.get("rotary_emb_base", 10000))
    factor, trained = c.get("rotary_scaling_factor"), c.get("max_trained_positions", 2048)
    if factor and seq > trained:
        base = base * ((factor * seq / trained) - (factor - 1)) ** (dim / (dim - 2))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    freqs = torch.outer(torch.arange(seq, dtype=torch.float32), inv_freq)
    return torch.cos(freqs), torch.sin(freqs)


def nomic_rotate_half(x, interleaved):
    if not interleaved:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def nomic_apply_rotary(x, cos, sin, interleaved):
    """apply_rotary_emb: x [batch x seq x heads x head_dim], cos/sin [seq x rotary_dim / 2]."""
    ro = cos.shape[-1] * 2
    if interleaved:
        cos, sin = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
    else:
        cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    cos, sin = cos[:, None, :], sin[:, None, :]
    return torch.cat([x[..., :ro] * cos + nomic_rotate_half(x[..., :ro], interleaved) * sin, x[..., ro:]], dim=-1)


def nomic_glu(name):
    """NomicBertBlock's activation of the gate: F.sigmoid (glu), F.silu (swiglu), else F.gelu."""
    return {"glu": torch.sigmoid, "swiglu": torch.nn.functional.silu}.get(name, torch.nn.functional.gelu)


def nomic_encode(m, ids, types, mask, compute, trace):
    c = m.config
    batch, seq = ids.shape
    x = m.t("embeddings.word_embeddings.weight", compute)[ids]
    if c.get("type_vocab_size", 2) > 0:
        x = x + m.t("embeddings.token_type_embeddings.weight", compute)[types]
    x = norm(x, m, "emb_ln", compute)
    if trace is not None:
        trace["hidden_states"].append(x)
    additive = (1.0 - mask[:, None, None, :].to(compute)) * torch.finfo(compute).min
    heads, hd = m.heads, m.hidden // m.heads
    cos, sin = (t.to(compute) for t in nomic_rotary(m, seq))
    interleaved = c.get("rotary_emb_interleaved", False)
    act = nomic_glu(c.get("activation_function"))
    norm_factor = torch.sqrt(torch.tensor(hd, dtype=torch.float32))
    for i in range(m.layers):
        p = f"encoder.layers.{i}."
        qkv = linear(x, m, p + "attn.Wqkv", compute).view(batch, seq, 3, heads, hd)
        q = nomic_apply_rotary(qkv[:, :, 0], cos, sin, interleaved).permute(0, 2, 1, 3)
        k = nomic_apply_rotary(qkv[:, :, 1], cos, sin, interleaved).permute(0, 2, 1, 3)
        v = qkv[:, :, 2].permute(0, 2, 1, 3)
        probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / norm_factor.to(compute) + additive, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(batch, seq, m.hidden)
        x = norm(linear(ctx, m, p + "attn.out_proj", compute) + x, m, p + "norm1", compute)
        y = linear(x, m, p + "mlp.fc11", compute) * act(linear(x, m, p + "mlp.fc12", compute))
        x = norm(linear(y, m, p + "mlp.fc2", compute) + x, m, p + "norm2", compute)
        bref.observe(trace, probs, x)
    return x


# ---- gte "new" --------------------------------------------------------------------------------

def gte_rotary(m, seq):
    """RotaryEmbedding / NTKScalingRotaryEmbedding (mixed_b None): cos and
    sin [seq x head_dim], float32."""
    c = m.config
    dim = int(m.hidden / m.heads)
    base = c.get("rope_theta", 10000.0)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
    scaling = c.get("rope_scaling")
    if scaling is not None and scaling["factor"] > 1:
        # __init__ builds the cache for max_position_embeddings * factor,
        # past max_position_embeddings: the scaled frequencies at every length.
        factor = scaling["factor"]
        base = base * factor
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        inv_freq = inv_freq / factor ** (2 / dim)
    freqs = torch.einsum("i,j->ij", torch.arange(seq, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def gte_encode(m, ids, types, mask, compute, trace):
    c = m.config
    batch, seq = ids.shape
    x = m.t("embeddings.word_embeddings.weight", compute)[ids]
    if c.get("type_vocab_size", 1) > 0:
        x = x + m.t("embeddings.token_type_embeddings.weight", compute)[types]
    x = norm(x, m, "embeddings.LayerNorm", compute)
    if trace is not None:
        trace["hidden_states"].append(x)
    additive = (1.0 - mask[:, None, None, :].to(compute)) * torch.finfo(compute).min
    heads, hd, I = m.heads, m.hidden // m.heads, m.intermediate
    cos, sin = (t.to(compute)[None, :, None, :] for t in gte_rotary(m, seq))
    act = bref.activation(m.act)
    for i in range(m.layers):
        p = f"encoder.layer.{i}."
        q, k, v = (t.view(batch, seq, heads, hd)
                   for t in linear(x, m, p + "attention.qkv_proj", compute).split(m.hidden, dim=-1))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        probs = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / np.sqrt(hd) + additive, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(batch, seq, m.hidden)
        x = norm(x + linear(ctx, m, p + "attention.o_proj", compute), m, p + "attn_ln", compute)
        up, gate = torch.nn.functional.linear(x, m.t(p + "mlp.up_gate_proj.weight", compute)).split(I, dim=-1)
        x = norm(x + linear(act(gate) * up, m, p + "mlp.down_proj", compute), m, p + "mlp_ln", compute)
        bref.observe(trace, probs, x)
    return x


# ---- the interface of family_reference.py ------------------------------------------------------

def encode(m, ids, attention_mask=None, compute=torch.float64, trace=None, types=None):
    """ElectraModel.forward / ModernBertModel.forward on ids [batch x seq]:
    (last_hidden_state, None)."""
    ids = torch.as_tensor(ids, dtype=torch.long)
    if ids.dim() == 1:
        ids = ids[None]
    mask = torch.ones_like(ids) if attention_mask is None else torch.as_tensor(attention_mask).reshape(ids.shape)
    if m.modern:
        return modern_encode(m, ids, mask, compute, trace), None
    types = torch.zeros_like(ids) if types is None else torch.as_tensor(types, dtype=torch.long).reshape(ids.shape)
    if m.deberta:
        return deberta_encode(m, ids, types, mask, compute, trace), None
    if m.jina:
        return jina_encode(m, ids, types, mask, compute, trace), None
    if m.nomic:
        return nomic_encode(m, ids, types, mask, compute, trace), None
    if m.gte:
        return gte_encode(m, ids, types, mask, compute, trace), None
    return electra_encode(m, ids, types, mask, compute, trace), None


def lm_logits(m, hidden, compute=torch.float64):
    if m.deberta:
        # DebertaV2LMPredictionHead (lm_predictions.lm_head) or the legacy
        # BertLMPredictionHead-style cls.predictions: dense, hidden_act,
        # LayerNorm, the word embeddings, bias.
        p = "lm_predictions.lm_head." if "lm_predictions.lm_head.bias" in m.w else "cls.predictions."
        t = "" if p.startswith("lm_") else "transform."
        h = bref.activation(m.act)(linear(hidden, m, p + t + "dense", compute))
        h = norm(h, m, p + t + "LayerNorm", compute, m.embedding_size)
        decoder = "cls.predictions.decoder.weight" if "cls.predictions.decoder.weight" in m.w else \
            "embeddings.word_embeddings.weight"
        return torch.nn.functional.linear(h, m.t(decoder, compute), m.t(p + "bias", compute))
    if m.jina:
        # BertLMPredictionHead (JinaBertForMaskedLM's cls.predictions): dense, hidden_act, LayerNorm, tied decoder.
        h = bref.activation(m.act)(linear(hidden, m, "cls.predictions.transform.dense", compute))
        h = norm(h, m, "cls.predictions.transform.LayerNorm", compute)
        return torch.nn.functional.linear(h, m.t("embeddings.word_embeddings.weight", compute),
                                          m.t("cls.predictions.bias", compute))
    if m.nomic:
        # NomicBertLMPredictionHead: transform (dense, F.silu for swiglu else nn.GELU(), layer_norm),
        # the decoder tied to the word embeddings, its bias where mlp_fc1_bias.
        act = torch.nn.functional.silu if m.act == "swiglu" else torch.nn.functional.gelu
        h = act(linear(hidden, m, "cls.predictions.transform.dense", compute))
        h = norm(h, m, "cls.predictions.transform.layer_norm", compute)
        decoder = ("cls.predictions.decoder.weight" if "cls.predictions.decoder.weight" in m.w
                   else "embeddings.word_embeddings.weight")
        return torch.nn.functional.linear(h, m.t(decoder, compute), m.bias("cls.predictions.decoder.bias", compute))
    if m.gte:
        # NewLMPredictionHead: dense, hidden_act, norm, decoder (tied) with its bias.
        h = norm(bref.activation(m.act)(linear(hidden, m, "lm_head.dense", compute)), m, "lm_head.norm", compute)
        decoder = "lm_head.decoder.weight" if "lm_head.decoder.weight" in m.w else "embeddings.word_embeddings.weight"
        return torch.nn.functional.linear(h, m.t(decoder, compute), m.t("lm_head.decoder.bias", compute))
    if m.modern:
        return torch.nn.functional.linear(head(m, hidden, compute), m.t("embeddings.tok_embeddings.weight", compute),
                                          m.bias("decoder.bias", compute))
    h = torch.nn.functional.gelu(linear(hidden, m, "generator_predictions.dense", compute))
    h = norm(h, m, "generator_predictions.LayerNorm", compute, m.embedding_size)
    decoder = ("generator_lm_head.weight" if "generator_lm_head.weight" in m.w
               else "embeddings.word_embeddings.weight")
    return torch.nn.functional.linear(h, m.t(decoder, compute), m.t("generator_lm_head.bias", compute))


def classifier_logits(m, ids, compute=torch.float64, types=None):
    hidden, _ = encode(m, ids, compute=compute, types=types)
    if m.modern:
        pooled = hidden.mean(dim=1) if m.config.get("classifier_pooling", "cls") == "mean" else hidden[:, 0]
        return linear(head(m, pooled, compute), m, "classifier", compute)
    if m.jina or m.nomic or m.gte:
        pooled = torch.tanh(linear(hidden[:, 0], m, "pooler.dense", compute))
        return linear(pooled, m, "classifier", compute)
    if m.deberta:
        pooled = bref.activation(m.head_act)(linear(hidden[:, 0], m, "pooler.dense", compute))
        return linear(pooled, m, "classifier", compute)
    x = torch.nn.functional.gelu(linear(hidden[:, 0], m, "classifier.dense", compute))
    return linear(x, m, "classifier.out_proj", compute)


def token_logits(m, ids, compute=torch.float64):
    hidden, _ = encode(m, ids, compute=compute)
    if m.modern:
        hidden = head(m, hidden, compute)
    return linear(hidden, m, "classifier", compute)


def qa_logits(m, ids, compute=torch.float64, types=None):
    hidden, _ = encode(m, ids, compute=compute, types=types)
    if m.modern:
        logits = linear(head(m, hidden, compute), m, "classifier", compute)
    else:
        logits = linear(hidden, m, "qa_outputs", compute)
    return logits[..., 0], logits[..., 1]
