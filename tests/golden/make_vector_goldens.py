#!/usr/bin/env python3
"""make_vector_goldens.py - golden data of the vector functions, by numpy.

Writes OUT_DIR/vectors.jsonl, one JSON object a line, "kind" one of:
  dimensions  bert_embed's "dimensions" option: the PyTorch reference's
              mean-pooled embedding (embeddings.jsonl, written by
              make_goldens.py from tests/reference/bert_reference.py) cut to
              its first N values, renormalised (torch.nn.functional.normalize's
              x / max(||x||, 1e-12)) when "normalize" is true
  quantize    a float32 vector and what sqlite-vec stores for it:
              "binary" (vec_quantize_binary: bit i of byte i // 8 set, least
              significant bit first, when v[i] > 0: numpy's
              packbits(bitorder="little"); packbits' default "big" is the
              other order) and "int8" (vec_quantize_int8(v, 'unit'): the
              float32 step 2/255, (v + 1) / step - 128 in float64, truncated
              toward zero), both as hex
  maxsim      token vectors of a query and a document (flat, row by row,
              n x d) and ColBERT's MaxSim: the sum over query rows of the
              largest dot product with a document row

Needs numpy only.
  /usr/bin/python3 tests/golden/make_vector_goldens.py tests/golden tests/golden
"""
import json
import sys

import numpy as np

DIMENSIONS_MODELS = ("bert-plain-f32", "st-mean-f16")
DIMENSIONS_TEXTS = ("Hello world", "A man is playing a guitar.", "Berlin is the capital of Germany.", "")
DIMENSIONS = (1, 8, 32, 100)


def floats(v):
    """float32 values as JSON numbers that read back to the same float32."""
    return [float("%.9g" % x) for x in np.asarray(v, dtype=np.float32)]


def normalize(v):
    v = np.asarray(v, dtype=np.float64)
    return v / max(np.linalg.norm(v), 1e-12)


def quantize_binary(v):
    return np.packbits(np.asarray(v, dtype=np.float32) > 0, bitorder="little").tobytes().hex()


def quantize_int8(v):
    step = np.float64(np.float32(2.0 / 255))
    x = (np.asarray(v, dtype=np.float32).astype(np.float64) + 1.0) / step - 128.0
    return np.trunc(x).astype(np.int64).astype(np.int8).tobytes().hex()


def int8_boundaries():
    """Values where (v + 1) / step - 128 crosses an integer, and the float32
    neighbours on either side: where truncation must agree to the last bit."""
    step = np.float64(np.float32(2.0 / 255))
    out = []
    for k in range(-128, 127):
        v = np.float32((k + 128) * step - 1.0)
        if -1.0 <= v <= 1.0:
            out += [np.nextafter(v, np.float32(-2)), v, np.nextafter(v, np.float32(2))]
    return [x for x in out if -1.0 <= x <= 1.0]


def main(embeddings_dir, out_dir):
    lines = []
    for line in open(embeddings_dir + "/embeddings.jsonl"):
        g = json.loads(line)
        if g["model"] not in DIMENSIONS_MODELS or g["text"] not in DIMENSIONS_TEXTS:
            continue
        for n in DIMENSIONS:
            for norm in (True, False):
                cut = np.asarray(g["mean"], dtype=np.float32)[:n]
                lines.append({"kind": "dimensions", "model": g["model"], "text": g["text"], "normalize": norm,
                              "dimensions": n, "vector": floats(normalize(cut) if norm else cut)})

    rng = np.random.default_rng(20240521)
    vectors = [rng.uniform(-1, 1, 64).astype(np.float32) for _ in range(40)]
    vectors.append(np.float32([0, -0.0, 1, -1, 0.5, -0.5, 1e-8, -1e-8] * 2))
    edges = np.float32(int8_boundaries())
    edges = np.concatenate([edges, np.zeros((-len(edges)) % 8, dtype=np.float32)])
    vectors += [edges[i:i + 256] for i in range(0, len(edges), 256)]
    for v in vectors:
        v = np.float32(floats(v))
        lines.append({"kind": "quantize", "vector": floats(v), "binary": quantize_binary(v),
                      "int8": quantize_int8(v)})

    for nq, nd, d in ((1, 1, 4), (3, 5, 8), (32, 17, 16), (8, 40, 128), (4, 1, 3)):
        q = rng.normal(size=(nq, d)).astype(np.float32)
        doc = rng.normal(size=(nd, d)).astype(np.float32)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        doc /= np.linalg.norm(doc, axis=1, keepdims=True)
        q, doc = np.float32(floats(q.ravel())).reshape(nq, d), np.float32(floats(doc.ravel())).reshape(nd, d)
        score = float((q.astype(np.float64) @ doc.astype(np.float64).T).max(axis=1).sum())
        lines.append({"kind": "maxsim", "nq": nq, "nd": nd, "d": d, "query": floats(q.ravel()),
                      "document": floats(doc.ravel()), "score": score})

    with open(out_dir + "/vectors.jsonl", "w") as f:
        for line in lines:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
