#!/bin/sh
# check_layers.sh - fails when a file in ext/ includes, directly or through
# the headers it includes, a header of a layer its own may not see.  Run by
# `make test`; `sh tests/check_layers.sh [DIR]` checks DIR (default ext).
#
# A file's layer is its folder.  The layers, from the bottom, and what each
# may see besides its own folder (ext/README.md says what lives where):
rules='
base
kernels    base
tokenizer  base
encoder    base kernels
models     base kernels tokenizer encoder
tasks      base kernels tokenizer encoder models
sql        base tokenizer models tasks
'
# Headers that are the inside of their folder: besides the folder's own
# files, only the folders named may see them.
private='
models/entry.h         tasks
models/model_bind.h
tokenizer/tok_internal.h
tokenizer/tok_pipeline.h
kernels/hsum_x86.h
kernels/isa_kernels.h
'
# SQLite's API (base/sqlite_api.h, and sqlite3.h only through it or through
# sql/sqlite_bert.h, the header for applications) is the SQL layer's; the one
# other file that may include it is base/json.c, which reads JSON with
# SQLite's own parser on a private in-memory database.
sqlite_users=' sql base/json.c '
set -eu
dir=${1:-ext}

may_see() {   # layer: the folders it may see, its own included
    line=$(printf '%s\n' "$rules" | awk -v l="$1" '$1 == l')
    [ -n "$line" ] && echo "$line"
}

below() {   # a rule's line: the layers after its first word, or "nothing"
    # shellcheck disable=SC2086
    set -- $1
    shift
    [ $# -gt 0 ] && echo "$*" || echo nothing
}

includes_of() {   # folder/file: the ext/ headers it includes, as folder/name.h
    from=${1%/*}
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$dir/$1" |
        while read -r h; do
            case "$h" in
            ../*/*) echo "${h#../}" ;;
            */*) echo "?$h" ;;
            *) echo "$from/$h" ;;
            esac
        done
}

reached_from() {   # folder/file: every ext/ header it reaches, one a line
    seen=' '
    todo=$(includes_of "$1")
    while [ -n "$todo" ]; do
        next=''
        for h in $todo; do
            case "$seen" in *" $h "*) continue ;; esac
            seen="$seen$h "
            echo "$h"
            [ -e "$dir/$h" ] && next="$next $(includes_of "$h")"
        done
        todo=$next
    done
}

failures=0
fail() {
    echo "check_layers: $1" >&2
    failures=$((failures + 1))
}

for path in "$dir"/*/*.c "$dir"/*/*.h; do
    [ -e "$path" ] || continue
    file=${path#"$dir"/}
    layer=${file%%/*}
    case "$layer" in python|node) continue ;; esac
    allowed=$(may_see "$layer") || { fail "$file: ext/$layer/ is no layer: add it to the rules of tests/check_layers.sh"; continue; }
    for header in $(reached_from "$file"); do
        case "$header" in
        \?*) fail "$file includes \"${header#?}\": include a header of its own folder by its name, another's as \"../folder/name.h\""; continue ;;
        esac
        if [ ! -e "$dir/$header" ]; then
            fail "$file reaches $header, which does not exist"
            continue
        fi
        hlayer=${header%%/*}
        case " $allowed " in
        *" $hlayer "*) ;;
        *) fail "$file ($layer) reaches $header ($hlayer); $layer may see only its own folder and: $(below "$allowed")" ;;
        esac
        readers=$(printf '%s\n' "$private" | awk -v h="$header" '$1 == h { $1 = ""; print " " $0 " "; found = 1 } END { if (!found) print "public" }')
        if [ "$readers" != public ] && [ "$hlayer" != "$layer" ]; then
            case "$readers" in
            *" $layer "*) ;;
            *) fail "$file ($layer) reaches $header, the inside of $hlayer/ (who may see it is listed in tests/check_layers.sh)" ;;
            esac
        fi
        if [ "$header" = base/sqlite_api.h ]; then
            case "$sqlite_users" in
            *" $layer "* | *" $file "*) ;;
            *) fail "$file ($layer) reaches base/sqlite_api.h: only the SQL layer talks to SQLite" ;;
            esac
        fi
    done
    if grep -q '^[[:space:]]*#[[:space:]]*include[[:space:]]*<sqlite3\(ext\)\?\.h>' "$path" &&
        [ "$file" != base/sqlite_api.h ] && [ "$file" != sql/sqlite_bert.h ]; then
        fail "$file includes SQLite's header directly: include base/sqlite_api.h (SQL layer only)"
    fi
    # The test runner links the kernels' release objects (the Makefile's
    # TEST_OBJ), compiled with NDEBUG: an assert() there would never run.
    if [ "$layer" = kernels ] && grep -q '\bassert *(\|<assert\.h>' "$path"; then
        fail "$file uses assert(): the kernels are tested as released (NDEBUG); check the condition and return instead"
    fi
done

if [ "$failures" -gt 0 ]; then
    echo "check_layers: $failures include(s) across the layers (the rules are at the top of tests/check_layers.sh)" >&2
    exit 1
fi
echo "check_layers: every include in $dir/ within its layer's rules"
