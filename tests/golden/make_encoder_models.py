#!/usr/bin/python3
"""make_encoder_models.py OUTDIR VOCAB_TXT [MODERNBERT_DIR [JINA_DIR]] - writes the
random-weight ELECTRA, DeBERTa-v2, ModernBERT, JinaBERT, nomic-bert and gte "new" test
checkpoints into OUTDIR, in the
layout save_pretrained gives them (config.json, model.safetensors, the
tokenizer files): scaled-down versions of google/electra-*-generator and
-discriminator and of answerdotai/ModernBERT-large (few layers, a small
hidden size, ModernBERT's own vocabulary of 50368 and a local window scaled
down to 16 or 64 tokens, so that 300-token texts pass it).

ELECTRA models carry VOCAB_TXT (bert-base-uncased's WordPiece vocabulary,
as the published ELECTRA checkpoints have).  ModernBERT models link the
tokenizer files of MODERNBERT_DIR (ModernBERT-large's, from ../shared);
without it they are not written and the tests that need them skip.
JinaBERT models (jina-embeddings-v2's config.json scaled down: ALiBi, GeGLU
or ReGLU, max_position_embeddings 8192) link the tokenizer files of JINA_DIR
(jina-embeddings-v2-base-en's, from ../shared) and carry the
sentence-transformers files its checkpoints have (mean pooling).
nomic-bert and gte "new" models (nomic-embed-text-v1.5's and gte-base-en-v1.5's
config.json, written out below, scaled down) carry VOCAB_TXT, as those
checkpoints carry bert-base-uncased's vocabulary, in 30528 embedding rows.

Weights come from numpy's RandomState (the same bits on every machine and
numpy version); tests/golden/make_encoder_goldens.py computes the goldens
from these files.  Run by tests/tools/make_test_models.sh.
"""
import json
import os
import shutil
import struct
import sys

import numpy as np

LABELS3 = {"0": "negative", "1": "neutral", "2": "positive"}
NER_LABELS = {str(i): l for i, l in enumerate(["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"])}


