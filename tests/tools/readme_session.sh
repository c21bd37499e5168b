#!/bin/sh
# readme_session.sh - prints the sqlite3 session that README.md's "A session"
# shows, as the interactive shell prints it (prompts included), from a real
# run with the demo model.  Run from the project root after `make`.
set -eu
printf '%s\n' \
  ".load ./bert" \
  "SELECT bert_version();" \
  "SELECT bert_load('default', 'model/demo');" \
  "SELECT bert_tokenize('Hello, naïve world! 野口里佳 [MASK].');" \
  "SELECT bert_token_ids('Hello, naïve world!');" \
  "SELECT bert_fill_mask('The man went to the [MASK] to buy some milk.', 3);" \
  "SELECT bert_next_sentence('The weather was cold.', 'She wore a warm coat.') AS follows," \
  "       bert_next_sentence('The weather was cold.', 'Chapter nine covers the tax code.') AS unrelated;" \
  "SELECT length(bert_embed('hello world')) AS bytes, round(bert_similarity('a dog barked', 'the puppy was noisy'), 4) AS sim;" \
  | sqlite3 -interactive 2>&1 \
  | sed -e '/^SQLite version/d' -e '/^Enter ".help"/d' -e '$ { /^sqlite> $/d; }' \
  | sed -e '1i $ sqlite3'
