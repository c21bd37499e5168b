#!/bin/sh
# check_deps.sh [build] - makes sure the Debian/Ubuntu packages the build
# and the tests need are installed: installs them with apt-get when run as
# root, otherwise prints the exact command to run.  With "build", only what
# compiling the extension needs (not the sqlite3 shell).
set -eu

packages="gcc make pkg-config libsqlite3-dev libopenblas-dev libutf8proc-dev"
# The tests also need the sqlite3 shell, and numpy for the script that
# writes the ELECTRA, ModernBERT and DeBERTa test models.
[ "${1:-}" = build ] || packages="$packages sqlite3 python3-numpy"

if ! command -v dpkg-query >/dev/null 2>&1; then
    # Not Debian: trust pkg-config, which the build uses anyway.
    if pkg-config --exists sqlite3 openblas libutf8proc 2>/dev/null &&
       { [ "${1:-}" = build ] || command -v sqlite3 >/dev/null; }; then
        exit 0
    fi
    echo "missing: SQLite (library, headers and the sqlite3 shell), OpenBLAS and utf8proc development files" >&2
    exit 1
fi

missing=""
for p in $packages; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
        *"install ok installed"*) ;;
        *) missing="$missing $p" ;;
    esac
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" = 0 ]; then
    echo "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq $missing
else
    echo "missing packages:$missing" >&2
    echo "run:  sudo apt-get install -y$missing" >&2
    exit 1
fi
