#!/bin/sh
# Makes sure a headless Chromium is on this machine for the browser tests (test/cluster/ui-browser.test.ts):
# Debian's `chromium` package, installed with apt-get when missing. Prints the browser's path on
# success; exits 1 (with the reason on stderr) when it is not there and cannot be installed, and the
# browser tests then skip saying so.
set -u
find_chromium() {
  for candidate in "${MINIMR_CHROMIUM:-}" chromium chromium-browser google-chrome; do
    [ -n "$candidate" ] || continue
    path=$(command -v "$candidate" 2>/dev/null) && { echo "$path"; return 0; }
  done
  return 1
}
if find_chromium; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: no chromium and no apt-get to install it (set MINIMR_CHROMIUM to a Chromium binary)" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "ensure-chromium: chromium is missing and installing it needs root (apt-get install chromium)" >&2
    exit 1
  fi
fi
echo "ensure-chromium: installing Debian's chromium with apt-get (once per machine)" >&2
if ! { $SUDO apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >&2; }; then
  echo "ensure-chromium: apt-get install chromium failed" >&2
  exit 1
fi
find_chromium || { echo "ensure-chromium: chromium installed but not found on PATH" >&2; exit 1; }
