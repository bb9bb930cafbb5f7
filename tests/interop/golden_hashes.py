#!/usr/bin/env python3
"""Golden RIHS01 type hashes for Iron's interfaces, from an independent hasher.

Every hash here is computed by the RIHS01 code of the PyPI package
``zenoh-ros2-sdk`` (``zenoh_ros2_sdk.utils``), not by Iron or hiroz:

* messages: ``compute_type_hash_from_msg`` with the dependencies its own
  ``load_dependencies_recursive`` finds in the local message directory;
* services: ``compute_service_type_hash``.  The SDK builds the whole type map
  (``X_Request``, ``X_Response``, ``X_Event`` with ``service_msgs/ServiceEventInfo``
  and ``builtin_interfaces/Time``) internally and only returns the service hash;
  we observe that map (by wrapping ``_extract_full_type_description`` during the
  call) and hash the ``_Request``/``_Response``/``_Event`` entries with the
  SDK's ``_extract_full_type_description`` + ``_calculate_type_hash``.
  The SDK rejects a service whose request or response has no fields (e.g.
  ``lifecycle_msgs/srv/GetState``); such a part is passed as a comment-only
  definition, which the SDK parses to zero fields and pads with
  ``structure_needs_at_least_one_member: uint8`` exactly as rosidl does.
* actions: the SDK has no action support, so they are composed as rosidl does:
  ``X_Goal``/``X_Result``/``X_Feedback`` are the three sections of ``X.action``;
  ``X_FeedbackMessage`` is ``{goal_id: unique_identifier_msgs/UUID, feedback: X_Feedback}``;
  ``X_SendGoal`` is a service with request ``{goal_id, goal: X_Goal}`` and
  response ``{accepted: bool, stamp: builtin_interfaces/Time}``; ``X_GetResult``
  is a service with request ``{goal_id}`` and response ``{status: int8,
  result: X_Result}``.  The two services are hashed by the SDK's service hasher;
  because it hard-codes ``<pkg>/srv/`` in the names of the parts, the parts in
  its type map are renamed to ``<pkg>/action/`` before hashing.  The action type
  itself is ``{goal, result, feedback, send_goal_service, get_result_service,
  feedback_message}``, all nested types.

Validation (run on every invocation, exit 2 on failure):
* ``action_msgs/srv/CancelGoal`` must hash to the value ROS uses;
* a public action (3 float32 goal fields, 1 bool result, 1 float32 feedback)
  whose 13 rosidl-generated hashes are recorded below must be reproduced by the
  composition above;
* the SDK's built-in ServiceEventInfo/UUID/Time descriptions must hash to the
  values rosidl records for them.

Usage:
    golden_hashes.py            # (re)write golden_type_hashes.json
    golden_hashes.py --check    # exit 1 if golden_type_hashes.json is stale
    golden_hashes.py --print    # print the table, write nothing
"""

from __future__ import annotations

import argparse
import copy
import json
import sys

import interop_common as ic
from interop_common import sdk_utils

EMPTY_PLACEHOLDER = "# (no fields)\n"

KNOWN_CANCEL_GOAL = "RIHS01_573d8b0a534451d7bc2ac8c5ffde8ac14b8593b7001175d0cd6516dcbeb8689a"

