#!/usr/bin/env bash
# The installed tree works like the build tree: `cmake --install` lays out toolhost, its plugins,
# the SDK headers and a CMake package; a plugin built outside this repository with
# find_package(toolhost) loads into the installed toolhost and answers a call.
# Usage: check_install.sh BUILD_DIR EXAMPLE_SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 example=$2 work=$3
rm -rf "$work"
mkdir -p "$work/outside"
prefix="$work/prefix"
# Under the loosest umask the installed tree still loads: toolhost refuses plugins and folders
# that others may write to, so the install sets its own modes.
(umask 000 && cmake --install "$build" --prefix "$prefix" >/dev/null)

# Test fixtures stay in the build tree.
for fixture in conformance bench-echo; do
  if [[ -e "$prefix/lib/toolhost/plugins/$fixture.so" ]]; then
    echo "the test fixture $fixture.so was installed" >&2
    exit 1
  fi
done

# Without --config, the installed toolhost finds the default installed beside it, and only it.
export XDG_CONFIG_HOME="$work/xdg" XDG_CONFIG_DIRS="$work/xdg-dirs" HOME="$work/home"
mkdir -p "$work/home/config" && echo 'plugin_dirs = ["/nonexistent"]' > "$work/home/config/toolhost.toml"
# The ISOLATION column says where the plugin runs: in process unless the isolated pass of the suite
# (TOOLHOST_ISOLATION=process, scripts/test) runs every plugin in a child, each server's in one.
isolation='none'
[[ "${TOOLHOST_ISOLATION:-}" == process ]] && isolation='process \(group isolated\)'
(cd "$work/home" && "$prefix/bin/toolhost" plugins) | grep -qE "^example +1\.0\.0 +1\.0 +loaded +$isolation +1 +-\$"

# The SDK says under which terms a plugin builds against it: the licence, and an SPDX line in
# every installed header.
test -f "$prefix/share/doc/toolhost/LICENSE"
for header in $(find "$prefix/include/toolhost" -name '*.h' -o -name '*.hpp'); do
  head -n 2 "$header" | grep -q 'SPDX-License-Identifier: Apache-2.0' || { echo "$header has no SPDX line" >&2; exit 1; }
done

# A plugin of its own, outside the repository: the example with another id and tool name.
sed -e 's/TOOLHOST_PLUGIN("example"/TOOLHOST_PLUGIN("outside"/' -e 's/plugin.tool("count")/plugin.tool("count_outside")/' \
    "$example/example.cpp" > "$work/outside/outside.cpp"
cat > "$work/outside/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(outside CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(toolhost 0.1 REQUIRED)
toolhost_add_plugin(outside outside.cpp)
CMAKE
# Built under umask 000 as well: toolhost_add_plugin takes group and other write off the library
# and its folder.
(umask 000 &&
  cmake -S "$work/outside" -B "$work/outside/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  cmake --build "$work/outside/build" >/dev/null)
test -f "$work/outside/build/plugins/outside.so"

cat > "$work/outside.toml" <<TOML
plugin_dirs = ["$work/outside/build/plugins"]
[servers.outside]
plugins = ["outside"]
TOML
table=$("$prefix/bin/toolhost" plugins --config "$work/outside.toml")
grep -qE "^outside +1\.0\.0 +1\.0 +loaded +$isolation +1 +-\$" <<< "$table"
grep -qE '^example\.count +allow +outside +Count numbers$' <<< "$table"
"$prefix/bin/toolhost" tools --config "$work/outside.toml" --server outside | grep -qE '^count_outside +outside +example\.count \(allow\) +Counts from 1'

reply=$(printf '%s\n' \
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}' \
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count_outside","arguments":{"to":3}}}' |
  timeout 20 "$prefix/bin/toolhost" --config "$work/outside.toml" --server outside 2>/dev/null)
echo "$reply" | grep -q '"id":2,"result":{"content":\[{"type":"text","text":"Counted to 3."}\],"structuredContent":{"counted":3,"completed":true}}'
echo "installed tree OK: toolhost, plugins, SDK and find_package(toolhost) all work"
rm -rf "$work"
