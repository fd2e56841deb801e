#!/usr/bin/env bash
# Puts Debian's Prometheus (the `prometheus` package) into a cache outside the work
# tree, for the e2e tests that start a real Prometheus on loopback. Prints the bin dir.
#
#   hack/install-prometheus.sh            # fetch what is missing, print the bin dir
#
# The package is fetched with `apt-get download` and unpacked with `dpkg-deb -x`, not
# installed: no service is started and nothing outside the cache changes (but apt's
# package lists, fetched once as root on a machine that has none). Only the
# prometheus binary is used (Debian links it against libc alone). Cold: one 19 MB
# download from the Debian mirror (2 s here; 8.5 s with a first apt-get update);
# afterwards it returns at once.
# ASYNCSCHED_PROMETHEUS=/path/to/prometheus uses that binary instead.
set -euo pipefail

CACHE="${ASYNCSCHED_CACHE:-$HOME/.cache/asyncsched}"
DEST="$CACHE/bin/prometheus-debian"

if [ -n "${ASYNCSCHED_PROMETHEUS:-}" ]; then
  [ -x "$ASYNCSCHED_PROMETHEUS" ] || { echo "install-prometheus: ASYNCSCHED_PROMETHEUS=$ASYNCSCHED_PROMETHEUS is not an executable" >&2; exit 1; }
  dirname "$ASYNCSCHED_PROMETHEUS"
  exit 0
fi
if [ -x "$DEST/prometheus" ]; then echo "$DEST"; exit 0; fi

mkdir -p "$CACHE/bin"
exec 9>"$CACHE/.prometheus.lock"
flock 9
if [ -x "$DEST/prometheus" ]; then echo "$DEST"; exit 0; fi

log() { echo "install-prometheus: $*" >&2; }
for tool in apt-get dpkg-deb; do
  command -v "$tool" >/dev/null 2>&1 || { log "needs $tool (a Debian or Ubuntu machine), or set ASYNCSCHED_PROMETHEUS"; exit 1; }
done

work=$(mktemp -d "$CACHE/prometheus.XXXXXX")
trap 'rm -rf "$work"' EXIT
# As root apt fetches as user _apt, who cannot write into $HOME: fetch as the caller.
fetch() { (cd "$work" && apt-get -o APT::Sandbox::User=root download prometheus >&2); }
if ! fetch; then
  # A fresh machine may have no package lists yet; only root can fetch them.
  if [ "$(id -u)" = 0 ]; then
    log "apt-get download failed; updating the package lists once"
    apt-get update >&2
    fetch
  else
    log "apt-get download prometheus failed; run 'apt-get update' as root, or set ASYNCSCHED_PROMETHEUS"
    exit 1
  fi
fi
dpkg-deb -x "$work"/prometheus_*.deb "$work/root"
mkdir -p "$DEST.tmp"
cp "$work/root/usr/bin/prometheus" "$DEST.tmp/"
"$DEST.tmp/prometheus" --version >&2
rm -rf "$DEST" && mv "$DEST.tmp" "$DEST"
echo "$DEST"
