#!/usr/bin/env bash
# End-to-end interop check of Iron's control plane against zenoh-ros2-sdk.
#
#   tests/interop/run_interop.sh            # binaries from target/debug
#   IRON_BIN=target/release tests/interop/run_interop.sh
#
# Starts `iron router` on a free loopback port and `demo_node` as /iron/demo
# (with INTEROP_PARAMS=1: from a params file that sets its `echo_prefix`, which the
# client must then read back as a parameter and see in the goal's result), then: golden hashes up to date; lifecycle get/set through every transition
# with transition_event observed; an AolTask goal with feedback and result; a
# canceled goal; malformed input on every lifecycle and action service; and a
# shutdown that must end the node process.  Prints PASS/FAIL per step; exits
# non-zero if any step failed.  Only the processes it started are stopped.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${IRON_BIN:-$ROOT/target/debug}"
case "$BIN" in /*) ;; *) BIN="$ROOT/$BIN" ;; esac
PY="${INTEROP_PYTHON:-${IRON_TEST_PYTHON:-$ROOT/.venv-test/bin/python}}"
NODE=/iron/demo
ACTION=/iron/demo/task
LOGDIR="$(mktemp -d "${TMPDIR:-/tmp}/iron-interop-run.XXXXXX")"
FAILED=0
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
}
trap cleanup EXIT

step() {  # step NAME CMD... : run, record PASS/FAIL
  local name="$1"; shift
  if "$@" >"$LOGDIR/$name.out" 2>"$LOGDIR/$name.err"; then
    echo "PASS $name"
  else
    echo "FAIL $name (exit $?; see $LOGDIR/$name.{out,err})"
    sed 's/^/    /' "$LOGDIR/$name.err" | tail -5
    FAILED=$((FAILED + 1))
  fi
}

expect_state() {  # expect_state LABEL
  local got
  got="$("$PY" "$HERE/lifecycle_client.py" --router "$ROUTER" --node "$NODE" get)" || return 1
  [ "$got" = "$1" ] || { echo "state is '$got', expected '$1'" >&2; return 1; }
}

lc() { "$PY" "$HERE/lifecycle_client.py" --router "$ROUTER" --node "$NODE" "$@"; }

set_and_expect() {  # set_and_expect TRANSITION LABEL
  local out
  out="$(lc set "$1")" || return 1
  [ "$out" = "true" ] || { echo "set $1 printed '$out'" >&2; return 1; }
  expect_state "$2"
}

goal_ok() {
  "$PY" "$HERE/action_client.py" --router "$ROUTER" --action "$ACTION" --instruction "interop hello" \
    >"$LOGDIR/goal.jsonl" || return 1
  grep -q '"feedback"' "$LOGDIR/goal.jsonl" || { echo "no feedback line" >&2; return 1; }
  tail -1 "$LOGDIR/goal.jsonl" | grep -q "\"text\": \"${PREFIX}interop hello\"" || { echo "unexpected result" >&2; return 1; }
}

goal_cancel() {
  "$PY" "$HERE/action_client.py" --router "$ROUTER" --action "$ACTION" --instruction "interop cancel" \
    --context-json '{"steps": 50, "step_ms": 100}' --cancel-after 0.5
}

events_ok() {  # the watcher must have printed 2 events per transition, 16 in all
  wait "$WATCH_PID" || return 1
  local n
  n="$(grep -c '"transition"' "$LOGDIR/events.jsonl")"
  [ "$n" -eq 16 ] || { echo "$n transition events, expected 16" >&2; return 1; }
}

shutdown_node() {
  local out
  out="$(lc set shutdown)" || return 1
  [ "$out" = "true" ] || { echo "set shutdown printed '$out'" >&2; return 1; }
}

node_exits() {
  for _ in $(seq 50); do kill -0 "$NODE_PID" 2>/dev/null || return 0; sleep 0.1; done
  echo "demo_node still running 5 s after shutdown" >&2; return 1
}

for b in iron demo_node; do
  [ -x "$BIN/$b" ] || { echo "missing $BIN/$b (build first)"; exit 2; }
done
[ -x "$PY" ] || { echo "missing $PY; run: python3 -m venv .venv-test && .venv-test/bin/pip install -r tests/requirements.txt (scripts/test.sh does this)"; exit 2; }

step golden_hashes "$PY" "$HERE/golden_hashes.py" --check

PORT="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
ROUTER="tcp/127.0.0.1:$PORT"
"$BIN/iron" router --listen "$ROUTER" >"$LOGDIR/router.log" 2>&1 & PIDS+=($!)
sleep 1
PREFIX="echo: "
PARAMS=()
if [ "${INTEROP_PARAMS:-}" = 1 ]; then
  PREFIX="installed: "
  printf '/iron/demo:\n  ros__parameters:\n    echo_prefix: "%s"\n' "$PREFIX" >"$LOGDIR/params.yaml"
  PARAMS=(--params-file "$LOGDIR/params.yaml")
fi
IRON_ROUTER="$ROUTER" "$BIN/demo_node" --ros-args -r __ns:=/iron -r __node:=demo "${PARAMS[@]}" >"$LOGDIR/demo_node.log" 2>&1 &
NODE_PID=$!; PIDS+=($NODE_PID)
echo "router $ROUTER, logs in $LOGDIR"

params_ok() {
  local out
  out="$("$PY" "$HERE/param_client.py" --router "$ROUTER" --node "$NODE" echo_prefix)" || return 1
  echo "$out"
  echo "$out" | grep -q "\"echo_prefix\": \"$PREFIX\"" || { echo "parameters: $out" >&2; return 1; }
}

step initial_state expect_state unconfigured
[ "${INTEROP_PARAMS:-}" = 1 ] && step parameters params_ok
lc --timeout 30 watch-events 16 >"$LOGDIR/events.jsonl" 2>"$LOGDIR/events.err" & WATCH_PID=$!
sleep 1.5
step configure set_and_expect configure inactive
step activate set_and_expect activate active
step deactivate set_and_expect deactivate inactive
step cleanup set_and_expect cleanup unconfigured
step configure_again set_and_expect configure inactive
step activate_again set_and_expect activate active
step action_goal goal_ok
step action_cancel goal_cancel
step malformed "$PY" "$HERE/malformed.py" --router "$ROUTER" --node "$NODE" --action "$ACTION"
step deactivate_again set_and_expect deactivate inactive
step shutdown shutdown_node
step node_exits node_exits
step transition_events events_ok

echo "$FAILED step(s) failed; logs in $LOGDIR"
exit $((FAILED > 0))
