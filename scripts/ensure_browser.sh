#!/usr/bin/env bash
# The review panel's browser test drives Debian's Chromium (never a browser downloaded by a
# test tool). `make test` calls this first: as root it installs Chromium when missing;
# otherwise it stops before the tests with the one command that would.
set -euo pipefail

command -v chromium >/dev/null 2>&1 && exit 0

install="apt-get update && apt-get install -y --no-install-recommends chromium"
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "make test: the browser test needs Debian's Chromium; run: sudo sh -c '$install'" >&2
    exit 2
fi
echo "make test: installing Debian's Chromium for the browser test (once)..." >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null 2>&1 || {
    echo "make test: apt-get installed chromium, but no 'chromium' is on PATH" >&2
    exit 2
}
