#!/usr/bin/env bash
# Prepares a Debian/Ubuntu machine for LurkBot and runs `lurkbot setup`:
#   - installs nats-server and bubblewrap with apt-get when they are missing, and poppler-utils and
#     tesseract-ocr (OCR of scanned PDFs for models without PDF input; media.ocr) and catdoc
#     (the text of old binary Word and Excel files), and make, g++ and python3 (node-gyp builds the
#     idle-memory addon, which gives an idle actor's freed memory back to the system)
#     (apt-get update only when something has to be installed; sudo when not root)
#   - installs the npm dependencies (npm ci with the lockfile, npm install without), which builds dist/
#   - creates LURKBOT_HOME (default ~/.lurkbot): workspace, NATS credentials, nats.conf
#   - with --test first: also Chromium (the web channel's browser tests drive it) and the OpenSSH
#     server and client (the SSH tunnel tests run a real sshd)
# Other arguments go to `lurkbot setup`, e.g. `deploy/setup.sh --systemd ./units`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

say() { printf '==> %s\n' "$*"; }
fail() { printf 'deploy/setup.sh: %s\n' "$*" >&2; exit 1; }
# Debian installs nats-server to /usr/sbin, which is not on every user's PATH
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
fi

with_test_deps=false
if [ "${1:-}" = "--test" ]; then with_test_deps=true; shift; fi

packages=()
have nats-server || packages+=(nats-server)
have bwrap || packages+=(bubblewrap)
have node || packages+=(nodejs npm)
have pdftoppm || packages+=(poppler-utils)
have tesseract || packages+=(tesseract-ocr tesseract-ocr-eng)
have catdoc || packages+=(catdoc)
have make || packages+=(make)
have g++ || packages+=(g++)
have python3 || packages+=(python3)
if $with_test_deps; then
  have chromium || packages+=(chromium)
  { have sshd && have ssh; } || packages+=(openssh-server openssh-client)
fi
if [ "${#packages[@]}" -gt 0 ]; then
  command -v apt-get >/dev/null 2>&1 || fail "missing ${packages[*]} and apt-get is not available: install them with your package manager, then run this again."
  if [ "$(id -u)" -ne 0 ] && [ -z "$SUDO" ]; then fail "missing ${packages[*]}: run this as root or install sudo."; fi
  say "installing ${packages[*]}"
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${packages[@]}"
else
  say "nats-server, bubblewrap, node, poppler-utils, tesseract-ocr and catdoc are installed"
fi

major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 20 ] || fail "Node.js $(node --version) is too old: LurkBot needs Node.js 20 or newer (https://nodejs.org, or NodeSource's Debian packages)."

if [ -f package-lock.json ]; then
  say "npm ci"
  if ! npm ci; then
    say "npm ci refused package-lock.json (out of sync with package.json?); using npm install instead"
    npm install --no-audit --no-fund
  fi
else
  say "npm install (no package-lock.json)"
  npm install
fi

say "npx lurkbot setup $*"
npx --no-install lurkbot setup "$@"