# Validation vector: a public rosidl-generated action (Jazzy), 'pkg/action/Robot'.
VECTOR_PKG, VECTOR_NAME = "action_interface", "Robot"
VECTOR_ACTION = """float32 v_x
float32 w_z
float32 drive_time
---
bool complete
---
float32 percent_complete
"""
VECTOR_HASHES = {
    "": "a9ce30d15eac1be29293ca8cb9d93d8508c12d25c1c12ecd5b0324f8b3abe170",
    "_Goal": "1d158c99d62fcbd045e273e790d3d02c4da243e72f5469d355801a1b3d0228f6",
    "_Result": "539f3f1581d0cbbdbd2aef6a9002cb46415e0abd0e13c1c1d2cea5d8c38ff8ab",
    "_Feedback": "665ba93aba0b2dbf62787affcd3c56d1469165918e8ded3c8f64eaa78a0331a2",
    "_SendGoal": "a730a044ea9337e18872f217680af0970e25dd7768f78267e346f7198212de35",
    "_SendGoal_Request": "a5c8d275bd328d61b8b578f62bf1f864a2c46654281880ab3e36e78092d5e5c7",
    "_SendGoal_Response": "7ce89fffc375c30c9c14bab533a5c0ee08b98e48f640570ae8ce242e5770471b",
    "_SendGoal_Event": "1b42804e2d86cc02efeefc3d5023e6145887aa6881d7b6d1aa489a6fde324935",
    "_GetResult": "2d26d6e8299fafb4530a9a7f7901cec759fcffc9d766c858da47072300eda00d",
    "_GetResult_Request": "585918498cbf06f0421e53f3df54962e3e3201fc584b11b5cb5e100858291805",
    "_GetResult_Response": "e0387757e3ff274ee8a6aff2d1339ce986dc3c20537e180d57c40da38d673d13",
    "_GetResult_Event": "6e0eef245e8a3847f003cfe7eee01c1cfab5508f6525d1019a7ec967de508f58",
    "_FeedbackMessage": "50dfa96f0255adcc46c0e4517fa757f2090bff34b75b7a6055de4f4b1d994b8d",
}
VECTOR_REFERENCED = {
    "service_msgs/msg/ServiceEventInfo": "41bcbbe07a75c9b52bc96bfd5c24d7f0fc0a08c0cb7921b3373c5732345a6f45",
    "unique_identifier_msgs/msg/UUID": "1b8e8aca958cbea28fe6ef60bf6c19b683c97a9ef60bb34752067d0f2f7ab437",
    "builtin_interfaces/msg/Time": "b106235e25a4c5ed35098aa0a61a3ee9c9b18d197f398b0e4206cea9acf9c197",
}

STANDARD_MESSAGES = [
    "action_msgs/msg/GoalInfo",
    "action_msgs/msg/GoalStatus",
    "action_msgs/msg/GoalStatusArray",
    "builtin_interfaces/msg/Time",
    "lifecycle_msgs/msg/State",
    "lifecycle_msgs/msg/Transition",
    "lifecycle_msgs/msg/TransitionDescription",
    "lifecycle_msgs/msg/TransitionEvent",
    "rcl_interfaces/msg/Log",
    "unique_identifier_msgs/msg/UUID",
]
STANDARD_SERVICES = [
    "action_msgs/srv/CancelGoal",
    "lifecycle_msgs/srv/ChangeState",
    "lifecycle_msgs/srv/GetAvailableStates",
    "lifecycle_msgs/srv/GetAvailableTransitions",
    "lifecycle_msgs/srv/GetState",
    "rcl_interfaces/srv/GetParameters",
    "rcl_interfaces/srv/ListParameters",
]


class ValidationError(Exception):
    pass


def _has_fields(definition: str) -> bool:
    return bool(sdk_utils._parse_msg_definition(definition))


def _dependencies(type_name: str, definition: str) -> dict[str, str]:
    """The SDK's recursive dependency loader, plus a closure check.

    The SDK silently leaves out a nested type it cannot find, which would give a
    wrong hash; refuse instead.
    """
    deps = sdk_utils.load_dependencies_recursive(type_name, definition, ic.REGISTRY)
    todo = [(type_name, definition)] + list(deps.items())
    for owner, text in todo:
        for nested in ic.REGISTRY._extract_dependencies(text, owner):
            if nested not in deps and nested != type_name:
                raise ValidationError(f"{owner}: nested type {nested} has no local definition")
    return deps


def message_hash(type_name: str, definition: str | None = None) -> str:
    if definition is None:
        definition = ic.read_definition(type_name)
    deps = _dependencies(type_name, definition)
    return sdk_utils.compute_type_hash_from_msg(type_name, definition, deps)


