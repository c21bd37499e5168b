#!/bin/sh
# make_test_models.sh OUTDIR - builds gen_model and writes the fixed set of
# test models into OUTDIR (about 150 MB, in a second or two).
#
# Every BERT model uses the bert-base-uncased vocabulary, so the real tokenizer
# applies (the RoBERTa and XLM-RoBERTa ones their families' tokenizers, below); the weights are pseudo-random but identical on every machine, and
# tests/golden/ holds what the reference implementation computes from them.
# Changing anything here means regenerating the goldens
# (tests/golden/make_goldens.sh).
#
# The vocabulary comes from tests/fixtures/bert-base-uncased/vocab.txt, or
# from $BERT_TEST_VOCAB when set.
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
out=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
vocab=${BERT_TEST_VOCAB:-$root/tests/fixtures/bert-base-uncased/vocab.txt}
if [ ! -f "$vocab" ]; then
    echo "$0: no vocabulary at $vocab: add the bert-base-uncased vocab.txt there or set BERT_TEST_VOCAB" >&2
    exit 1
fi

# Models are written to a scratch directory and moved into place at the end,
# so a test that has the previous files mapped keeps reading intact ones.
mkdir -p "$out"
new=$out/.new.$$
rm -rf "$new"
mkdir "$new"
trap 'rm -rf "$new"' EXIT
gen=$new/gen_model
# -ffp-contract=off: a fused multiply-add would change the last bit of weights.
${CC:-cc} -std=c11 -O2 -ffp-contract=off -o "$gen" "$here/gen_model.c" -lm

# BertModel names, no prefix, with pooler; float32.
"$gen" "$new/bert-plain-f32" --vocab "$vocab" --seed 11 \
    --layers 2 --hidden 128 --heads 2 --intermediate 512 --max-positions 512 --dtype f32

# A sentence-transformers model like all-MiniLM-L6-v2: mean pooling,
# Normalize, max_seq_length 128, float16, the int64 position_ids buffer.
"$gen" "$new/st-mean-f16" --vocab "$vocab" --seed 22 \
    --layers 4 --hidden 256 --heads 4 --intermediate 1024 --max-positions 512 --dtype f16 \
    --position-ids --st-pooling mean --normalize --max-seq-length 128

# BertForMaskedLM, decoder tied to the word embeddings (larger, so that the
# logits spread), tanh GELU, no model_max_length (max_length falls back to
# max_position_embeddings = 256).
"$gen" "$new/mlm-tied-f32" --vocab "$vocab" --seed 33 \
    --layers 3 --hidden 192 --heads 6 --intermediate 768 --max-positions 256 --model-max-length 0 \
    --dtype f32 --arch mlm --act gelu_new --embedding-std 0.25

# BertForPreTraining with its own decoder, old gamma/beta LayerNorm names,
# bfloat16; max_length = min(model_max_length 512, 128 positions).
"$gen" "$new/pretrain-untied-bf16" --vocab "$vocab" --seed 49 \
    --layers 2 --hidden 128 --heads 4 --intermediate 512 --max-positions 128 --model-max-length 512 \
    --dtype bf16 --arch pretraining --untied --old-layernorm

# A sentence-transformers model like bge: CLS pooling, Normalize, relu,
# tensors under "bert.", max_seq_length 64.
"$gen" "$new/st-cls-relu" --vocab "$vocab" --seed 55 \
    --layers 2 --hidden 96 --heads 3 --intermediate 384 --max-positions 512 --dtype f32 \
    --prefix --act relu --st-pooling cls --normalize --max-seq-length 64

# Sequence-classification heads (tests/golden/classify.jsonl, rerank.jsonl).
# BertForSequenceClassification, 3 labels named in id2label, float32.
"$gen" "$new/cls-3-f32" --vocab "$vocab" --seed 61 \
    --layers 2 --hidden 128 --heads 4 --intermediate 512 --max-positions 512 --dtype f32 \
    --arch classify --num-labels 3 --labels negative,neutral,positive

# Multi-label (sigmoid per label), 4 labels, no id2label (LABEL_<i>), float16,
# tanh GELU, max_length 64.
"$gen" "$new/cls-multi4-f16" --vocab "$vocab" --seed 67 \
    --layers 2 --hidden 96 --heads 3 --intermediate 384 --max-positions 64 --dtype f16 --act gelu_new \
    --arch classify --num-labels 4 --problem-type multi_label_classification

