#!/usr/bin/python3
"""gguf_write.py - writes a Hugging Face BERT checkpoint (config.json,
model.safetensors, vocab.txt) as a GGUF file that llama.cpp's "bert"
architecture loads, for the llama.cpp peer of `make bench`.

    gguf_write.py MODEL_DIR OUT.gguf [--type f32|q8_0]

Needs only Python 3 and numpy; neither torch nor llama.cpp's gguf-py.  What
it writes follows llama.cpp's own converter (convert_hf_to_gguf.py, class
BertModel, and gguf-py's constants.py, vocab.py and quants.py) and what its
loader reads (src/models/bert.cpp, llama-model.cpp, llama-vocab.cpp):

  - general.architecture "bert"; bert.context_length (max_position_embeddings),
    bert.embedding_length, bert.feed_forward_length, bert.block_count,
    bert.attention.head_count, bert.attention.layer_norm_epsilon,
    bert.attention.causal false, bert.pooling_type 1 (mean: every engine of
    the bench pools by the mean), general.file_type (0 all F32, 7 mostly Q8_0).
  - tokenizer.ggml.model "bert" (llama.cpp's WordPiece, LLAMA_VOCAB_TYPE_WPM)
    with the converter's "phantom space" vocabulary: a word-initial piece
    "x" is stored as "\u2581x", a continuation "##x" as "x", special tokens
    as they are; token types 1 (normal) and 3 (control: the tokenizer's
    special tokens); token_type_count (type_vocab_size); the ids of [CLS]
    (also bos, as the converter sets it when the tokenizer has no bos),
    [SEP] (also eos), [UNK], [PAD] and [MASK]; normalizer.lowercase from
    do_lower_case (strip_accents only when tokenizer_config.json sets it).
  - tensors token_embd, token_types, position_embd, token_embd_norm, and per
    layer blk.N.attn_q / attn_k / attn_v / attn_output / attn_output_norm /
    ffn_up / ffn_down / layer_output_norm, weights and biases; a Linear's
    [out, in] matrix keeps its bytes, its ggml shape being {in, out}.  The
    pooler and any head are left out, as the converter does.

--type q8_0 quantizes what the converter quantizes for --outtype q8_0:
every 2-D ".weight" except position_embd and token_types (so token_embd and
the projections); biases, norms and those two embeddings stay F32.  Q8_0 is
ggml's block_q8_0: 32 weights as int8 with one float16 scale d = max|x| / 127,
q = round-half-away(x / d), bit for bit what quants.py's Q8_0 (and ggml's
quantize_row_q8_0_ref) gives.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

GGUF_MAGIC = 0x46554747         # "GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32
# gguf value types
T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY = 4, 5, 6, 7, 8, 9
# ggml tensor types
GGML_F32, GGML_Q8_0 = 0, 8
FILE_TYPE = {"f32": 0, "q8_0": 7}   # LlamaFileType ALL_F32, MOSTLY_Q8_0
TOKEN_NORMAL, TOKEN_CONTROL, TOKEN_UNUSED = 1, 3, 5
POOLING_MEAN = 1
QK8_0 = 32


def read_safetensors(path):
    """name -> float32 numpy array (F32, F16 and BF16 files)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    base = 8 + n
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        buf = raw[base + start:base + end]
        dtype = info["dtype"]
        if dtype == "F32":
            a = buf.view("<f4")
        elif dtype == "F16":
            a = buf.view("<f2").astype(np.float32)
        elif dtype == "BF16":
            a = (buf.view("<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            continue                    # position_ids and other integer tensors
        out[name] = np.asarray(a, dtype=np.float32).reshape(info["shape"])
    return out


def tensor_map(state, layers):
    """(gguf name, array) pairs, in the order llama.cpp's converter writes them."""
    def get(key):
        for k in (key, "bert." + key):
            if k in state:
                return state[k]
        return None

    pairs = []

    def put(gguf_name, hf_name, required=True):
        a = get(hf_name)
        if a is None:
            if required:
                sys.exit(f"gguf_write: the checkpoint has no {hf_name}")
            return
        pairs.append((gguf_name, a))

    put("token_embd.weight", "embeddings.word_embeddings.weight")
    put("token_types.weight", "embeddings.token_type_embeddings.weight", required=False)
    put("position_embd.weight", "embeddings.position_embeddings.weight")
    put("token_embd_norm.weight", "embeddings.LayerNorm.weight")
    put("token_embd_norm.bias", "embeddings.LayerNorm.bias")
    parts = [("attn_q", "attention.self.query"), ("attn_k", "attention.self.key"),
             ("attn_v", "attention.self.value"), ("attn_output", "attention.output.dense"),
             ("attn_output_norm", "attention.output.LayerNorm"), ("ffn_up", "intermediate.dense"),
             ("ffn_down", "output.dense"), ("layer_output_norm", "output.LayerNorm")]
    for i in range(layers):
        for g, h in parts:
            put(f"blk.{i}.{g}.weight", f"encoder.layer.{i}.{h}.weight")
            put(f"blk.{i}.{g}.bias", f"encoder.layer.{i}.{h}.bias")
    return pairs


def quantize_q8_0(a):
    """ggml block_q8_0 bytes of a float32 array whose rows are a multiple of 32 long."""
    if a.shape[-1] % QK8_0:
        raise ValueError(f"rows of {a.shape[-1]} values are not whole blocks of {QK8_0}")
    blocks = np.ascontiguousarray(a, dtype=np.float32).reshape(-1, QK8_0)
    d = np.abs(blocks).max(axis=1, keepdims=True) / np.float32(127)
    with np.errstate(divide="ignore"):
        inv = np.where(d == 0, np.float32(0), np.float32(1) / d).astype(np.float32)
    x = blocks * inv
    ax = np.abs(x)
    fl = np.floor(ax)
    q = np.sign(x) * (fl + np.floor(2 * (ax - fl)))     # roundf: half away from zero
    out = np.empty((blocks.shape[0], 2 + QK8_0), dtype=np.uint8)
    out[:, :2] = d.astype(np.float16).view(np.uint8)
    out[:, 2:] = q.astype(np.int8).view(np.uint8)
    return out.tobytes()


def read_vocab(model_dir):
    path = os.path.join(model_dir, "vocab.txt")
    if not os.path.exists(path):
        sys.exit(f"gguf_write: no {path} (a WordPiece vocab.txt is needed)")
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\r\n") for line in f]


def load_json(path):
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    return {}


class Writer:
    def __init__(self):
        self.kv = []

    @staticmethod
    def _str(s):
        b = s.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    def add(self, key, vtype, value):
        body = struct.pack("<I", vtype)
        if vtype == T_STRING:
            body += self._str(value)
        elif vtype == T_UINT32:
            body += struct.pack("<I", value)
        elif vtype == T_INT32:
            body += struct.pack("<i", value)
        elif vtype == T_FLOAT32:
            body += struct.pack("<f", value)
        elif vtype == T_BOOL:
            body += struct.pack("<?", value)
        self.kv.append(self._str(key) + body)

    def add_array(self, key, etype, values):
        body = struct.pack("<IIQ", T_ARRAY, etype, len(values))
        if etype == T_STRING:
            body += b"".join(self._str(v) for v in values)
        elif etype == T_INT32:
            body += np.asarray(values, dtype="<i4").tobytes()
        self.kv.append(self._str(key) + body)

    def write(self, path, tensors):
        """tensors: (name, numpy shape, ggml type, bytes)."""
        infos, offset = [], 0
        for name, shape, gtype, data in tensors:
            dims = list(reversed(shape))            # ggml: innermost dimension first
            infos.append(self._str(name) + struct.pack("<I", len(dims)) +
                         b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", gtype, offset))
            offset += len(data)
            offset += -offset % ALIGNMENT
        tmp = path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(struct.pack("<IIQQ", GGUF_MAGIC, GGUF_VERSION, len(tensors), len(self.kv)))
            for kv in self.kv:
                f.write(kv)
            for info in infos:
                f.write(info)
            f.write(b"\0" * (-f.tell() % ALIGNMENT))
            for _, _, _, data in tensors:
                f.write(data)
                f.write(b"\0" * (-len(data) % ALIGNMENT))
        os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--type", choices=("f32", "q8_0"), default="f32")
    ap.add_argument("--name", default=None, help="general.name (default: the folder's name)")
    args = ap.parse_args()

    config = load_json(os.path.join(args.model_dir, "config.json"))
    if not config:
        sys.exit(f"gguf_write: no config.json in {args.model_dir}")
    if config.get("position_embedding_type", "absolute") != "absolute":
        sys.exit("gguf_write: only absolute position embeddings (llama.cpp's \"bert\")")
    if config.get("hidden_act", "gelu") not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        sys.exit(f"gguf_write: hidden_act {config.get('hidden_act')}: llama.cpp's bert runs GELU only")
    tok_config = load_json(os.path.join(args.model_dir, "tokenizer_config.json"))
    special_map = load_json(os.path.join(args.model_dir, "special_tokens_map.json"))
    layers = config["num_hidden_layers"]
    state = read_safetensors(os.path.join(args.model_dir, "model.safetensors"))
    pairs = tensor_map(state, layers)

    vocab = read_vocab(args.model_dir)
    n_vocab = config.get("vocab_size", len(vocab))
    n_real = len(vocab)
    index = {t: i for i, t in enumerate(vocab)}
    if n_real < n_vocab:            # as get_vocab_base: the ids the vocabulary lacks
        vocab += [f"[PAD{i}]" for i in range(n_real, n_vocab)]

    def special(kind, default):
        t = tok_config.get(kind + "_token", special_map.get(kind + "_token", default))
        if isinstance(t, dict):
            t = t.get("content", default)
        if t not in index:
            sys.exit(f"gguf_write: the {kind} token {t!r} is not in vocab.txt")
        return index[t]

    ids = {k: special(k, d) for k, d in (("cls", "[CLS]"), ("sep", "[SEP]"), ("unk", "[UNK]"),
                                         ("pad", "[PAD]"), ("mask", "[MASK]"))}
    control = set(ids.values())
    tokens, types = [], []
    for i, t in enumerate(vocab):
        if i in control:
            tokens.append(t)
            types.append(TOKEN_CONTROL)
        elif i >= n_real:
            tokens.append(t)
            types.append(TOKEN_UNUSED)
        else:
            tokens.append(t[2:] if t.startswith("##") else "\u2581" + t)
            types.append(TOKEN_NORMAL)
    if len(set(tokens)) != len(tokens):
        sys.exit("gguf_write: the phantom-space vocabulary has duplicates (llama.cpp would refuse it)")

    w = Writer()
    w.add("general.architecture", T_STRING, "bert")
    w.add("general.name", T_STRING, args.name or os.path.basename(os.path.normpath(args.model_dir)))
    w.add("general.file_type", T_UINT32, FILE_TYPE[args.type])
    w.add("bert.block_count", T_UINT32, layers)
    w.add("bert.context_length", T_UINT32, config.get("max_position_embeddings", 512))
    w.add("bert.embedding_length", T_UINT32, config["hidden_size"])
    w.add("bert.feed_forward_length", T_UINT32, config["intermediate_size"])
    w.add("bert.attention.head_count", T_UINT32, config["num_attention_heads"])
    w.add("bert.attention.layer_norm_epsilon", T_FLOAT32, float(config.get("layer_norm_eps", 1e-12)))
    w.add("bert.attention.causal", T_BOOL, False)
    w.add("bert.pooling_type", T_UINT32, POOLING_MEAN)
    # The rows of token_types as they are (llama.cpp checks the tensor's shape against it).
    types_rows = next((a.shape[0] for n, a in pairs if n == "token_types.weight"), None)
    w.add("tokenizer.ggml.token_type_count", T_UINT32, types_rows or config.get("type_vocab_size", 1) or 1)
    w.add("tokenizer.ggml.model", T_STRING, "bert")
    w.add("tokenizer.ggml.pre", T_STRING, "default")
    w.add_array("tokenizer.ggml.tokens", T_STRING, tokens)
    w.add_array("tokenizer.ggml.token_type", T_INT32, types)
    w.add("tokenizer.ggml.bos_token_id", T_UINT32, ids["cls"])
    w.add("tokenizer.ggml.eos_token_id", T_UINT32, ids["sep"])
    w.add("tokenizer.ggml.unknown_token_id", T_UINT32, ids["unk"])
    w.add("tokenizer.ggml.seperator_token_id", T_UINT32, ids["sep"])   # sic: llama.cpp's key
    w.add("tokenizer.ggml.padding_token_id", T_UINT32, ids["pad"])
    w.add("tokenizer.ggml.cls_token_id", T_UINT32, ids["cls"])
    w.add("tokenizer.ggml.mask_token_id", T_UINT32, ids["mask"])
    w.add("tokenizer.ggml.normalizer.lowercase", T_BOOL, bool(tok_config.get("do_lower_case", True)))
    if tok_config.get("strip_accents") is not None:
        w.add("tokenizer.ggml.normalizer.strip_accents", T_BOOL, bool(tok_config["strip_accents"]))

    tensors = []
    for name, a in pairs:
        quantize = (args.type == "q8_0" and a.ndim == 2 and name.endswith(".weight")
                    and name not in ("position_embd.weight", "token_types.weight"))
        if quantize:
            tensors.append((name, a.shape, GGML_Q8_0, quantize_q8_0(a)))
        else:
            tensors.append((name, a.shape, GGML_F32, np.ascontiguousarray(a, dtype="<f4").tobytes()))
    w.write(args.out, tensors)
    print(f"gguf_write: {args.out}: {len(tensors)} tensors, {args.type}, "
          f"{os.path.getsize(args.out) / 1e6:.1f} MB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
