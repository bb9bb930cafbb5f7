#!/usr/bin/env bash
# The real `colcon build` of the package, with the parts of the ROS 2 tool chain these
# machines can install (Debian: ament-cmake, rosidl-cmake, rosidl-generator-c-cpp,
# python3-rosidl, colcon, python3-colcon-ros), in a throwaway workspace next to the
# standard interface packages it depends on (tests/ros/std_packages.py). Then checks the
# install tree, that ament_index_python finds the package and its share directory, and that
# the independent rmw_zenoh client drives a node started from the installed tree, with a
# parameter from a params file in effect and visible (tests/interop/run_interop.sh).
#
#   tests/ros/colcon_check.sh            # reuses target/ with the test build's profile
#
# The cargo step reuses the test build (profile dev, feature test-support, this target/) so
# nothing is compiled twice; a user's build is `colcon build` with the release defaults.
# Prints PASS/FAIL per check; exits non-zero if any failed.
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
ROS_PY=/usr/bin/python3
WS="$(mktemp -d "${TMPDIR:-/tmp}/iron-colcon.XXXXXX")"
trap 'rm -rf "$WS"' EXIT
FAILED=0

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1${2:+: $2}"; FAILED=$((FAILED + 1)); }

command -v colcon >/dev/null || { echo "colcon is missing: apt-get install colcon python3-colcon-ros ament-cmake rosidl-cmake rosidl-generator-c-cpp python3-rosidl g++ (scripts/test.sh does)"; exit 2; }

"$ROS_PY" "$HERE/std_packages.py" "$WS/std" >/dev/null || { echo "cannot write the standard packages"; exit 2; }
if (cd "$WS" && colcon build --base-paths "$WS/std" "$ROOT" \
      --build-base "$WS/build" --install-base "$WS/install" --event-handlers console_direct- \
      --cmake-args -DPython3_EXECUTABLE="$ROS_PY" -DIRON_CARGO_PROFILE=dev \
        -DIRON_CARGO_FEATURES=test-support -DIRON_CARGO_TARGET_DIR="$ROOT/target") \
      >"$WS/colcon.log" 2>&1; then
  pass colcon_build
else
  fail colcon_build "$(tail -30 "$WS/colcon.log")"
  exit 1
fi

PREFIX="$WS/install/iron"
# Every executable the launch list starts, and the iron CLI the launch file runs.
missing=""
for exe in iron $("$ROS_PY" -c 'import sys, yaml; print(" ".join(sorted({n["executable"] for n in yaml.safe_load(open(sys.argv[1]))["nodes"]})))' "$ROOT/launch/bringup.yaml"); do
  [ -x "$PREFIX/lib/iron/$exe" ] || missing="$missing $exe"
done
[ -z "$missing" ] && pass executables || fail executables "missing in lib/iron:$missing"
for f in share/iron/launch/bringup.launch.py share/iron/launch/bringup.yaml share/iron/package.xml \
         share/iron/config/iron.yaml share/iron/aem/newsroom/AEM.md \
         share/ament_index/resource_index/packages/iron \
         include/iron/iron/action/aol_task.h include/iron/iron/srv/decide_hunks.hpp; do
  [ -e "$PREFIX/$f" ] || missing="$missing $f"
done
[ -z "$missing" ] && pass share_tree || fail share_tree "missing:$missing"

found="$(AMENT_PREFIX_PATH="$PREFIX" "$ROS_PY" -c '
from ament_index_python.packages import get_package_prefix, get_package_share_directory
print(get_package_prefix("iron")); print(get_package_share_directory("iron"))')"
[ "$found" = "$PREFIX
$PREFIX/share/iron" ] && pass ament_index || fail ament_index "found: $found"

# The launch file, as installed, finds its list and the installed iron through the index.
plan="$(AMENT_PREFIX_PATH="$PREFIX" "$ROS_PY" "$HERE/launch_plan.py" --launch "$PREFIX/share/iron/launch/bringup.launch.py" 2>&1)"
echo "$plan" | grep -q "\"$PREFIX/lib/iron/iron\"" && pass installed_launch_file || fail installed_launch_file "$(echo "$plan" | head -20)"

# The independent client drives the installed demo node, started with a params file.
if IRON_BIN="$PREFIX/lib/iron" INTEROP_PARAMS=1 bash "$ROOT/tests/interop/run_interop.sh" >"$WS/interop.log" 2>&1; then
  pass installed_interop
else
  fail installed_interop "$(grep -E 'FAIL|missing' "$WS/interop.log" | head -10)"
fi

echo "$FAILED check(s) failed"
exit $((FAILED > 0))