# A one-label cross-encoder as sentence-transformers saves it (id2label
# LABEL_0), no activation_fn in config.json (sigmoid), tensors without
# "bert.", max_length 48 so that pairs truncate longest-first.
"$gen" "$new/ce-sigmoid" --vocab "$vocab" --seed 71 \
    --layers 2 --hidden 128 --heads 2 --intermediate 512 --max-positions 48 --dtype f32 \
    --arch classify --no-prefix --num-labels 1 --labels default --classifier-std 2

# The same kind with activation_fn Identity (raw logit), bfloat16.
"$gen" "$new/ce-identity-bf16" --vocab "$vocab" --seed 73 \
    --layers 2 --hidden 128 --heads 4 --intermediate 512 --max-positions 512 --dtype bf16 \
    --arch classify --num-labels 1 --labels default --classifier-std 2 \
    --st-activation torch.nn.modules.linear.Identity

# Regression head: problem_type "regression", the raw logit; num_labels only.
"$gen" "$new/reg-f32" --vocab "$vocab" --seed 79 \
    --layers 2 --hidden 64 --heads 2 --intermediate 256 --max-positions 512 --dtype f32 --act relu \
    --arch classify --num-labels 1 --problem-type regression

# DistilBertForSequenceClassification like the SST-2 sentiment model.
"$gen" "$new/distil-cls" --vocab "$vocab" --seed 83 \
    --layers 3 --hidden 128 --heads 4 --intermediate 512 --max-positions 512 --dtype f32 \
    --model-type distilbert --arch classify --num-labels 2 --labels NEGATIVE,POSITIVE

# Token-classification (NER) and question-answering heads
# (tests/golden/ner.jsonl, qa.jsonl).  Label 0 "O" gets a bias of +2 so that
# about half the tokens are outside any entity, as in real NER output.
# BertForTokenClassification with the CoNLL-2003 labels in dslim/bert-base-NER's
# order, tensors under "bert.", float32.
"$gen" "$new/ner-conll-f32" --vocab "$vocab" --seed 101 \
    --layers 2 --hidden 128 --heads 4 --intermediate 512 --max-positions 512 --dtype f32 \
    --arch token --num-labels 9 --labels O,B-MISC,I-MISC,B-PER,I-PER,B-ORG,I-ORG,B-LOC,I-LOC \
    --first-label-bias 2

# Without "bert.", float16, max_length 64 so that long texts need windows; a
# label without a B-/I- prefix (DATE), which the pipeline groups like an I- tag.
"$gen" "$new/ner-short-f16" --vocab "$vocab" --seed 103 \
    --layers 2 --hidden 96 --heads 3 --intermediate 384 --max-positions 64 --dtype f16 \
    --arch token --no-prefix --num-labels 6 --labels O,B-PER,I-PER,B-LOC,I-LOC,DATE \
    --first-label-bias 1.5

# DistilBertForTokenClassification.
"$gen" "$new/ner-distil" --vocab "$vocab" --seed 107 \
    --layers 3 --hidden 128 --heads 4 --intermediate 512 --max-positions 512 --dtype f32 \
    --model-type distilbert --arch token --num-labels 9 \
    --labels O,B-PER,I-PER,B-ORG,I-ORG,B-LOC,I-LOC,B-MISC,I-MISC --first-label-bias 2

# BertForQuestionAnswering under "bert.", float32, max_length 512: windows of
# 384 tokens with doc_stride 128, as the pipeline's defaults.
"$gen" "$new/qa-f32" --vocab "$vocab" --seed 109 \
    --layers 2 --hidden 128 --heads 4 --intermediate 512 --max-positions 512 --dtype f32 --arch qa

# Without "bert.", bfloat16, max_length 96: windows of 96 tokens, doc_stride 48.
"$gen" "$new/qa-short-bf16" --vocab "$vocab" --seed 113 \
    --layers 2 --hidden 96 --heads 3 --intermediate 384 --max-positions 96 --dtype bf16 --arch qa --no-prefix

# DistilBertForQuestionAnswering.
"$gen" "$new/qa-distil" --vocab "$vocab" --seed 127 \
    --layers 3 --hidden 128 --heads 4 --intermediate 512 --max-positions 512 --dtype f32 \
    --model-type distilbert --arch qa

# DistilBertForMaskedLM (vocab_transform, vocab_layer_norm, vocab_projector
# tied to the word embeddings), as the DistilBERT SPLADE models are saved;
# larger embeddings so that the logits spread (tests/golden/sparse.jsonl).
"$gen" "$new/distil-mlm" --vocab "$vocab" --seed 131 \
    --layers 2 --hidden 128 --heads 4 --intermediate 512 --max-positions 512 --dtype f32 \
    --model-type distilbert --arch mlm --embedding-std 0.25