def _rename(type_map: dict, old_prefix: str, new_prefix: str) -> dict:
    names = {old_prefix + s: new_prefix + s for s in ("", "_Request", "_Response", "_Event")}
    out = {}
    for key, desc in copy.deepcopy(type_map).items():
        desc["type_name"] = names.get(desc["type_name"], desc["type_name"])
        for field in desc["fields"]:
            nested = field["type"]["nested_type_name"]
            field["type"]["nested_type_name"] = names.get(nested, nested)
        out[names.get(key, key)] = desc
    return out


def _hash_in_map(type_name: str, type_map: dict) -> str:
    return sdk_utils._calculate_type_hash(sdk_utils._extract_full_type_description(type_name, type_map))


def service_hashes(srv_type: str, request: str, response: str) -> tuple[dict[str, str], dict]:
    """Hashes of a service (or action service part) and its Request/Response/Event."""
    pkg, kind, name = srv_type.split("/")
    sdk_name = f"{pkg}/srv/{name}"  # the SDK always names the parts <pkg>/srv/<name>_*
    deps = {
        **_dependencies(f"{srv_type}_Request", request),
        **_dependencies(f"{srv_type}_Response", response),
    }
    captured: dict = {}
    original = sdk_utils._extract_full_type_description

    def spy(type_name, type_map, *args, **kwargs):
        if type_name == sdk_name and not captured:
            captured.update(copy.deepcopy(type_map))
        return original(type_name, type_map, *args, **kwargs)

    sdk_utils._extract_full_type_description = spy
    try:
        sdk_service_hash = sdk_utils.compute_service_type_hash(
            sdk_name,
            request if _has_fields(request) else EMPTY_PLACEHOLDER,
            response if _has_fields(response) else EMPTY_PLACEHOLDER,
            deps,
        )
    finally:
        sdk_utils._extract_full_type_description = original
    if not captured:
        raise ValidationError(f"{srv_type}: could not observe the SDK's service type map")

    type_map = captured if kind == "srv" else _rename(captured, sdk_name, srv_type)
    out = {srv_type + s: _hash_in_map(srv_type + s, type_map) for s in ("", "_Request", "_Response", "_Event")}
    if kind == "srv" and out[srv_type] != sdk_service_hash:
        raise ValidationError(f"{srv_type}: map-derived hash differs from compute_service_type_hash")
    # The message hasher must agree with the service map on the request/response parts.
    for part, text in (("_Request", request), ("_Response", response)):
        direct = sdk_utils.compute_type_hash_from_msg(srv_type + part, text, deps)
        if direct != out[srv_type + part]:
            raise ValidationError(f"{srv_type}{part}: message hasher {direct} != service map {out[srv_type + part]}")
    return out, type_map


def _fields(definition: str) -> list[dict]:
    fields = sdk_utils._parse_msg_definition(definition)
    if not fields:
        fields = [{"name": sdk_utils.EMPTY_STRUCTURE_REQUIRED_MEMBER_NAME, "type": "uint8",
                   "is_array": False, "array_size": 0}]
    return fields


def action_hashes(pkg: str, name: str, text: str) -> tuple[dict[str, str], dict]:
    base = f"{pkg}/action/{name}"
    parts = ic.action_part_definitions(pkg, name, text)
    out: dict[str, str] = {}
    type_map: dict = {}
    for suffix in ("_Goal", "_Result", "_Feedback", "_FeedbackMessage"):
        t = base + suffix
        out[t] = message_hash(t, parts[t])
        type_map[t] = sdk_utils._serialize_type_description(t, _fields(parts[t]))
        for dep, dep_text in _dependencies(t, parts[t]).items():
            type_map.setdefault(dep, sdk_utils._serialize_type_description(dep, _fields(dep_text)))
    for svc in ("_SendGoal", "_GetResult"):
        t = base + svc
        hashes, svc_map = service_hashes(t, parts[t + "_Request"], parts[t + "_Response"])
        out.update(hashes)
        for key, desc in svc_map.items():
            type_map.setdefault(key, desc)
    members = [("goal", "_Goal"), ("result", "_Result"), ("feedback", "_Feedback"),
               ("send_goal_service", "_SendGoal"), ("get_result_service", "_GetResult"),
               ("feedback_message", "_FeedbackMessage")]
    type_map[base] = sdk_utils._serialize_type_description(
        base,
        [{"name": m, "type": base + s, "is_array": False, "array_size": 0} for m, s in members],
    )
    out[base] = _hash_in_map(base, type_map)
    return out, type_map


