#!/usr/bin/env bash
# Every plugin this build makes loads into this build's toolhost: plugins are linked without
# -z defs (their Abseil comes from the executable, cmake/ToolhostAbsl.cmake), so this is where
# a symbol that nothing provides shows up, as the loader's message naming it.
# Usage: every_plugin_loads.sh TOOLHOST PLUGIN_DIR WORK_DIR
set -euo pipefail
toolhost=$1 plugin_dir=$2 work=$3
mkdir -p "$work"
printf 'plugin_dirs = ["%s"]\n' "$plugin_dir" > "$work/all-plugins.toml"
table=$("$toolhost" plugins --config "$work/all-plugins.toml")
built=$(find "$plugin_dir" -maxdepth 1 -name '*.so' | wc -l)
loaded=$(grep -cE ' loaded$' <<< "$table" || true)
if [[ "$built" -eq 0 || "$loaded" -ne "$built" ]] || grep -q '^Problems' <<< "$table"; then
  echo "$built plugins built, $loaded loaded:" >&2
  echo "$table" >&2
  exit 1
fi
echo "all $built plugins load"
