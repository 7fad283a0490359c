#!/usr/bin/env bash
# The review panel's browser test drives Debian's Chromium (never a browser downloaded by a
# test tool), and the javascript checks run in Debian's Node.js. `make test` calls this
# first: as root it installs what is missing; otherwise it stops before the tests with the
# one command that would.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v node >/dev/null 2>&1 || command -v nodejs >/dev/null 2>&1 || missing+=(nodejs)
# npm installs the pinned promptfoo (make promptfoo).
command -v npm >/dev/null 2>&1 || missing+=(npm)
# WordNet 3.0 for the meteor metric of imported OpenAI text_similarity graders (NLTK reads it).
[ -f /usr/share/wordnet/data.noun ] || missing+=(wordnet-base)
[ "${#missing[@]}" -eq 0 ] && exit 0

install="apt-get update && apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "make test: the tests need Debian's ${missing[*]}; run: sudo sh -c '$install'" >&2
    exit 2
fi
echo "make test: installing Debian's ${missing[*]} for the tests (once)..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
command -v chromium >/dev/null 2>&1 || {
    echo "make test: apt-get installed chromium, but no 'chromium' is on PATH" >&2
    exit 2
}
command -v node >/dev/null 2>&1 || command -v nodejs >/dev/null 2>&1 || {
    echo "make test: apt-get installed nodejs, but no 'node' is on PATH" >&2
    exit 2
}
