#!/bin/sh
# Copy deploy/crds and deploy/dashboards into the Helm chart, which cannot reach
# outside its own directory. tests/unit/test_deploy_manifests.py fails when the
# copies differ from the originals; run this after changing either.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
chart="$root/deploy/helm/asyncsched"
for dir in crds dashboards; do
  mkdir -p "$chart/$dir"
  case $dir in crds) ext=yaml ;; dashboards) ext=json ;; esac
  find "$chart/$dir" -maxdepth 1 -name "*.$ext" -delete
  if [ -d "$root/deploy/$dir" ]; then
    find "$root/deploy/$dir" -maxdepth 1 -name "*.$ext" -exec cp {} "$chart/$dir/" \;
  fi
done
