#!/usr/bin/env bash
# Copies the dashboards and the Prometheus rules (deploy/grafana, deploy/prometheus: the
# originals) into the chart, which can only package files under its own directory.
# The chart test fails while the copies differ.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$here/helm/kagent/dashboards" "$here/helm/kagent/files"
rm -f "$here/helm/kagent/dashboards/"*.json
cp "$here/deploy/grafana/"*.json "$here/helm/kagent/dashboards/"
cp "$here/deploy/prometheus/rules.yaml" "$here/helm/kagent/files/prometheus-rules.yaml"
echo "sync-chart-files: ok"
