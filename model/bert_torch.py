"""A plain PyTorch BERT (post-LayerNorm, GELU) whose parameter names are those
of Hugging Face's BertForPreTraining, so its state_dict is a checkpoint any
BERT loader reads.  Shared by train.py, export.py and eval_heldout.py.
Also the training data layout (data_units), the checkpoint format and the
safetensors reader/writer."""
import os
import json
import math
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

END_UNIT, END_DOC = 0xFFFF, 0xFFFE


class Cfg:
    def __init__(self, **kw):
        self.vocab_size = kw.get("vocab_size", 30522)
        self.hidden_size = kw.get("hidden_size", 256)
        self.num_hidden_layers = kw.get("num_hidden_layers", 4)
        self.num_attention_heads = kw.get("num_attention_heads", 4)
        self.intermediate_size = kw.get("intermediate_size", 1024)
        self.max_position_embeddings = kw.get("max_position_embeddings", 128)
        self.type_vocab_size = kw.get("type_vocab_size", 2)
        self.layer_norm_eps = kw.get("layer_norm_eps", 1e-12)
        self.pad_token_id = kw.get("pad_token_id", 0)

    def to_dict(self):
        return dict(self.__dict__)


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, eps = c.hidden_size, c.layer_norm_eps
        self.heads = c.num_attention_heads
        self.attention = nn.Module()
        self.attention.self = nn.Module()
        self.attention.self.query = nn.Linear(h, h)
        self.attention.self.key = nn.Linear(h, h)
        self.attention.self.value = nn.Linear(h, h)
        self.attention.output = nn.Module()
        self.attention.output.dense = nn.Linear(h, h)
        self.attention.output.LayerNorm = nn.LayerNorm(h, eps=eps)
        self.intermediate = nn.Module()
        self.intermediate.dense = nn.Linear(h, c.intermediate_size)
        self.output = nn.Module()
        self.output.dense = nn.Linear(c.intermediate_size, h)
        self.output.LayerNorm = nn.LayerNorm(h, eps=eps)

    def forward(self, x, bias, dropout=0.0):
        # dropout where Hugging Face's BertLayer has it (attention
        # probabilities, each sublayer's output); 0 in inference and in the
        # masked-LM training, which sees its data little more than once.
        drop = (lambda y: F.dropout(y, dropout)) if dropout else (lambda y: y)
        b, t, h = x.shape
        a = self.attention.self
        split = lambda y: y.view(b, t, self.heads, h // self.heads).transpose(1, 2)
        q, k, v = split(a.query(x)), split(a.key(x)), split(a.value(x))
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(h // self.heads) + bias
        ctx = torch.matmul(drop(s.softmax(-1)), v).transpose(1, 2).reshape(b, t, h)
        o = self.attention.output
        x = o.LayerNorm(x + drop(o.dense(ctx)))
        y = self.output.dense(F.gelu(self.intermediate.dense(x)))
        return self.output.LayerNorm(x + drop(y))


class Bert(nn.Module):
    """BertForPreTraining with the decoder tied to the word embeddings."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        h = c.hidden_size
        self.bert = nn.Module()
        e = self.bert.embeddings = nn.Module()
        e.word_embeddings = nn.Embedding(c.vocab_size, h)
        e.position_embeddings = nn.Embedding(c.max_position_embeddings, h)
        e.token_type_embeddings = nn.Embedding(c.type_vocab_size, h)
        e.LayerNorm = nn.LayerNorm(h, eps=c.layer_norm_eps)
        self.bert.encoder = nn.Module()
        self.bert.encoder.layer = nn.ModuleList(Layer(c) for _ in range(c.num_hidden_layers))
        self.bert.pooler = nn.Module()
        self.bert.pooler.dense = nn.Linear(h, h)
        self.cls = nn.Module()
        p = self.cls.predictions = nn.Module()
        p.transform = nn.Module()
        p.transform.dense = nn.Linear(h, h)
        p.transform.LayerNorm = nn.LayerNorm(h, eps=c.layer_norm_eps)
        p.bias = nn.Parameter(torch.zeros(c.vocab_size))
        self.cls.seq_relationship = nn.Linear(h, 2)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.bias)

    def encode(self, ids, types, mask, dropout=0.0):
        e = self.bert.embeddings
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = e.LayerNorm(e.word_embeddings(ids) + e.position_embeddings(pos)[None]
                        + e.token_type_embeddings(types))
        if dropout:
            x = F.dropout(x, dropout)
        bias = ((1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min)
        for layer in self.bert.encoder.layer:
            x = layer(x, bias, dropout)
        return x

    def mean_pool(self, hidden, mask):
        """The sentence embedding the shipped sentence-transformers files
        select: the mean over every token of the input, [CLS] and [SEP]
        included, padding excluded."""
        m = mask[:, :, None].to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)

    def mlm_logits(self, hidden):
        t = self.cls.predictions.transform
        y = t.LayerNorm(F.gelu(t.dense(hidden)))
        return y @ self.bert.embeddings.word_embeddings.weight.t() + self.cls.predictions.bias

    def nsp_logits(self, hidden):
        pooled = torch.tanh(self.bert.pooler.dense(hidden[:, 0]))
        return self.cls.seq_relationship(pooled)


def data_units(path):
    """The id stream written by tokenize.js as a list of documents, each a
    list of units (int64 arrays)."""
    a = np.fromfile(path, dtype="<u2")
    docs, units, start = [], [], 0
    for i in np.flatnonzero(a >= END_DOC):
        if a[i] == END_UNIT:
            units.append(a[start:i].astype(np.int64))
        elif units:
            docs.append(units)
            units = []
        start = i + 1
    if units:
        docs.append(units)
    return docs


def save_checkpoint(path, model, plain, opt=None, torch_rng=None):
    """A training checkpoint that torch.load(weights_only=True) reads back,
    so that loading one runs no pickled code: tensors (the weights, the
    optimizer's moments, the random state) as tensors, everything else
    (progress, options, sizes, the optimizer's settings) as one JSON
    string, since older torch's safe unpickler knows no floats.  Written to
    a temporary file first, so an interrupted save leaves the last one."""
    ck = {"model": model.state_dict()}
    plain = dict(plain)
    if opt is not None:
        sd = opt.state_dict()
        ck["opt_state"] = sd["state"]
        plain["opt_param_groups"] = sd["param_groups"]
    if torch_rng is not None:
        ck["torch_rng"] = torch_rng
    ck["plain"] = json.dumps(plain)
    tmp = path + ".tmp"
    torch.save(ck, tmp)
    os.replace(tmp, path)


def load_checkpoint(path):
    """A checkpoint of save_checkpoint as one dict: "model", the JSON
    values at the top level, and "opt" when it holds an optimizer."""
    ck = torch.load(path, map_location="cpu", weights_only=True)
    ck.update(json.loads(ck.pop("plain")))
    if "opt_state" in ck:
        ck["opt"] = {"state": ck.pop("opt_state"), "param_groups": ck.pop("opt_param_groups")}
    return ck


def save_safetensors(path, tensors, metadata=None):
    """safetensors: u64 LE header length, JSON header (space padded to a
    multiple of 8), then the raw little-endian tensor data."""
    names = sorted(tensors)
    header, off, blobs = {}, 0, []
    dt = {torch.float16: "F16", torch.float32: "F32", torch.bfloat16: "BF16"}
    for n in names:
        t = tensors[n].contiguous().cpu()
        b = t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.view(torch.int16).numpy().tobytes()
        header[n] = {"dtype": dt[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    np_dt = {"F16": np.float16, "F32": np.float32}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        s, e = info["data_offsets"]
        arr = np.frombuffer(data[s:e], dtype=np_dt[info["dtype"]]).reshape(info["shape"])
        out[name] = torch.from_numpy(arr.astype(np.float32))
    return out