# Its idf.json, as opensearch-project's document-only sparse models ship one
# for the query side: token -> weight, every seventh token left out (weight 0).
awk 'BEGIN { printf "{" }
     NR % 7 != 1 {
         t = ""
         for (i = 1; i <= length($0); i++) {
             c = substr($0, i, 1)
             t = t (c == "\\" || c == "\"" ? "\\" : "") c
         }
         printf "%s\"%s\": %.2f", (n++ ? ", " : ""), t, 0.5 + ((NR - 1) * 37 % 101) / 20
     }
     END { print "}" }' "$vocab" > "$new/distil-mlm/idf.json"

# all-MiniLM-L6-v2's shape (6 x 384, 12 heads), float16, for the
# reduced-precision suite (tests/test_precision.c); no goldens.
"$gen" "$new/minilm-f16" --vocab "$vocab" --seed 131 \
    --layers 6 --hidden 384 --heads 12 --intermediate 1536 --max-positions 512 --dtype f16 \
    --position-ids --st-pooling mean --normalize --max-seq-length 256

# RoBERTa, XLM-RoBERTa and MPNet (tests/golden/families.jsonl).  Positions
# start at pad_token_id + 1 = 2, so max_position_embeddings is max_length + 2.
#
# Most RoBERTa and XLM-RoBERTa models carry their families' own tokenizers:
# the byte-level BPE of tests/fixtures/bpe-bytelevel and the XLM-R-style
# Unigram of tests/fixtures/unigram-xlmr (tests/tokenizer/make_family_fixtures.py),
# copied in as tokenizer.json; gen_model is given a placeholder vocabulary of
# the length that makes vocab_size the tokenizer's (specials <s> <pad> </s>
# <unk> at 0-3 as there), and its vocab.txt is removed so that only the
# tokenizer.json speaks.  The rest carry all-mpnet-base-v2's WordPiece
# vocabulary (<s> <pad> </s> <unk>, bert-base-uncased's, <mask>).
fixtures=$root/tests/fixtures
for f in bpe-bytelevel unigram-xlmr; do
    if [ ! -f "$fixtures/$f/tokenizer.json" ]; then
        echo "$0: no tokenizer at $fixtures/$f/tokenizer.json (tests/tokenizer/make_family_fixtures.py writes it)" >&2
        exit 1
    fi
done
# placeholder_vocab N FILE: N lines; gen_model adds the 4 leading specials and <mask>.
placeholder_vocab() {
    awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "[placeholder%d]\n", i }' > "$2"
}
# bpe-bytelevel: 1764 ids (its model's 1762 and the added [X] and TODO).
placeholder_vocab 1759 "$new/vocab-bpe.txt"
# unigram-xlmr: 3002 ids, <mask> last.
placeholder_vocab 2997 "$new/vocab-unigram.txt"
# use_tokenizer DIR FIXTURE CLASS MAX_LENGTH: the fixture's tokenizer.json
# replaces vocab.txt, with the tokenizer_config.json and special_tokens_map.json
# that transformers saves for CLASS (RobertaTokenizer, XLMRobertaTokenizer).
use_tokenizer() {
    cp "$fixtures/$2/tokenizer.json" "$1/tokenizer.json"
    rm -f "$1/vocab.txt"
    specials='"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>", "mask_token": "<mask>",
  "pad_token": "<pad>", "sep_token": "</s>", "unk_token": "<unk>"'
    printf '{\n  %s,\n  "model_max_length": %d,\n  "tokenizer_class": "%s"\n}\n' \
        "$specials" "$4" "$3" > "$1/tokenizer_config.json"
    printf '{\n  %s\n}\n' "$specials" > "$1/special_tokens_map.json"
}

# RobertaForMaskedLM, decoder tied, float32, byte-level BPE.
"$gen" "$new/roberta-mlm" --vocab "$new/vocab-bpe.txt" --seed 201 --model-type roberta --arch mlm \
    --layers 2 --hidden 128 --heads 4 --intermediate 512 --max-positions 130 --model-max-length 128 \
    --dtype f32 --embedding-std 0.25
use_tokenizer "$new/roberta-mlm" bpe-bytelevel RobertaTokenizer 128

# A sentence-transformers RobertaModel like all-distilroberta-v1: mean
# pooling, Normalize, float16, with the pooler RobertaModel keeps; byte-level BPE.
"$gen" "$new/roberta-st-f16" --vocab "$new/vocab-bpe.txt" --seed 203 --model-type roberta \
    --layers 2 --hidden 96 --heads 3 --intermediate 384 --max-positions 66 --model-max-length 64 \
    --dtype f16 --st-pooling mean --normalize --max-seq-length 64
