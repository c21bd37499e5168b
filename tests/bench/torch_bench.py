#!/usr/bin/python3
"""torch_bench.py - the PyTorch side of `make bench`: Hugging Face's BertModel
forward pass written as an ordinary float32 torch.nn.Module (the layers and
the eager attention of transformers' modeling_bert.py, which is not
installed here), followed by sentence-transformers' mean pooling and, when
the model has a Normalize module, L2 normalization.  ModernBERT and
DeBERTa-v2/v3 checkpoints (tests/bench/make_bench_encoders.py) run instead
through tests/reference/encoder_reference.py in float32, the project's
transcription of modeling_modernbert.py and modeling_deberta_v2.py, with the
same mean pooling.

    torch_bench.py MODEL_DIR IDS_JSON LABEL --threads N [--ours OURS_F32] [--onnx OUT.onnx]

Times batch 1 (one sentence a call) and batch 32 (consecutive sentences
padded to the longest, with an attention mask, as a transformers tokenizer
with padding=True gives them) under torch.inference_mode(), on the token ids
the extension produced, so both sides encode exactly the same tokens.
--ours compares the embeddings with the extension's; --onnx then exports the
same module with torch.onnx.export (batch and sequence axes dynamic) for
tests/bench/ort_bench.js.  Prints "RESULT ..." and "CHECK ..." lines for
tests/bench/report.py.

Needs Debian's python3-torch and python3-numpy; run it with /usr/bin/python3.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))


def read_f32_safetensors(path):
    """{name: float32 tensor} of a float32 safetensors file (integer buffers skipped)."""
    with open(path, "rb") as f:
        data = f.read()
    (hlen,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hlen])
    body = memoryview(data)[8 + hlen:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] in ("I64", "I32"):
            continue
        if info["dtype"] != "F32":
            raise SystemExit(f"{path}: tensor {name} is {info['dtype']}; the benchmark models are float32")
        start, end = info["data_offsets"]
        arr = np.frombuffer(body[start:end], dtype="<f4").reshape(info["shape"])
        out[name.removeprefix("bert.")] = torch.from_numpy(arr.copy())
    return out


class Layer(nn.Module):
    def __init__(self, hidden, heads, intermediate, eps):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=eps)
        self.inter = nn.Linear(hidden, intermediate)
        self.out = nn.Linear(intermediate, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x, additive_mask):
        b, s, h = x.shape

        def split(t):
            return t.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + additive_mask
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, h)
        x = self.attn_norm(self.attn_out(ctx) + x)
        return self.out_norm(self.out(nn.functional.gelu(self.inter(x))) + x)


class BertEmbedder(nn.Module):
    """input_ids, attention_mask [batch x seq] -> pooled embedding [batch x hidden]."""

    def __init__(self, config, normalize):
        super().__init__()
        if config.get("hidden_act", "gelu") != "gelu":
            raise SystemExit("the benchmark models use hidden_act gelu")
        h, eps = config["hidden_size"], config.get("layer_norm_eps", 1e-12)
        self.word = nn.Embedding(config["vocab_size"], h)
        self.position = nn.Embedding(config["max_position_embeddings"], h)
        self.token_type = nn.Embedding(config.get("type_vocab_size", 2), h)
        self.emb_norm = nn.LayerNorm(h, eps=eps)
        self.layers = nn.ModuleList(Layer(h, config["num_attention_heads"], config["intermediate_size"], eps)
                                    for _ in range(config["num_hidden_layers"]))
        self.register_buffer("position_ids", torch.arange(config["max_position_embeddings"])[None], persistent=False)
        self.normalize = normalize

    def load_hf(self, w):
        names = {"word.weight": "embeddings.word_embeddings.weight",
                 "position.weight": "embeddings.position_embeddings.weight",
                 "token_type.weight": "embeddings.token_type_embeddings.weight",
                 "emb_norm.weight": "embeddings.LayerNorm.weight", "emb_norm.bias": "embeddings.LayerNorm.bias"}
        parts = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
                 "attn_out": "attention.output.dense", "attn_norm": "attention.output.LayerNorm",
                 "inter": "intermediate.dense", "out": "output.dense", "out_norm": "output.LayerNorm"}
        for i in range(len(self.layers)):
            for mine, theirs in parts.items():
                for p in ("weight", "bias"):
                    names[f"layers.{i}.{mine}.{p}"] = f"encoder.layer.{i}.{theirs}.{p}"
        self.load_state_dict({mine: w[theirs] for mine, theirs in names.items()})

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        x = (self.word(input_ids) + self.position(self.position_ids[:, :seq])
             + self.token_type(torch.zeros_like(input_ids)))
        x = self.emb_norm(x)
        mask = attention_mask.to(x.dtype)
        # transformers' get_extended_attention_mask
        additive = (1.0 - mask[:, None, None, :]) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, additive)
        # sentence-transformers' Pooling(mean) and Normalize
        m = mask[:, :, None]
        pooled = (x * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
        return nn.functional.normalize(pooled, p=2, dim=1) if self.normalize else pooled


class ReferenceEmbedder(nn.Module):
    """ModernBERT and DeBERTa-v2: encoder_reference.encode in float32, mean
    pooling over the attention mask.  Its weights are the reference's tensors,
    which the ONNX export takes as constants."""

    def __init__(self, model_dir, normalize):
        super().__init__()
        import encoder_reference
        self.ref = encoder_reference
        self.m = encoder_reference.Model(model_dir)
        for name in list(self.m.w):
            self.m.w[name] = self.m.w[name].float()
        self.normalize = normalize

    def forward(self, input_ids, attention_mask):
        x = self.ref.encode(self.m, input_ids, attention_mask, compute=torch.float32)[0]
        m = attention_mask.to(x.dtype)[:, :, None]
        pooled = (x * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
        return nn.functional.normalize(pooled, p=2, dim=1) if self.normalize else pooled


def has_normalize(model_dir):
    path = os.path.join(model_dir, "modules.json")
    if not os.path.exists(path):
        return False
    with open(path, encoding="utf-8") as f:
        return any(m.get("type", "").endswith(".Normalize") for m in json.load(f))


def batches(ids, size):
    """Consecutive groups of `size`, padded with id 0 ([PAD]) to the longest."""
    for start in range(0, len(ids), size):
        group = ids[start:start + size]
        longest = max(len(s) for s in group)
        input_ids = torch.zeros(len(group), longest, dtype=torch.long)
        mask = torch.zeros(len(group), longest, dtype=torch.long)
        for row, s in enumerate(group):
            input_ids[row, :len(s)] = torch.tensor(s)
            mask[row, :len(s)] = 1
        yield input_ids, mask


def run(model, ids, size):
    """Returns (wall seconds, CPU seconds of the whole process, embeddings)."""
    outs = []
    cpu0, t0 = time.process_time(), time.perf_counter()
    for input_ids, mask in batches(ids, size):
        outs.append(model(input_ids, mask))
    return time.perf_counter() - t0, time.process_time() - cpu0, torch.cat(outs)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("ids_json")
    ap.add_argument("label")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--ours", help="the extension's embeddings (float32, sentence after sentence)")
    ap.add_argument("--onnx", help="export the model here for ONNX Runtime")
    ap.add_argument("--export-only", action="store_true",
                    help="only export the ONNX file (no PyTorch timings: they take long on a busy machine)")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    with open(os.path.join(a.model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    if config.get("model_type") in ("modernbert", "deberta-v2"):
        model = ReferenceEmbedder(a.model_dir, has_normalize(a.model_dir))
    else:
        model = BertEmbedder(config, has_normalize(a.model_dir))
        model.load_hf(read_f32_safetensors(os.path.join(a.model_dir, "model.safetensors")))
    model.eval()
    with open(a.ids_json, encoding="utf-8") as f:
        ids = json.load(f)
    tokens = sum(len(s) for s in ids)
    print(f"INFO engine=torch version={torch.__version__} threads={torch.get_num_threads()}", flush=True)

    ours = None
    if a.ours:
        ours = torch.from_numpy(np.fromfile(a.ours, dtype="<f4").reshape(len(ids), config["hidden_size"]))
    with torch.inference_mode():
        for size in () if a.export_only else (1, 32):
            run(model, ids[:size], size)                  # warm-up
            seconds, cpu_seconds, emb = run(model, ids, size)
            padded = sum(t.numel() for t, _ in batches(ids, size))
            print(f"RESULT model={a.label} engine=torch batch={size} sentences={len(ids)} tokens={tokens} "
                  f"padded_tokens={padded} seconds={seconds:.6f} cpu_seconds={cpu_seconds:.3f}", flush=True)
            if ours is not None:
                print(f"CHECK model={a.label} what=ours-vs-torch-b{size} "
                      f"max_abs_diff={(emb - ours).abs().max().item():.3g}", flush=True)

    if a.onnx:
        # encoder_reference's sliding window uses logical_not, which this
        # exporter has no symbolic for at opset 14; ONNX's Not is the same.
        torch.onnx.register_custom_op_symbolic("aten::logical_not", lambda g, x: g.op("Not", x), 14)
        example = next(batches(ids[:2], 2))
        with torch.no_grad():
            torch.onnx.export(model, example, a.onnx, input_names=["input_ids", "attention_mask"],
                              output_names=["embedding"], opset_version=14, do_constant_folding=True,
                              dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                            "attention_mask": {0: "batch", 1: "sequence"},
                                            "embedding": {0: "batch"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
