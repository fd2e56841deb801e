#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium, which the report test renders the HTML
# report in, when it is missing. Needs root (CI runs as root); prints the binary's path.
#
#   hack/install-chromium.sh        # install if missing, print /usr/bin/chromium
set -euo pipefail

BIN=/usr/bin/chromium
if [ ! -x "$BIN" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-chromium: $BIN is missing and installing it needs root (apt-get install chromium)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # A lock held by another apt-get (a parallel install) is waited for, not an error.
  apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    chromium fonts-dejavu-core >&2
fi
echo "$BIN"
