#!/bin/sh
# make_corpus.sh - writes the fuzzers' tiny model (tests/fuzz/tiny_model/)
# and their seed corpora (tests/fuzz/corpus/TARGET/).  The seeds are small
# valid inputs of each kind; libFuzzer mutates them from there.  Rerun after
# changing the input formats of the fuzz targets or gen_model.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
corpus=$here/corpus
tiny=$here/tiny_model
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- the tiny model: BERT's special-token layout (ids 0 to 103), then a
# few words, some only as ## pieces.
mkdir -p "$tiny"
{
    head -104 "$root/tests/fixtures/bert-base-uncased/vocab.txt"
    printf '%s\n' the a cat dog sat on mat . , ! '?' "'" s un '##s' '##ing' '##ed' '##aff' '##able' \
        '##x' hello world paris is capital of france café naïve 中 文 '##中' x '##y' '##z' 12 '##3'
} > "$tiny/vocab.txt"

${CC:-cc} -std=c11 -O2 -ffp-contract=off -o "$tmp/gen_model" "$root/tests/tools/gen_model.c" -lm
sizes="--vocab $tiny/vocab.txt --layers 1 --hidden 8 --heads 2 --intermediate 16 --max-positions 16"
"$tmp/gen_model" "$tmp/f32-model" $sizes --dtype f32 --seed 1
"$tmp/gen_model" "$tmp/f16-mlm" $sizes --dtype f16 --arch mlm --seed 2
"$tmp/gen_model" "$tmp/bf16-pretraining" $sizes --dtype bf16 --arch pretraining --untied \
    --old-layernorm --position-ids --seed 3
"$tmp/gen_model" "$tmp/f32-prefix-st" $sizes --dtype f32 --prefix --st-pooling cls --normalize \
    --max-seq-length 12 --seed 4
cp "$tmp/f32-model/config.json" "$tiny/config.json"

rm -rf "$corpus"
mkdir -p "$corpus/safetensors" "$corpus/tokenizer" "$corpus/json_config" "$corpus/sql"

# ---- safetensors: the tiny model in each dtype and naming.
for m in f32-model f16-mlm bf16-pretraining f32-prefix-st; do
    cp "$tmp/$m/model.safetensors" "$corpus/safetensors/$m"
done

# ---- tokenizer: '0' + configuration, a byte for the id limit, the text.
seed() { # NAME CONFIG TEXT
    printf '%s%s%s' "$2" "G" "$3" > "$corpus/tokenizer/$1"
}
seed ascii 0 "Hello, World! The cat sat on the mat; it's 3.14 o'clock."
seed cased 1 "Héllo WORLD, naïve café: ÀÉÎÕÜ and Straße."
seed accents 2 "crème brûlée, Ångström, Ελληνικά, русский"
seed specials 3 "[CLS] hello [MASK] [SEP][PAD] [unused5] [unused7] [UNK]"
seed added 4 "Hello World, hello  world, ÉTÉ été <x><x>> 中文 中 文 averyveryverylongword"
seed tiny 5 "the cat sat on the mat. unaffable cats dogs 123 中中 xyz"
seed raw 6 "Hello World!  Tabs	and\nnewlines\r\n stay as they are."
seed cjk 0 "中文字符和日本語のテキスト、한국어 텍스트"
seed marks 0 "a$(printf '\314\201\314\202\314\203\314\204')b e$(printf '\314\201') ﬁ ǅ İstanbul"
seed invalid 0 "$(printf 'ok \377\376 \300\257 \355\240\200 \364\220\200\200 \342\202 end')"
# (NUL bytes do not survive $(...): this one is written directly.)
printf '0Ga\000b\001c\177d\302\205e\342\200\213f\357\277\275g' > "$corpus/tokenizer/controls"
seed emoji 1 "I ❤️ 🤗 transformers 👩‍👩‍👧 ⚡️"
seed longword 5 "$(printf 'x%.0s' $(seq 1 150)) $(printf 'un%.0s' $(seq 1 40))"

