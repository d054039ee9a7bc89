#!/bin/sh
# Makes sure a headless Chromium is on this machine for the browser tests (test/cluster/ui-browser.test.ts):
# $MINIMR_CHROMIUM or a Chromium already on PATH, else Debian's `chromium` package, installed by
# ensure-tool.sh. Prints the browser's path on success; exits 1 (with the reason on stderr) when it
# is not there and cannot be installed, and the browser tests then skip saying so.
set -u
for candidate in "${MINIMR_CHROMIUM:-}" chromium chromium-browser google-chrome; do
  [ -n "$candidate" ] || continue
  path=$(command -v "$candidate" 2>/dev/null) && { echo "$path"; exit 0; }
done
sh "${0%/*}/ensure-tool.sh" chromium && exit 0
echo "ensure-chromium: or set MINIMR_CHROMIUM to a Chromium binary" >&2
exit 1