use_tokenizer "$new/roberta-st-f16" bpe-bytelevel RobertaTokenizer 64

# XLMRobertaModel like multilingual-e5-small: mean pooling, Normalize and the
# "query: " / "passage: " prompts of config_sentence_transformers.json; Unigram.
"$gen" "$new/xlmr-e5" --vocab "$new/vocab-unigram.txt" --seed 205 --model-type xlm-roberta \
    --layers 2 --hidden 64 --heads 2 --intermediate 256 --max-positions 130 --model-max-length 128 \
    --dtype f32 --st-pooling mean --normalize --max-seq-length 128 \
    --prompts '{"query": "query: ", "passage": "passage: "}'
use_tokenizer "$new/xlmr-e5" unigram-xlmr XLMRobertaTokenizer 128

# XLMRobertaForSequenceClassification, 3 labels, bfloat16, Unigram.
"$gen" "$new/xlmr-cls-bf16" --vocab "$new/vocab-unigram.txt" --seed 207 --model-type xlm-roberta --arch classify \
    --layers 2 --hidden 96 --heads 4 --intermediate 384 --max-positions 130 --model-max-length 128 \
    --dtype bf16 --num-labels 3 --labels negative,neutral,positive
use_tokenizer "$new/xlmr-cls-bf16" unigram-xlmr XLMRobertaTokenizer 128

# RobertaForTokenClassification, max_length 64 so that long texts need
# windows; byte-level BPE, whose words the token-classification pipeline finds
# by the spaces of the text (no continuing_subword_prefix).
"$gen" "$new/roberta-ner" --vocab "$new/vocab-bpe.txt" --seed 209 --model-type roberta --arch token \
    --layers 2 --hidden 96 --heads 3 --intermediate 384 --max-positions 66 --model-max-length 64 \
    --dtype f32 --num-labels 5 --labels O,B-PER,I-PER,B-LOC,I-LOC --first-label-bias 2
use_tokenizer "$new/roberta-ner" bpe-bytelevel RobertaTokenizer 64

# XLMRobertaForTokenClassification like the xlm-roberta NER models, max_length
# 64; Unigram (Metaspace: words found by the spaces of the text, as above).
"$gen" "$new/xlmr-ner" --vocab "$new/vocab-unigram.txt" --seed 223 --model-type xlm-roberta --arch token \
    --layers 2 --hidden 64 --heads 2 --intermediate 256 --max-positions 66 --model-max-length 64 \
    --dtype f32 --num-labels 5 --labels O,B-PER,I-PER,B-LOC,I-LOC --first-label-bias 2
use_tokenizer "$new/xlmr-ner" unigram-xlmr XLMRobertaTokenizer 64

# RobertaForQuestionAnswering, max_length 96: windows of 96 tokens, doc_stride 48;
# byte-level BPE.
"$gen" "$new/roberta-qa" --vocab "$new/vocab-bpe.txt" --seed 211 --model-type roberta --arch qa \
    --layers 2 --hidden 96 --heads 3 --intermediate 384 --max-positions 98 --model-max-length 96 --dtype f32
use_tokenizer "$new/roberta-qa" bpe-bytelevel RobertaTokenizer 96

# MPNetModel like all-mpnet-base-v2: mean pooling, Normalize, with the
# pooler; 256 positions, so that relative distances reach the last bucket.
"$gen" "$new/mpnet-st" --vocab "$vocab" --seed 213 --model-type mpnet \
    --layers 2 --hidden 128 --heads 4 --intermediate 512 --max-positions 258 --model-max-length 256 \
    --dtype f32 --st-pooling mean --normalize --max-seq-length 256

# MPNetForMaskedLM with its own decoder, float16.
"$gen" "$new/mpnet-mlm-f16" --vocab "$vocab" --seed 215 --model-type mpnet --arch mlm --untied \
    --layers 2 --hidden 96 --heads 3 --intermediate 384 --max-positions 130 --model-max-length 128 \
    --dtype f16 --embedding-std 0.25

# MPNetForSequenceClassification, 2 labels.
"$gen" "$new/mpnet-cls" --vocab "$vocab" --seed 217 --model-type mpnet --arch classify \
    --layers 2 --hidden 96 --heads 3 --intermediate 384 --max-positions 130 --model-max-length 128 \
    --dtype f32 --num-labels 2 --labels contradiction,entailment

