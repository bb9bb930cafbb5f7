#!/usr/bin/env python3
"""Send an iron/action/AolTask goal the way rclpy's ActionClient does, via zenoh-ros2-sdk.

    action_client.py --router tcp/127.0.0.1:7447 --action /iron/demo/task --instruction "say hi"
    action_client.py --router ... --action /iron/demo/task --instruction "..." --cancel-after 0.5

zenoh-ros2-sdk has no action support, so the action protocol is composed from
its service client and subscriber, with the same names and types rclpy uses:

    <action>/_action/send_goal    service  iron/action/AolTask_SendGoal
    <action>/_action/get_result   service  iron/action/AolTask_GetResult
    <action>/_action/cancel_goal  service  action_msgs/srv/CancelGoal
    <action>/_action/feedback     topic    iron/action/AolTask_FeedbackMessage
    <action>/_action/status       topic    action_msgs/msg/GoalStatusArray

Sequence (as rclpy): subscribe feedback and status, send the goal with a fresh
UUID, and once accepted ask for the result immediately; optionally cancel the
goal after S seconds (CancelGoal with that goal id and a zero stamp).

stdout: one JSON line per feedback for our goal, ``{"feedback": {...}}``, then
one line ``{"result": {...}, "status": <int8>, "status_label": "..."}``.
stderr: acceptance, status changes, the cancel response, diagnostics.

Exit status: 0 when the final status is the expected one (``succeeded``, or
``canceled`` with --cancel-after, or whatever --expect-status names); 1 when the
goal is rejected, the cancel is refused or the final status differs; 3 on any
timeout or error reply.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid

import numpy as np

import interop_common as ic

GOAL_STATUS = {0: "unknown", 1: "accepted", 2: "executing", 3: "canceling",
               4: "succeeded", 5: "canceled", 6: "aborted"}
CANCEL_CODES = {0: "ERROR_NONE", 1: "ERROR_REJECTED", 2: "ERROR_UNKNOWN_GOAL_ID", 3: "ERROR_GOAL_TERMINATED"}


def note(obj) -> None:
    import json

    print(json.dumps(obj, sort_keys=True), file=sys.stderr, flush=True)


class ActionClient:
    def __init__(self, router: str, action: str, action_type: str, timeout: float, result_timeout: float,
                 discovery_timeout: float):
        self.router = router
        self.action = action.rstrip("/")
        self.type = action_type
        self.timeout = timeout
        self.discovery_timeout = discovery_timeout
        ic.open_session(router)
        g = ic.golden()
        base = f"{self.action}/_action"
        self.names = {
            "send_goal": (f"{base}/send_goal", f"{action_type}_SendGoal", "SS"),
            "get_result": (f"{base}/get_result", f"{action_type}_GetResult", "SS"),
            "cancel_goal": (f"{base}/cancel_goal", "action_msgs/srv/CancelGoal", "SS"),
            "feedback": (f"{base}/feedback", f"{action_type}_FeedbackMessage", "MP"),
            "status": (f"{base}/status", "action_msgs/msg/GoalStatusArray", "MP"),
        }
        self.problems = []
        for key, (name, type_name, kind) in self.names.items():
            if key == "feedback":
                continue  # a server may declare its feedback publisher lazily; checked after the goal
            problem = ic.wait_for_endpoint(kind, name, type_name, g[type_name], discovery_timeout)
            if problem:
                self.problems.append(problem)
                print(f"warning: discovery: {problem}", file=sys.stderr, flush=True)
        self.send_goal = ic.service_client(*self.names["send_goal"][:2], timeout, router)
        self.get_result = ic.service_client(*self.names["get_result"][:2], result_timeout, router)
        self.cancel_goal = ic.service_client(*self.names["cancel_goal"][:2], timeout, router)
        self._subs = []

    def subscribe(self, key: str, callback):
        from zenoh_ros2_sdk import ROS2Subscriber

        name, type_name, _ = self.names[key]
        ic.register_type(type_name)
        host, port = ic.parse_endpoint(self.router)
        sub = ROS2Subscriber(name, type_name, callback, node_name=ic.CLIENT_NODE, domain_id=ic.DOMAIN_ID,
                             router_ip=host, router_port=port, type_hash=ic.golden()[type_name])
        self._subs.append(sub)
        return sub

    def close(self):
        for s in self._subs:
            s.close()


def uuid_msg(goal_uuid: bytes):
    cls = ic.message_class("unique_identifier_msgs/msg/UUID")
    return cls(uuid=np.frombuffer(goal_uuid, dtype=np.uint8).copy())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--router", required=True, help="router endpoint, tcp/HOST:PORT")
    ap.add_argument("--action", required=True, help="action name, e.g. /iron/demo/task")
    ap.add_argument("--action-type", default="iron/action/AolTask")
    ap.add_argument("--instruction", required=True)
    ap.add_argument("--task-id", default=None, help="default: a fresh UUID string")
    ap.add_argument("--session-id", default="")
    ap.add_argument("--domain", default="")
    ap.add_argument("--depth", type=int, default=0)
    ap.add_argument("--parent-task-id", default="")
    ap.add_argument("--context-json", default="{}")
    ap.add_argument("--cancel-after", type=float, default=None, metavar="S",
                    help="cancel the goal S seconds after it is accepted")
    ap.add_argument("--cancel-all", action="store_true",
                    help="with --cancel-after: send the cancel with a zero goal id and zero stamp (cancel all goals)")
    ap.add_argument("--expect-status", choices=sorted(GOAL_STATUS.values()), default=None,
                    help="final goal status that counts as success (default: succeeded, or canceled with --cancel-after)")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds for send_goal / cancel replies (default 10)")
    ap.add_argument("--result-timeout", type=float, default=60.0, help="seconds to wait for the result (default 60)")
    ap.add_argument("--discovery-timeout", type=float, default=3.0)
    args = ap.parse_args(argv)
    expect = args.expect_status or ("canceled" if args.cancel_after is not None else "succeeded")

    try:
        client = ActionClient(args.router, args.action, args.action_type, args.timeout, args.result_timeout,
                              args.discovery_timeout)
    except ic.CallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3

    goal_uuid = uuid.uuid4().bytes
    out_lock = threading.Lock()
    feedback_count = [0]
    last_status = [None]

    def on_feedback(msg):
        if bytes(np.asarray(msg.goal_id.uuid, dtype=np.uint8)) != goal_uuid:
            return
        with out_lock:
            feedback_count[0] += 1
            ic.emit({"feedback": ic.to_jsonable(msg.feedback)})

    def on_status(msg):
        for st in msg.status_list:
            if bytes(np.asarray(st.goal_info.goal_id.uuid, dtype=np.uint8)) == goal_uuid:
                code = int(st.status)
                if code != last_status[0]:
                    last_status[0] = code
                    note({"status": GOAL_STATUS.get(code, code)})

    client.subscribe("feedback", on_feedback)
    client.subscribe("status", on_status)
    time.sleep(0.3)  # let the router propagate the subscriptions before the goal starts

    goal_cls = ic.message_class(f"{args.action_type}_Goal")
    goal = goal_cls(
        task_id=args.task_id or str(uuid.uuid4()),
        session_id=args.session_id,
        domain=args.domain,
        instruction=args.instruction,
        depth=args.depth,
        parent_task_id=args.parent_task_id,
        context_json=args.context_json,
    )
    try:
        resp = ic.call(client.send_goal, args.timeout, goal_id=uuid_msg(goal_uuid), goal=goal)
    except ic.CallError as exc:
        print(f"error: send_goal: {exc}", file=sys.stderr)
        return 3
    note({"goal_id": goal_uuid.hex(), "accepted": bool(resp.accepted),
          "stamp": {"sec": int(resp.stamp.sec), "nanosec": int(resp.stamp.nanosec)}})
    if not resp.accepted:
        print("error: goal rejected", file=sys.stderr)
        return 1

    # rclpy asks for the result as soon as the goal is accepted.
    result_box = ic.Waiter()
    client.get_result.call_async(result_box.put, goal_id=uuid_msg(goal_uuid))

    problem = ic.wait_for_endpoint("MP", *client.names["feedback"][:2],
                                   ic.golden()[client.names["feedback"][1]], 0.5)
    cancel_ok = [None]
    cancel_started = threading.Event()

    def do_cancel():
        cancel_started.set()
        info_cls = ic.message_class("action_msgs/msg/GoalInfo")
        time_cls = ic.message_class("builtin_interfaces/msg/Time")
        try:
            target = bytes(16) if args.cancel_all else goal_uuid
            cresp = ic.call(client.cancel_goal, args.timeout,
                            goal_info=info_cls(goal_id=uuid_msg(target), stamp=time_cls(sec=0, nanosec=0)))
        except ic.CallError as exc:
            print(f"error: cancel_goal: {exc}", file=sys.stderr)
            cancel_ok[0] = False
            return
        ids = [bytes(np.asarray(g.goal_id.uuid, dtype=np.uint8)).hex() for g in cresp.goals_canceling]
        code = int(cresp.return_code)
        note({"cancel": {"return_code": code, "return_code_label": CANCEL_CODES.get(code, str(code)),
                         "goals_canceling": ids}})
        cancel_ok[0] = code == 0 and goal_uuid.hex() in ids

    canceller = None
    if args.cancel_after is not None:
        canceller = threading.Timer(args.cancel_after, do_cancel)
        canceller.daemon = True
        canceller.start()

    try:
        result = result_box.get(args.result_timeout)
    except TimeoutError:
        print(f"error: no get_result reply within {args.result_timeout:.1f}s", file=sys.stderr)
        if problem:
            print(f"warning: discovery: {problem}", file=sys.stderr)
        return 3
    if result is None:
        print("error: get_result answered with an error reply or an undecodable payload", file=sys.stderr)
        return 3
    if canceller is not None:
        if cancel_started.is_set():
            canceller.join(args.timeout + 1)
        else:
            canceller.cancel()
            print("note: the result arrived before the cancel was sent", file=sys.stderr)
    time.sleep(0.1)  # feedback published just before the result may still be in flight
    code = int(result.status)
    with out_lock:
        ic.emit({"result": ic.to_jsonable(result.result), "status": code,
                 "status_label": GOAL_STATUS.get(code, str(code))})
    if feedback_count[0] == 0:
        print("warning: no feedback received for this goal" + (f" ({problem})" if problem else ""),
              file=sys.stderr)
    client.close()
    if args.cancel_after is not None and cancel_ok[0] is False:
        print("error: cancel request was not accepted for this goal", file=sys.stderr)
        return 1 if GOAL_STATUS.get(code) != expect else 0
    return 0 if GOAL_STATUS.get(code) == expect else 1


if __name__ == "__main__":
    try:
        rc = main()
    except Exception:  # noqa: BLE001
        import traceback

        traceback.print_exc()
        rc = 4
    ic.shutdown(rc)