def write_safetensors(path, tensors, dtype):
    """tensors: {name: float32 array}; dtype "F32", "F16" or "BF16"."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name], dtype=np.float32)
        if dtype == "F16":
            raw = a.astype("<f2").tobytes()
        elif dtype == "BF16":
            bits = a.view("<u4").astype(np.uint64)
            raw = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()
        else:
            raw = a.astype("<f4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


class Weights:
    def __init__(self, seed):
        self.rng = np.random.RandomState(seed)
        self.t = {}

    def normal(self, name, shape, std):
        self.t[name] = (self.rng.standard_normal(shape) * std).astype(np.float32)

    def norm(self, name, dim, bias=True):
        self.t[name + ".weight"] = (1.0 + 0.1 * self.rng.standard_normal(dim)).astype(np.float32)
        if bias:
            self.normal(name + ".bias", (dim,), 0.05)

    def linear(self, name, rows, cols, bias=True, std=None):
        self.normal(name + ".weight", (rows, cols), std if std is not None else 1.0 / np.sqrt(cols))
        if bias:
            self.normal(name + ".bias", (rows,), 0.05)


def write_config(d, config):
    with open(os.path.join(d, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


# ---- ELECTRA --------------------------------------------------------------------------------

def electra(out, name, vocab_txt, seed, arch, E, H, layers, heads, inter, positions, dtype="F32", prefix="electra.",
            labels=None):
    V = sum(1 for _ in open(vocab_txt, encoding="utf-8"))
    w = Weights(seed)
    p = prefix
    w.normal(p + "embeddings.word_embeddings.weight", (V, E), 0.5)
    w.normal(p + "embeddings.position_embeddings.weight", (positions, E), 0.3)
    w.normal(p + "embeddings.token_type_embeddings.weight", (2, E), 0.3)
    w.norm(p + "embeddings.LayerNorm", E)
    if E != H:
        w.linear(p + "embeddings_project", H, E)
    for l in range(layers):
        q = f"{p}encoder.layer.{l}."
        for part in ("query", "key", "value"):
            w.linear(q + "attention.self." + part, H, H)
        w.linear(q + "attention.output.dense", H, H)
        w.norm(q + "attention.output.LayerNorm", H)
        w.linear(q + "intermediate.dense", inter, H)
        w.linear(q + "output.dense", H, inter)
        w.norm(q + "output.LayerNorm", H)
    config = {"architectures": [arch], "model_type": "electra", "vocab_size": V, "embedding_size": E,
              "hidden_size": H, "num_hidden_layers": layers, "num_attention_heads": heads,
              "intermediate_size": inter, "hidden_act": "gelu", "max_position_embeddings": positions,
              "type_vocab_size": 2, "layer_norm_eps": 1e-12, "position_embedding_type": "absolute",
              "pad_token_id": 0, "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype]}
    if arch == "ElectraForMaskedLM":
        w.linear("generator_predictions.dense", E, H)
        w.norm("generator_predictions.LayerNorm", E)
        w.normal("generator_lm_head.bias", (V,), 0.1)       # the decoder is tied to the word embeddings
    elif arch == "ElectraForPreTraining":
        w.linear("discriminator_predictions.dense", H, H)
        w.linear("discriminator_predictions.dense_prediction", 1, H)
    elif arch == "ElectraForSequenceClassification":
        w.linear("classifier.dense", H, H)
        w.linear("classifier.out_proj", len(labels), H, std=0.3)
    elif arch == "ElectraForTokenClassification":
        w.linear("classifier", len(labels), H, std=0.3)
    elif arch == "ElectraForQuestionAnswering":
        w.linear("qa_outputs", 2, H, std=0.3)
    if labels:
        config["id2label"] = labels
        config["label2id"] = {v: int(k) for k, v in labels.items()}
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    write_config(d, config)
    write_safetensors(os.path.join(d, "model.safetensors"), w.t, dtype)
    shutil.copyfile(vocab_txt, os.path.join(d, "vocab.txt"))
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": True, "model_max_length": 512, "tokenizer_class": "ElectraTokenizer"}, f)


# ---- DeBERTa-v2/v3 ---------------------------------------------------------------------------

def deberta(out, name, vocab_txt, seed, arch, E=128, H=128, layers=2, heads=2, inter=256, positions=512,
            buckets=16, max_rel=64, biased=False, types=0, rel_norm="layer_norm", att=("p2c", "c2p"), labels=None,
            mlm=None, tokenizer_dir=None, vocab_size=None):
    """tokenizer_dir: a SentencePiece tokenizer.json with its tokenizer_config.json and
    special_tokens_map.json, as deberta-v3 checkpoints carry them, in place of
    vocab_txt.  vocab_size: the rows of the word embeddings, when more than the
    vocabulary's (deberta-v3-base: 128100 for 128001 tokens)."""
    if tokenizer_dir:
        tok = json.load(open(os.path.join(tokenizer_dir, "tokenizer.json"), encoding="utf-8"))
        V = max([len(tok["model"]["vocab"])] + [a["id"] + 1 for a in tok["added_tokens"]])
    else:
        V = sum(1 for _ in open(vocab_txt, encoding="utf-8"))
    V = max(V, vocab_size or 0)
    w = Weights(seed)
    p = "deberta."
    w.normal(p + "embeddings.word_embeddings.weight", (V, E), 0.5)
    if biased:
        w.normal(p + "embeddings.position_embeddings.weight", (positions, E), 0.3)
    if types:
        w.normal(p + "embeddings.token_type_embeddings.weight", (types, E), 0.3)
    if E != H:
        w.normal(p + "embeddings.embed_proj.weight", (H, E), 1.0 / np.sqrt(E))
    w.norm(p + "embeddings.LayerNorm", H)
    span = buckets if buckets > 0 else (max_rel if max_rel > 0 else positions)
    w.normal(p + "encoder.rel_embeddings.weight", (2 * span, H), 0.5)
    if rel_norm == "layer_norm":
        w.norm(p + "encoder.LayerNorm", H)
    for l in range(layers):
        q = f"{p}encoder.layer.{l}."
        for part in ("query_proj", "key_proj", "value_proj"):
            w.linear(q + "attention.self." + part, H, H)
        w.linear(q + "attention.output.dense", H, H)
        w.norm(q + "attention.output.LayerNorm", H)
        w.linear(q + "intermediate.dense", inter, H)
        w.linear(q + "output.dense", H, inter)
        w.norm(q + "output.LayerNorm", H)
    if arch == "DebertaV2ForSequenceClassification":
        w.linear("pooler.dense", H, H)
        w.linear("classifier", len(labels), H, std=0.3)
    elif arch == "DebertaV2ForTokenClassification":
        w.linear("classifier", len(labels), H, std=0.3)
    elif arch == "DebertaV2ForQuestionAnswering":
        w.linear("qa_outputs", 2, H, std=0.3)
    elif mlm == "legacy":                 # cls.predictions, the decoder tied to the word embeddings
        w.linear("cls.predictions.transform.dense", E, H)
        w.norm("cls.predictions.transform.LayerNorm", E)
        w.normal("cls.predictions.bias", (V,), 0.1)
    elif mlm == "current":                # lm_predictions.lm_head, as Microsoft's checkpoints name it
        w.linear("lm_predictions.lm_head.dense", H, H)
        w.norm("lm_predictions.lm_head.LayerNorm", H)
        w.normal("lm_predictions.lm_head.bias", (V,), 0.1)
    config = {"architectures": [arch], "model_type": "deberta-v2", "vocab_size": V, "hidden_size": H,
              "num_hidden_layers": layers, "num_attention_heads": heads, "intermediate_size": inter,
              "hidden_act": "gelu", "max_position_embeddings": positions, "type_vocab_size": types,
              "layer_norm_eps": 1e-7, "relative_attention": True, "max_relative_positions": max_rel,
              "position_buckets": buckets, "norm_rel_ebd": rel_norm, "share_att_key": True,
              "pos_att_type": list(att), "position_biased_input": biased, "pooler_hidden_size": H,
              "pooler_hidden_act": "gelu", "pad_token_id": 0, "torch_dtype": "float32"}
    if E != H:
        config["embedding_size"] = E
    if labels:
        config["id2label"] = labels
        config["label2id"] = {v: int(k) for k, v in labels.items()}
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    write_config(d, config)
    write_safetensors(os.path.join(d, "model.safetensors"), w.t, "F32")
    if tokenizer_dir:
        for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copyfile(os.path.join(tokenizer_dir, f), os.path.join(d, f))
        return
    shutil.copyfile(vocab_txt, os.path.join(d, "vocab.txt"))
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": True, "model_max_length": 512}, f)


