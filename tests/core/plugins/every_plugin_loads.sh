#!/usr/bin/env bash
# Every plugin this build makes loads into this build's toolhost: plugins are linked without
# -z defs (their Abseil comes from the executable, cmake/ToolhostAbsl.cmake), so this is where
# a symbol that nothing provides shows up, as the loader's message naming it.
# Usage: every_plugin_loads.sh TOOLHOST WORK_DIR PLUGIN_DIR...
set -euo pipefail
toolhost=$1 work=$2
shift 2
mkdir -p "$work"
dirs=$(printf '"%s", ' "$@")
printf 'plugin_dirs = [%s]\n' "${dirs%, }" > "$work/all-plugins.toml"
table=$("$toolhost" plugins --config "$work/all-plugins.toml" --json)
built=$(find "$@" -maxdepth 1 -name '*.so' | wc -l)
loaded=$(python3 -c 'import json, sys; print(sum(p["status"] == "loaded" for p in json.load(sys.stdin)["plugins"]))' <<< "$table")
problems=$(python3 -c 'import json, sys; print(len(json.load(sys.stdin)["problems"]))' <<< "$table")
if [[ "$built" -eq 0 || "$loaded" -ne "$built" || "$problems" -ne 0 ]]; then
  echo "$built plugins built, $loaded loaded:" >&2
  echo "$table" >&2
  exit 1
fi
echo "all $built plugins load"