def validate() -> list[str]:
    """Check the SDK hasher and our composition against known rosidl values."""
    notes = []
    cancel, cancel_map = service_hashes("action_msgs/srv/CancelGoal", *ic.read_service("action_msgs/srv/CancelGoal"))
    if cancel["action_msgs/srv/CancelGoal"] != KNOWN_CANCEL_GOAL:
        raise ValidationError(f"CancelGoal: SDK gives {cancel['action_msgs/srv/CancelGoal']}, ROS uses {KNOWN_CANCEL_GOAL}")
    notes.append("action_msgs/srv/CancelGoal matches the known ROS hash")

    ic.build_message_dir(ic.MESSAGE_DIR, {(VECTOR_PKG, VECTOR_NAME): VECTOR_ACTION})
    got, vec_map = action_hashes(VECTOR_PKG, VECTOR_NAME, VECTOR_ACTION)
    base = f"{VECTOR_PKG}/action/{VECTOR_NAME}"
    for suffix, want in VECTOR_HASHES.items():
        if got[base + suffix] != "RIHS01_" + want:
            raise ValidationError(f"{base}{suffix}: composed {got[base + suffix]}, rosidl RIHS01_{want}")
    for t, want in VECTOR_REFERENCED.items():
        mine = _hash_in_map(t, vec_map)
        if mine != "RIHS01_" + want:
            raise ValidationError(f"{t}: SDK description hashes to {mine}, rosidl RIHS01_{want}")
    notes.append(f"action composition reproduces all {len(VECTOR_HASHES)} rosidl hashes of the validation action")
    return notes


def compute_all() -> dict[str, str]:
    out: dict[str, str] = {}
    ours = ic.our_interfaces()
    for name in ours["msg"]:
        t = f"{ic.PACKAGE}/msg/{name}"
        out[t] = message_hash(t)
    for name in ours["srv"]:
        t = f"{ic.PACKAGE}/srv/{name}"
        out.update(service_hashes(t, *ic.read_service(t))[0])
    for name in ours["action"]:
        text = (ic.REPO / "action" / f"{name}.action").read_text()
        out.update(action_hashes(ic.PACKAGE, name, text)[0])
    for t in STANDARD_MESSAGES:
        out[t] = message_hash(t)
    for t in STANDARD_SERVICES:
        out.update(service_hashes(t, *ic.read_service(t))[0])
    return dict(sorted(out.items()))


def render(hashes: dict[str, str]) -> str:
    return json.dumps(hashes, indent=2, sort_keys=True) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if the checked-in JSON is stale")
    ap.add_argument("--print", action="store_true", help="print the table only")
    args = ap.parse_args()
    try:
        notes = validate()
        hashes = compute_all()
    except ValidationError as exc:
        print(f"golden_hashes: validation failed: {exc}", file=sys.stderr)
        return 2
    for note in notes:
        print(f"ok: {note}", file=sys.stderr)
    text = render(hashes)
    if args.print:
        sys.stdout.write(text)
        return 0
    if args.check:
        current = ic.GOLDEN_FILE.read_text() if ic.GOLDEN_FILE.exists() else ""
        if current != text:
            old = json.loads(current) if current else {}
            for key in sorted(set(old) | set(hashes)):
                if old.get(key) != hashes.get(key):
                    print(f"stale: {key}: file {old.get(key)} computed {hashes.get(key)}", file=sys.stderr)
            print(f"{ic.GOLDEN_FILE.name} is stale; run tests/interop/golden_hashes.py", file=sys.stderr)
            return 1
        print(f"{ic.GOLDEN_FILE.name} is up to date ({len(hashes)} hashes, zenoh-ros2-sdk {ic.SDK_VERSION})",
              file=sys.stderr)
        return 0
    ic.GOLDEN_FILE.write_text(text)
    print(f"wrote {ic.GOLDEN_FILE} ({len(hashes)} hashes, zenoh-ros2-sdk {ic.SDK_VERSION})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
