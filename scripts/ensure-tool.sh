#!/bin/sh
# Makes sure a command-line tool a test needs is on this machine, installing its Debian package with
# apt-get when missing (as ensure-chromium.sh does for the browser tests):
#
#   scripts/ensure-tool.sh TOOL [PACKAGE]      e.g. scripts/ensure-tool.sh tcpdump
#
# Prints the tool's path on success; exits 1 with the reason on stderr when it is not there and
# cannot be installed (the test then skips saying so).
set -u
tool=${1:?usage: ensure-tool.sh TOOL [PACKAGE]}
package=${2:-$tool}
find_tool() {
  command -v "$tool" 2>/dev/null && return 0
  for dir in /usr/sbin /sbin /usr/local/sbin; do
    [ -x "$dir/$tool" ] && { echo "$dir/$tool"; return 0; }
  done
  return 1
}
if find_tool; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-tool: no $tool and no apt-get to install $package" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "ensure-tool: $tool is missing and installing it needs root (apt-get install $package)" >&2
    exit 1
  fi
fi
echo "ensure-tool: installing Debian's $package with apt-get (once per machine)" >&2
if ! { $SUDO apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$package" >&2; }; then
  echo "ensure-tool: apt-get install $package failed" >&2
  exit 1
fi
find_tool || { echo "ensure-tool: $package installed but $tool not found" >&2; exit 1; }
