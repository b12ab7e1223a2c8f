#!/bin/sh
# `tailguard serve` refuses a bad configuration with the file, line and field, and exit code 2;
# a port already taken is a runtime failure, exit 1.
# Usage: serve_bad_config.sh TAILGUARD WORKDIR
set -u
tailguard=$1
dir=$2
mkdir -p "$dir"
cat >"$dir/bad.yaml" <<YAML
listen: 127.0.0.1:0
routes:
  - prefix: /v2/
    upstream: "127.0.0.1:99999"
YAML
"$tailguard" serve --config "$dir/bad.yaml" 2>&1
echo "exit=$?"
cat >"$dir/typo.yaml" <<YAML
listn: 127.0.0.1:0
routes:
  - prefix: /
    upstream: 127.0.0.1:8000
YAML
"$tailguard" serve --config "$dir/typo.yaml" 2>&1
echo "exit=$?"
"$tailguard" serve --config "$dir/missing.yaml" 2>&1
echo "exit=$?"
