#!/usr/bin/env bash
# What a new user does: clone the committed HEAD into an empty folder (no .venv) and run
# `make test` there. Says whether Debian's Chromium was present at the start, so a run on
# a machine without it shows that `make test` brings its own browser.
#
#   scripts/fresh_clone_test.sh [FOLDER]    (default: a new temporary folder)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$(mktemp -d)/evalnb}

if command -v chromium >/dev/null 2>&1; then browser="present"; else browser="missing"; fi
echo "fresh clone of $(git -C "$src" rev-parse --short HEAD) into $dest; chromium $browser at start"
git clone --quiet "$src" "$dest"
cd "$dest"
start=$SECONDS
make test
echo "fresh clone: make test passed in $((SECONDS - start)) s (chromium was $browser at start)"