# MPNetForTokenClassification.
"$gen" "$new/mpnet-ner" --vocab "$vocab" --seed 219 --model-type mpnet --arch token \
    --layers 2 --hidden 64 --heads 2 --intermediate 256 --max-positions 130 --model-max-length 128 \
    --dtype f32 --num-labels 5 --labels O,B-PER,I-PER,B-LOC,I-LOC --first-label-bias 2

# NLI cross-encoders for bert_zero_shot (tests/golden/zero_shot.jsonl):
# BertForSequenceClassification with entailment first (so contradiction is
# the last id), max_length 64 so that long texts are cut only_first...
"$gen" "$new/nli-bert" --vocab "$vocab" --seed 225 --arch classify \
    --layers 2 --hidden 96 --heads 3 --intermediate 384 --max-positions 64 --dtype f32 \
    --num-labels 3 --labels entailment,neutral,contradiction --classifier-std 2

# ... and RobertaForSequenceClassification in roberta-large-mnli's order
# (CONTRADICTION, NEUTRAL, ENTAILMENT: found case-insensitively); byte-level BPE.
"$gen" "$new/nli-roberta" --vocab "$new/vocab-bpe.txt" --seed 227 --model-type roberta --arch classify \
    --layers 2 --hidden 96 --heads 3 --intermediate 384 --max-positions 66 --model-max-length 64 \
    --dtype f32 --num-labels 3 --labels CONTRADICTION,NEUTRAL,ENTAILMENT --classifier-std 2
use_tokenizer "$new/nli-roberta" bpe-bytelevel RobertaTokenizer 64

# RobertaModel with roberta-base's vocabulary size (50265) and a tiny hidden
# size, no goldens: tests/test_families.c puts roberta-base's own tokenizer
# files beside its weights when ../shared has them.
placeholder_vocab 50260 "$new/vocab-roberta-base.txt"
"$gen" "$new/roberta-vocab50265" --vocab "$new/vocab-roberta-base.txt" --seed 221 --model-type roberta \
    --layers 1 --hidden 16 --heads 2 --intermediate 32 --max-positions 514 --model-max-length 512 --dtype f32
rm -f "$new/roberta-vocab50265/vocab.txt" "$new/vocab-roberta-base.txt"

# mlm-tied-f32 again, cut into three shards with model.safetensors.index.json,
# as save_pretrained writes large checkpoints: the same values in other files
# (tests/test_surface.c compares their results byte for byte).
"$gen" "$new/mlm-tied-f32-sharded" --vocab "$vocab" --seed 33 \
    --layers 3 --hidden 192 --heads 6 --intermediate 768 --max-positions 256 --model-max-length 0 \
    --dtype f32 --arch mlm --act gelu_new --embedding-std 0.25 --shards 3

# ColBERT models as PyLate saves them (tests/golden/make_colbert_goldens.py):
# [Q] and [D] added to the tokenizer (tokenizer.json) and the embeddings, a
# Dense module to 24 values without bias, query_length 16, document_length
# 40, attend_to_expansion_tokens false, punctuation skiplist; the second
# without the Dense module (vectors of hidden size).
"$gen" "$new/colbert-dense" --vocab "$vocab" --seed 223 \
    --layers 2 --hidden 64 --heads 2 --intermediate 256 --max-positions 128 --dtype f32 --no-pooler --colbert 24
"$gen" "$new/colbert-plain" --vocab "$vocab" --seed 227 \
    --layers 2 --hidden 48 --heads 3 --intermediate 192 --max-positions 64 --dtype f32 --no-pooler --colbert 0

# ELECTRA and ModernBERT (tests/golden/make_encoder_models.py, numpy's
# RandomState): ELECTRA on this vocabulary; ModernBERT on ModernBERT-large's
# own tokenizer files from ../shared, when present (else its tests skip).
# Without Python and numpy neither is written, and their tests skip.
python=${PYTHON:-/usr/bin/python3}
if "$python" -c "import numpy" 2>/dev/null; then
    "$python" "$root/tests/golden/make_encoder_models.py" "$new" "$vocab" \
        "${MODERNBERT_DIR:-$root/../shared/models/answerdotai__ModernBERT-large}" \
        "${JINA_DIR:-$root/../shared/models/jinaai__jina-embeddings-v2-base-en}"
else
    echo "$0: no $python with numpy: the ELECTRA and ModernBERT test models are not written" >&2
fi

rm -f "$gen" "$new/vocab-bpe.txt" "$new/vocab-unigram.txt"
for dir in "$new"/*; do
    name=$(basename "$dir")
    rm -rf "${out:?}/$name"
    mv "$dir" "$out/$name"
done