# ---- ModernBERT ------------------------------------------------------------------------------

def modernbert(out, name, tokenizer_dir, seed, arch, H=64, layers=4, heads=4, inter=96, window=16, every=3,
               positions=1024, biases=False, pooling="cls", labels=None, dtype="F32"):
    V = 50368
    w = Weights(seed)
    p = "model."
    w.normal(p + "embeddings.tok_embeddings.weight", (V, H), 0.5)
    w.norm(p + "embeddings.norm", H, biases)
    for l in range(layers):
        q = f"{p}layers.{l}."
        if l:
            w.norm(q + "attn_norm", H, biases)
        w.linear(q + "attn.Wqkv", 3 * H, H, biases)
        w.linear(q + "attn.Wo", H, H, biases)
        w.norm(q + "mlp_norm", H, biases)
        w.linear(q + "mlp.Wi", 2 * inter, H, biases)
        w.linear(q + "mlp.Wo", H, inter, biases)
    w.norm(p + "final_norm", H, biases)
    w.linear("head.dense", H, H, biases)
    w.norm("head.norm", H, biases)
    if arch == "ModernBertForMaskedLM":
        w.normal("decoder.bias", (V,), 0.1)                 # decoder_bias; the weight is tied
    elif arch == "ModernBertForQuestionAnswering":
        w.linear("classifier", 2, H, std=0.3)
    else:
        w.linear("classifier", len(labels), H, std=0.3)
    real = json.load(open(os.path.join(tokenizer_dir, "config.json"), encoding="utf-8"))
    config = dict(real)
    config.update({"architectures": [arch], "hidden_size": H, "num_hidden_layers": layers,
                   "num_attention_heads": heads, "intermediate_size": inter, "local_attention": window,
                   "global_attn_every_n_layers": every, "max_position_embeddings": positions,
                   "attention_bias": biases, "mlp_bias": biases, "norm_bias": biases, "classifier_bias": biases,
                   "decoder_bias": True, "classifier_pooling": pooling,
                   "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype]})
    config.pop("_name_or_path", None)
    if labels:
        config["id2label"] = labels
        config["label2id"] = {v: int(k) for k, v in labels.items()}
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    write_config(d, config)
    write_safetensors(os.path.join(d, "model.safetensors"), w.t, dtype)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        link = os.path.join(d, f)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(os.path.join(tokenizer_dir, f)), link)


# ---- JinaBERT ----------------------------------------------------------------------------------

def jina(out, name, tokenizer_dir, seed, arch, H=64, layers=2, heads=4, inter=96, prefix="bert.", ff="geglu",
         labels=None):
    real = json.load(open(os.path.join(tokenizer_dir, "config.json"), encoding="utf-8"))
    V = real["vocab_size"]
    w = Weights(seed)
    p = prefix
    w.normal(p + "embeddings.word_embeddings.weight", (V, H), 0.5)
    w.normal(p + "embeddings.token_type_embeddings.weight", (2, H), 0.3)
    w.norm(p + "embeddings.LayerNorm", H)
    for l in range(layers):
        q = f"{p}encoder.layer.{l}."
        for part in ("query", "key", "value"):
            w.linear(q + "attention.self." + part, H, H)
        w.linear(q + "attention.output.dense", H, H)
        w.norm(q + "attention.output.LayerNorm", H)
        w.linear(q + "mlp.gated_layers", 2 * inter, H, bias=False)
        w.linear(q + "mlp.wo", H, inter)
        w.norm(q + "mlp.layernorm", H)
    w.linear(p + "pooler.dense", H, H)
    if arch == "JinaBertForMaskedLM":
        w.linear("cls.predictions.transform.dense", H, H)
        w.norm("cls.predictions.transform.LayerNorm", H)
        w.normal("cls.predictions.bias", (V,), 0.1)        # the decoder is tied to the word embeddings
    elif arch == "JinaBertForSequenceClassification":
        w.linear("classifier", len(labels), H, std=0.3)
    config = dict(real)
    config.pop("_name_or_path", None)
    config.update({"architectures": [arch], "hidden_size": H, "num_hidden_layers": layers,
                   "num_attention_heads": heads, "intermediate_size": inter, "feed_forward_type": ff})
    if labels:
        config["id2label"] = labels
        config["label2id"] = {v: int(k) for k, v in labels.items()}
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    write_config(d, config)
    write_safetensors(os.path.join(d, "model.safetensors"), w.t, "F32")
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "modules.json",
              "sentence_bert_config.json"):
        link = os.path.join(d, f)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(os.path.join(tokenizer_dir, f)), link)
    # 1_Pooling as jina-embeddings-v2's (mean), at this model's width.
    with open(os.path.join(d, "1_Pooling", "config.json"), "w", encoding="utf-8") as f:
        json.dump({"word_embedding_dimension": H, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
                   "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}, f, indent=2)


# ---- nomic-bert and gte "new" -----------------------------------------------------------------

# nomic-ai/nomic-embed-text-v1.5's config.json (nomic-bert-2048's block:
# GPT-2's names, rotary, SwiGLU, no biases), whose sizes each model scales down.
NOMIC_CONFIG = {
    "activation_function": "swiglu", "architectures": ["NomicBertModel"], "attn_pdrop": 0.0,
    "auto_map": {"AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
                 "AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel",
                 "AutoModelForMaskedLM": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertForPreTraining"},
    "bos_token_id": None, "causal": False, "dense_seq_output": True, "embd_pdrop": 0.0, "eos_token_id": None,
    "fused_bias_fc": True, "fused_dropout_add_ln": True, "initializer_range": 0.02, "layer_norm_epsilon": 1e-12,
    "max_trained_positions": 2048, "mlp_fc1_bias": False, "mlp_fc2_bias": False, "model_type": "nomic_bert",
    "n_embd": 768, "n_head": 12, "n_inner": 3072, "n_layer": 12, "n_positions": 8192, "pad_vocab_size_multiple": 64,
    "parallel_block": False, "parallel_block_tied_norm": False, "prenorm": False, "qkv_proj_bias": False,
    "reorder_and_upcast_attn": False, "resid_pdrop": 0.0, "rotary_emb_base": 1000, "rotary_emb_fraction": 1.0,
    "rotary_emb_interleaved": False, "rotary_emb_scale_base": None, "rotary_scaling_factor": None,
    "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True, "torch_dtype": "float32",
    "transformers_version": "4.34.0", "type_vocab_size": 2, "use_cache": True, "use_flash_attn": True,
    "use_rms_norm": False, "use_xentropy": True, "vocab_size": 30528}

# Alibaba-NLP/gte-base-en-v1.5's config.json (the "new" architecture of
# Alibaba-NLP/new-impl), scaled down the same way.
GTE_CONFIG = {
    "architectures": ["NewModel"], "attention_probs_dropout_prob": 0.0,
    "auto_map": {"AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
                 "AutoModel": "Alibaba-NLP/new-impl--modeling.NewModel",
                 "AutoModelForMaskedLM": "Alibaba-NLP/new-impl--modeling.NewForMaskedLM",
                 "AutoModelForSequenceClassification": "Alibaba-NLP/new-impl--modeling.NewForSequenceClassification",
                 "AutoModelForTokenClassification": "Alibaba-NLP/new-impl--modeling.NewForTokenClassification",
                 "AutoModelForQuestionAnswering": "Alibaba-NLP/new-impl--modeling.NewForQuestionAnswering"},
    "classifier_dropout": None, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768,
    "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-12, "layer_norm_type": "layer_norm",
    "logn_attention_clip1": False, "logn_attention_scale": False, "max_position_embeddings": 8192,
    "model_type": "new", "num_attention_heads": 12, "num_hidden_layers": 12, "pack_qkv": True, "pad_token_id": 0,
    "position_embedding_type": "rope", "rope_scaling": {"factor": 2.0, "type": "ntk"}, "rope_theta": 500000,
    "torch_dtype": "float32", "transformers_version": "4.39.1", "type_vocab_size": 0, "unpad_inputs": False,
    "use_memory_efficient_attention": False, "vocab_size": 30528}

NOMIC_PROMPTS = {"prompts": {"search_query": "search_query: ", "search_document": "search_document: ",
                             "classification": "classification: ", "clustering": "clustering: "},
                 "default_prompt_name": None}


def bert_tokenizer_files(d, vocab_txt, max_length):
    shutil.copyfile(vocab_txt, os.path.join(d, "vocab.txt"))
    with open(os.path.join(d, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"do_lower_case": True, "model_max_length": max_length, "tokenizer_class": "BertTokenizer"}, f)


def sentence_transformers_files(d, H, pooling, max_seq_length, prompts=None):
    """modules.json (Transformer, Pooling), 1_Pooling at this width, and the rest."""
    os.makedirs(os.path.join(d, "1_Pooling"), exist_ok=True)
    with open(os.path.join(d, "modules.json"), "w", encoding="utf-8") as f:
        json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}], f)
    with open(os.path.join(d, "1_Pooling", "config.json"), "w", encoding="utf-8") as f:
        json.dump({"word_embedding_dimension": H, "pooling_mode_cls_token": pooling == "cls",
                   "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": False,
                   "pooling_mode_mean_sqrt_len_tokens": False}, f, indent=2)
    with open(os.path.join(d, "sentence_bert_config.json"), "w", encoding="utf-8") as f:
        json.dump({"max_seq_length": max_seq_length, "do_lower_case": False}, f)
    if prompts:
        with open(os.path.join(d, "config_sentence_transformers.json"), "w", encoding="utf-8") as f:
            json.dump(prompts, f, indent=2)


