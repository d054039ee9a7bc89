#!/bin/sh
# Makes sure Debian's python3-boto3 (an S3 client independent of minimr's, for the s3:// store's
# cross-check tests) is importable by Debian's own /usr/bin/python3, installing it with apt-get when
# missing. A pyenv or virtualenv python3 earlier on PATH is deliberately not used: its packages are not
# Debian's. Prints the interpreter's path on success; exits 1 saying why otherwise (the test then skips).
set -u
python=/usr/bin/python3
if [ -x "$python" ] && "$python" -c 'import boto3' 2>/dev/null; then echo "$python"; exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-boto3: no python3-boto3 and no apt-get to install it" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    echo "ensure-boto3: python3-boto3 is missing and installing it needs root" >&2
    exit 1
  fi
fi
echo "ensure-boto3: installing Debian's python3-boto3 with apt-get (once per machine)" >&2
# DPkg::Lock::Timeout: another test may be installing its own tool at the same time.
if ! { $SUDO apt-get -o DPkg::Lock::Timeout=120 update -qq >&2 &&
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=120 install -y -qq \
    --no-install-recommends python3-boto3 >&2; }; then
  echo "ensure-boto3: apt-get install python3-boto3 failed" >&2
  exit 1
fi
"$python" -c 'import boto3' || { echo "ensure-boto3: python3-boto3 installed but not importable" >&2; exit 1; }
echo "$python"
