#!/usr/bin/python3
"""make_bench_encoders.py OUTDIR NAME VOCAB_TXT [MODERNBERT_DIR] - writes one of the
benchmark's random-weight encoders of today's base sizes into OUTDIR/NAME, through
tests/golden/make_encoder_models.py (numpy's RandomState: the same bytes on
every machine):

  modernbert-base  answerdotai/ModernBERT-base's shape: 22 layers, hidden 768,
                   intermediate 1152 (gated: Wi is 768 -> 2 x 1152), 12 heads,
                   global attention every 3rd layer, local window 128, rotary
                   bases 160000 (global) and 10000 (local), vocabulary 50368, no
                   biases; config.json and tokenizer files from ModernBERT-large's
                   (MODERNBERT_DIR, ../shared), the sizes replaced.
  deberta-v3-base  microsoft/deberta-v3-base's shape: 12 layers, hidden 768,
                   intermediate 3072, 12 heads, relative attention with 256 log
                   buckets, max_relative_positions -1, pos_att_type p2c and c2p, no
                   absolute positions, 128100 rows of word embeddings.  It reads
                   VOCAB_TXT (bert-base-uncased's WordPiece), so that the benchmark's
                   texts have the same tokens as under bert-base and the two compare
                   token for token; the tokenizer costs little beside the encoder.

Both are masked LMs as the published checkpoints are; the benchmark embeds with
mean pooling, the default without sentence-transformers files.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "golden"))
import make_encoder_models as mem  # noqa: E402


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    out, name, vocab = sys.argv[1:4]
    if name == "modernbert-base":
        if len(sys.argv) < 5 or not os.path.exists(os.path.join(sys.argv[4], "tokenizer.json")):
            sys.exit(f"{sys.argv[0]}: modernbert-base needs ModernBERT's tokenizer files (MODERNBERT_DIR)")
        mem.modernbert(out, name, sys.argv[4], 501, "ModernBertForMaskedLM", H=768, layers=22, heads=12, inter=1152,
                       window=128, every=3, positions=8192)
    elif name == "deberta-v3-base":
        mem.deberta(out, name, vocab, 502, "DebertaV2ForMaskedLM", E=768, H=768, layers=12, heads=12, inter=3072,
                    positions=512, buckets=256, max_rel=-1, mlm="current", vocab_size=128100)
    else:
        sys.exit(f"{sys.argv[0]}: unknown model {name} (modernbert-base, deberta-v3-base)")


if __name__ == "__main__":
    main()
