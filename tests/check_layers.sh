#!/bin/sh
# check_layers.sh - fails when a file in ext/ includes a header of a layer its
# own layer may not see, directly or through the headers it includes.  Run by
# `make test`; `sh tests/check_layers.sh [DIR]` checks DIR (default ext).
#
# The layers, from the bottom, and what each may include besides its own
# layer's headers (a file's layer is its header's: registry.c is registry):
#
#   base      error buffer file json sqlite_api              nothing
#             precision interrupt (names every layer shares)
#   text      unicode_text vocab tokenizer tok_*             base
#   weights   safetensors checkpoint                         base
#   nn        cpu workers hsum_x86 linear kernels*           base
#   model     model model_* encoder weight_cache             base weights nn
#   tasks     answers entities (post-processing)             base text
#   registry  registry entry                                 base text weights model tasks
#   pipeline  pipeline chunks (pipeline_spans.c)             base text tasks registry
#   sql       sqlite_glue sqlite_bert signatures             base text tasks registry pipeline
#             (sqlite_vtab.c, sqlite_json.c)
#   hooks     internal (what tests and benchmarks call)      all but pipeline and sql;
#                                                            only the modules that define
#                                                            a hook include it
#
# What a file sees through the headers it includes counts too: every header
# a file reaches must be of a layer in its layer's reach below.  The reach
# of the registry and the pipeline is wider than what they include, because
# entry.h (the inside of a registered model, for registry.c, pipeline.c and
# chunks.c) holds the model; the SQL glue's is not: registry.h, pipeline.h
# and chunks.h are handle APIs that name no model, encoder, kernel, CPU or
# worker, so the glue cannot reach them.  internal.h is not followed: it
# lets the tests see across the layers, and its includers (checked above)
# take only their own hooks from it.
#
# sqlite_api.h (SQLite's API) is base but only the sql layer (with
# sqlite_json.c, which implements json.h on SQLite's JSON functions) may
# include it, and sqlite3.h only through it (or sqlite_bert.h, the header
# for applications that link the extension).
#
# Known exceptions, each waiting for the change named: delete the line when
# it is fixed.  Any other include across the rules fails.
exceptions='
'
set -eu
dir=${1:-ext}

layer_of() {
    case "$1" in
    error|buffer|file|json|sqlite_api|precision|interrupt) echo base ;;
    unicode_text|vocab|tokenizer|tok_*) echo text ;;
    safetensors|checkpoint) echo weights ;;
    cpu|workers|hsum_x86|linear|linear_lowp|kernels|kernels_*) echo nn ;;
    model|model_*|encoder|weight_cache) echo model ;;
    answers|entities) echo tasks ;;
    registry|entry) echo registry ;;
    pipeline|pipeline_spans|chunks) echo pipeline ;;
    sqlite_glue|sqlite_bert|sqlite_vtab|sqlite_json|signatures) echo sql ;;
    internal) echo hooks ;;
    *) echo unknown ;;
    esac
}

may_see() {   # layer: the layers it may include
    case "$1" in
    base) echo "base" ;;
    text) echo "base text" ;;
    weights) echo "base weights" ;;
    nn) echo "base nn" ;;
    model) echo "base weights nn model" ;;
    tasks) echo "base text tasks" ;;
    registry) echo "base text weights model tasks registry" ;;
    pipeline) echo "base text tasks registry pipeline" ;;
    sql) echo "base text tasks registry pipeline sql" ;;
    hooks) echo "base text weights nn model tasks registry" ;;
    *) echo "" ;;
    esac
}

may_reach() {   # layer: the layers it may see through the headers it includes
    case "$1" in
    registry) echo "base text weights nn model tasks registry" ;;
    pipeline) echo "base text weights nn model tasks registry pipeline" ;;
    *) may_see "$1" ;;
    esac
}

includes_of() {   # file: the ext/ headers it includes
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"
}

reached_from() {   # file: every ext/ header it reaches, one a line (internal.h not followed)
    seen=' '
    todo=$(includes_of "$1")
    while [ -n "$todo" ]; do
        next=''
        for h in $todo; do
            case "$seen" in *" $h "*) continue ;; esac
            seen="$seen$h "
            echo "$h"
            [ "$h" = internal.h ] || [ ! -e "$dir/$h" ] || next="$next $(includes_of "$dir/$h")"
        done
        todo=$next
    done
}

# The modules that define a test hook of internal.h.
hook_definers=' encoder safetensors sqlite_json tokenizer weight_cache '

failures=0
fail() {
    echo "check_layers: $1" >&2
    failures=$((failures + 1))
}

for path in "$dir"/*.c "$dir"/*.h; do
    [ -e "$path" ] || continue
    file=${path##*/}
    name=${file%.*}
    layer=$(layer_of "$name")
    if [ "$layer" = unknown ]; then
        fail "$file is in no layer: add it to tests/check_layers.sh"
        continue
    fi
    allowed=$(may_see "$layer")
    for header in $(includes_of "$path"); do
        hname=${header%.h}
        [ "$hname" = "$name" ] && continue
        hlayer=$(layer_of "$hname")
        if printf '%s' "$exceptions" | grep -q "^$file $header "; then
            continue
        fi
        case "$hlayer" in
        unknown) fail "$file includes $header, which is in no layer" ;;
        hooks)
            case "$hook_definers" in
            *" $name "*) ;;
            *) fail "$file ($layer) includes internal.h, the test hooks: only the modules that define a hook may" ;;
            esac ;;
        *)
            case " $allowed " in
            *" $hlayer "*) ;;
            *) fail "$file ($layer) includes $header ($hlayer); $layer may see only: $allowed" ;;
            esac ;;
        esac
        if [ "$header" = sqlite_api.h ] && [ "$layer" != sql ]; then
            fail "$file ($layer) includes sqlite_api.h: only the SQL glue talks to SQLite"
        fi
    done
    reach=$(may_reach "$layer")
    for header in $(reached_from "$path"); do
        hname=${header%.h}
        hlayer=$(layer_of "$hname")
        [ "$hlayer" = unknown ] || [ "$hlayer" = hooks ] && continue
        case " $reach " in
        *" $hlayer "*) ;;
        *) fail "$file ($layer) reaches $header ($hlayer) through the headers it includes; $layer may reach only: $reach" ;;
        esac
    done
    if grep -q '^[[:space:]]*#[[:space:]]*include[[:space:]]*<sqlite3\(ext\)\?\.h>' "$path" &&
        [ "$name" != sqlite_api ] && [ "$name" != sqlite_bert ]; then
        fail "$file includes SQLite's header directly: include sqlite_api.h (sql layer only)"
    fi
done

if [ "$failures" -gt 0 ]; then
    echo "check_layers: $failures include(s) across the layers (the rules are at the top of tests/check_layers.sh)" >&2
    exit 1
fi
echo "check_layers: every include in $dir/ within its layer's rules"