def nomic(out, name, vocab_txt, seed, arch, H=64, layers=2, heads=4, inner=256, prefix="bert.", act="swiglu",
          biases=False, fraction=1.0, interleaved=False, scaling=None, trained=2048, positions=2048, labels=None,
          st=False, dtype="F32"):
    """A NomicBert* checkpoint as modeling_hf_nomic_bert.py names its tensors:
    vocab_size 30522 padded to 30528 (pad_vocab_size_multiple 64)."""
    V = (sum(1 for _ in open(vocab_txt, encoding="utf-8")) + 63) // 64 * 64
    I = ((inner or int(8 * H / 3)) + 255) // 256 * 256
    w = Weights(seed)
    p = prefix
    w.normal(p + "embeddings.word_embeddings.weight", (V, H), 0.5)
    w.normal(p + "embeddings.token_type_embeddings.weight", (2, H), 0.3)
    w.norm(p + "emb_ln", H)
    for l in range(layers):
        q = f"{p}encoder.layers.{l}."
        w.linear(q + "attn.Wqkv", 3 * H, H, bias=biases)
        w.linear(q + "attn.out_proj", H, H, bias=biases)
        w.norm(q + "norm1", H)
        w.linear(q + "mlp.fc11", I, H, bias=biases)
        w.linear(q + "mlp.fc12", I, H, bias=biases)
        w.linear(q + "mlp.fc2", H, I, bias=biases)
        w.norm(q + "norm2", H)
    if arch == "NomicBertForPreTraining":
        w.linear("cls.predictions.transform.dense", H, H, bias=biases)
        w.norm("cls.predictions.transform.layer_norm", H)
        if biases:
            w.normal("cls.predictions.decoder.bias", (V,), 0.1)   # the decoder is tied to the word embeddings
    elif arch == "NomicBertForSequenceClassification":
        w.linear(p + "pooler.dense", H, H)
        w.linear("classifier", len(labels), H, std=0.3)
    config = dict(NOMIC_CONFIG)
    config.update({"architectures": [arch], "n_embd": H, "n_layer": layers, "n_head": heads, "n_inner": inner,
                   "vocab_size": V - 6, "activation_function": act, "qkv_proj_bias": biases, "mlp_fc1_bias": biases,
                   "mlp_fc2_bias": biases, "rotary_emb_fraction": fraction, "rotary_emb_interleaved": interleaved,
                   "rotary_scaling_factor": scaling, "max_trained_positions": trained, "n_positions": positions,
                   "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype]})
    if labels:
        config["id2label"] = labels
        config["label2id"] = {v: int(k) for k, v in labels.items()}
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    write_config(d, config)
    write_safetensors(os.path.join(d, "model.safetensors"), w.t, dtype)
    bert_tokenizer_files(d, vocab_txt, positions)
    if st:
        sentence_transformers_files(d, H, "mean", positions, NOMIC_PROMPTS)


def gte(out, name, vocab_txt, seed, arch, H=64, layers=2, heads=4, inter=128, prefix="new.", types=0,
        theta=500000, scaling=2.0, act="gelu", labels=None, st=False, positions=8192, unpad=False):
    """A New* checkpoint as Alibaba-NLP/new-impl's modeling.py names its
    tensors: bert-base-uncased's vocabulary in 30528 rows."""
    V = 30528
    w = Weights(seed)
    p = prefix
    w.normal(p + "embeddings.word_embeddings.weight", (V, H), 0.5)
    if types:
        w.normal(p + "embeddings.token_type_embeddings.weight", (types, H), 0.3)
    w.norm(p + "embeddings.LayerNorm", H)
    for l in range(layers):
        q = f"{p}encoder.layer.{l}."
        w.linear(q + "attention.qkv_proj", 3 * H, H)
        w.linear(q + "attention.o_proj", H, H)
        w.norm(q + "attn_ln", H)
        w.linear(q + "mlp.up_gate_proj", 2 * inter, H, bias=False)
        w.linear(q + "mlp.down_proj", H, inter)
        w.norm(q + "mlp_ln", H)
    if arch == "NewForMaskedLM":
        w.linear("lm_head.dense", H, H)
        w.norm("lm_head.norm", H)
        w.normal("lm_head.decoder.bias", (V,), 0.1)              # the decoder is tied to the word embeddings
    elif arch == "NewForSequenceClassification":
        w.linear(p + "pooler.dense", H, H)
        w.linear("classifier", len(labels), H, std=0.3)
    elif arch == "NewForTokenClassification":
        w.linear("classifier", len(labels), H, std=0.3)
    elif arch == "NewForQuestionAnswering":
        w.linear("qa_outputs", 2, H, std=0.3)
    config = dict(GTE_CONFIG)
    config.update({"architectures": [arch], "hidden_size": H, "num_hidden_layers": layers,
                   "num_attention_heads": heads, "intermediate_size": inter, "type_vocab_size": types,
                   "rope_theta": theta, "rope_scaling": {"factor": scaling, "type": "ntk"} if scaling else None,
                   "hidden_act": act, "max_position_embeddings": positions, "unpad_inputs": unpad,
                   "use_memory_efficient_attention": unpad})
    if labels:
        config["id2label"] = labels
        config["label2id"] = {v: int(k) for k, v in labels.items()}
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    write_config(d, config)
    write_safetensors(os.path.join(d, "model.safetensors"), w.t, "F32")
    bert_tokenizer_files(d, vocab_txt, positions)
    if st:
        sentence_transformers_files(d, H, "cls", positions)


def main():
    if len(sys.argv) not in (3, 4, 5):
        sys.exit(__doc__)
    out, vocab = sys.argv[1], sys.argv[2]
    electra(out, "electra-mlm", vocab, 101, "ElectraForMaskedLM", 64, 128, 2, 2, 256, 640)
    electra(out, "electra-disc", vocab, 102, "ElectraForPreTraining", 128, 128, 2, 4, 256, 512)
    electra(out, "electra-base", vocab, 103, "ElectraModel", 64, 96, 2, 2, 192, 512, prefix="")
    electra(out, "electra-cls-f16", vocab, 104, "ElectraForSequenceClassification", 64, 128, 2, 2, 256, 512,
            dtype="F16", labels=LABELS3)
    electra(out, "electra-ner", vocab, 105, "ElectraForTokenClassification", 64, 128, 2, 2, 256, 512,
            labels=NER_LABELS)
    electra(out, "electra-qa", vocab, 106, "ElectraForQuestionAnswering", 64, 128, 2, 2, 256, 512)
    # DeBERTa-v3's layout (no absolute positions, no segments, log buckets
    # scaled down to 16 with max_relative_positions 64, so that 300 tokens
    # reach the logarithmic ones); v2's (absolute positions, segments,
    # embed_proj, 256 buckets, unnormalised relative embeddings, c2p only).
    deberta(out, "deberta-cls", vocab, 301, "DebertaV2ForSequenceClassification", labels=LABELS3)
    deberta(out, "deberta-ner", vocab, 302, "DebertaV2ForTokenClassification", E=64, buckets=256, max_rel=-1,
            biased=True, types=2, rel_norm="none", att=("c2p",), labels=NER_LABELS)
    deberta(out, "deberta-qa", vocab, 303, "DebertaV2ForQuestionAnswering", buckets=32, max_rel=128)
    deberta(out, "deberta-mlm", vocab, 304, "DebertaV2ForMaskedLM", mlm="current")
    deberta(out, "deberta-mlm-legacy", vocab, 305, "DebertaV2ForMaskedLM", E=64, biased=True, buckets=256, max_rel=-1,
            mlm="legacy")
    # deberta-v3's own kind of tokenizer: the SentencePiece Unigram that
    # tests/tokenizer/make_family_fixtures.py generated, [MASK] its last id.
    deberta(out, "deberta-v3-spm", None, 306, "DebertaV2ForMaskedLM", mlm="current",
            tokenizer_dir=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "deberta-v3"))
    # nomic-bert: a masked LM like nomic-bert-2048 (swiglu, no biases, tied
    # decoder); nomic-embed-text-v1.5's layout without prefix, with its
    # sentence-transformers files and search_query/search_document prompts;
    # a classifier with every bias, GeGLU, n_inner left to 8 H / 3,
    # rotary on half of each head in interleaved pairs and dynamic NTK
    # scaling past 256 trained positions.
    nomic(out, "nomic-mlm", vocab, 501, "NomicBertForPreTraining")
    nomic(out, "nomic-embed", vocab, 502, "NomicBertModel", H=96, heads=6, prefix="", st=True, positions=8192)
    nomic(out, "nomic-cls", vocab, 503, "NomicBertForSequenceClassification", H=48, heads=3, inner=None,
          act="geglu", biases=True, fraction=0.5, interleaved=True, scaling=2.0, trained=256, labels=LABELS3)
    # gte "new": NTK-scaled rotary (factor 2 on base 500000 as gte-base-en-v1.5,
    # factor 8 on 160000 as gte-multilingual-base), no segments as the -en
    # models, CLS pooling; a bare NewModel without prefix and no scaling
    # (unpad_inputs and xformers' attention on, which change nothing).
    gte(out, "gte-mlm", vocab, 601, "NewForMaskedLM")
    gte(out, "gte-embed", vocab, 602, "NewModel", H=96, heads=6, inter=192, prefix="", theta=10000, scaling=None,
        st=True, unpad=True)
    gte(out, "gte-cls", vocab, 603, "NewForSequenceClassification", H=48, heads=3, inter=96, types=2,
        theta=160000, scaling=8.0, labels=LABELS3)
    gte(out, "gte-ner", vocab, 604, "NewForTokenClassification", labels=NER_LABELS)
    gte(out, "gte-qa", vocab, 605, "NewForQuestionAnswering", act="gelu_new")
    jina_dir = sys.argv[4] if len(sys.argv) == 5 else ""
    if jina_dir and os.path.exists(os.path.join(jina_dir, "tokenizer.json")):
        # MLM under "bert." with 4 heads; a bare JinaBertModel without the
        # prefix and 6 heads (ALiBi's slopes for a count not a power of 2);
        # a ReGLU classifier with 3 heads.
        jina(out, "jina-mlm", jina_dir, 401, "JinaBertForMaskedLM")
        jina(out, "jina-embed", jina_dir, 402, "JinaBertModel", H=96, heads=6, inter=128, prefix="")
        jina(out, "jina-cls", jina_dir, 403, "JinaBertForSequenceClassification", H=48, heads=3, ff="reglu",
             labels=LABELS3)
    else:
        print(f"{sys.argv[0]}: no jina-embeddings-v2 tokenizer at {jina_dir or '(none given)'}: JinaBERT models not written")
    tok = sys.argv[3] if len(sys.argv) >= 4 else ""
    if not tok or not os.path.exists(os.path.join(tok, "tokenizer.json")):
        print(f"{sys.argv[0]}: no ModernBERT tokenizer at {tok or '(none given)'}: ModernBERT models not written")
        return
    modernbert(out, "modernbert-mlm", tok, 201, "ModernBertForMaskedLM")
    modernbert(out, "modernbert-cls", tok, 202, "ModernBertForSequenceClassification", layers=3, window=64,
               biases=True, pooling="mean", labels=LABELS3)
    modernbert(out, "modernbert-cls-first", tok, 203, "ModernBertForSequenceClassification", layers=2,
               pooling="cls", labels=LABELS3, dtype="BF16")
    modernbert(out, "modernbert-ner", tok, 204, "ModernBertForTokenClassification", layers=3, labels=NER_LABELS)
    modernbert(out, "modernbert-qa", tok, 205, "ModernBertForQuestionAnswering", layers=3)


if __name__ == "__main__":
    main()