# ---- json_config: '0' + which file, then its JSON.
json() { # NAME WHICH FILE-OR-TEXT
    if [ -f "$3" ]; then { printf '%s' "$2"; cat "$3"; } > "$corpus/json_config/$1"
    else printf '%s%s' "$2" "$3" > "$corpus/json_config/$1"; fi
}
json config-tiny 0 "$tiny/config.json"
json config-bert-base 0 '{"architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": false, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0, "position_embedding_type": "absolute", "transformers_version": "4.6.0.dev0", "type_vocab_size": 2, "use_cache": true, "vocab_size": 30522}'
json config-sizes 0 '{"vocab_size": 141, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 16, "hidden_act": "gelu_new"}'
json modules 1 "$tmp/f32-prefix-st/modules.json"
json pooling 2 "$tmp/f32-prefix-st/1_Pooling/config.json"
json sentence-bert 3 "$tmp/f32-prefix-st/sentence_bert_config.json"
json tokenizer-config 4 "$tmp/f32-model/tokenizer_config.json"
json tokenizer-config-added 4 '{"do_lower_case": false, "strip_accents": true, "model_max_length": 1000000000000000019884624838656, "additional_special_tokens": ["[unused1]"], "added_tokens_decoder": {"0": {"content": "[PAD]", "special": true}, "104": {"content": "the", "special": true}}, "unk_token": {"content": "[UNK]", "lstrip": false}}'
json tokenizer-json 5 '{"version": "1.0", "added_tokens": [{"id": 0, "content": "[PAD]", "special": true, "normalized": false}, {"id": 100, "content": "[UNK]", "special": true, "normalized": false}, {"id": 101, "content": "[CLS]", "special": true, "normalized": false}, {"id": 102, "content": "[SEP]", "special": true, "normalized": false}, {"id": 103, "content": "[MASK]", "special": true, "normalized": false}, {"id": 141, "content": "Hello World", "special": false, "normalized": true}], "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true, "strip_accents": null, "lowercase": true}, "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": null, "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true}, "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": {"[PAD]": 0}}}'
json special-tokens-map 6 '{"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": {"content": "[MASK]", "single_word": false}}'
json options 7 '{"pooling": "cls", "normalize": true, "max_length": 8, "truncate": false}'
json options-empty 7 ''
json any 8 '{"a": [1, -2.5e-3, "x\u00e9\ud83e\udd17\n", true, false, null, {"b": {"c.d": []}}], "": 0, "a": 1}'

# ---- sql: 'a' + statement, then tagged parameters (see fuzz_sql.c).
sql() { # NAME then printf arguments
    name=$1
    shift
    printf "$@" > "$corpus/sql/$name"
}
t() { # a 't' parameter: tag, one length byte, the text
    n=$(printf '%s' "$1" | wc -c)
    printf 't'
    printf "\\$(printf %03o "$n")"
    printf '%s' "$1"
}
blob1='b\010\000\000\200\077\000\000\000\300'
sql tokenize "a%sm\000" "$(t 'Hello, world! [MASK] café')"
sql token-ids "b%sm\001" "$(t 'the quick brown fox')"
sql embed "c%sm\003" "$(t 'A sentence to embed.')"
sql similarity "d%s%sm\000" "$(t 'a cat')" "$(t 'a dog')"
sql similarity-blobs "d$blob1${blob1}n"
sql fill-mask "e%sk\003m\001" "$(t 'Paris is the [MASK] of France.')"
sql fill-masks "e%sk\002m\001" "$(t '[MASK] and [MASK] or [MASK]')"
sql next-sentence "f%s%sm\002" "$(t 'The sky is blue.')" "$(t 'It is sunny.')"
sql vector-json "g$blob1"
sql fill-mask-each "h%sk\004m\001" "$(t 'the [MASK] sat on the mat')"
sql embed-each "i%sm\000" "$(t '["one", "two", null, "three"]')"
sql embed-each-object "i%sm\004" "$(t '{"a": "first text", "b": "second"}')"
sql embed-each-array "j%st\000%sm\005" "$(t 'x')" "$(t 'a longer text with more words')"
sql load "k%sp\000%s" "$(t 'another')" "$(t '{"pooling": "mean", "normalize": true}')"
sql load-fuzz "lp\001%s%s" "$(t '{"max_length": 5, "truncate": true}')" "$(t 'hello there world')"
sql default "m%s" "$(t 'default model please')"
sql similarity-mixed "n%s%sm\003" "$(t 'first')" "$(t 'second')"
sql ids-and-mask "o%s%sm\000" "$(t 'the cat ')" "$(t '[MASK]')"
sql models "p"
sql unload "q%s" "$(t 'another')"
sql strict "c%sm\004" "$(t 'a text that is longer than sixteen tokens for the strict model which does not truncate at all')"
