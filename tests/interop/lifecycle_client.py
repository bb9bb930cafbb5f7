#!/usr/bin/env python3
"""Drive a ROS 2 lifecycle node through zenoh-ros2-sdk (an rmw_zenoh client no one on Iron wrote).

    lifecycle_client.py --router tcp/127.0.0.1:7447 --node /iron/demo get
    lifecycle_client.py --router ... --node /iron/demo set configure
    lifecycle_client.py --router ... --node /iron/demo available-transitions
    lifecycle_client.py --router ... --node /iron/demo available-states
    lifecycle_client.py --router ... --node /iron/demo watch-events 4

Services used (as rclcpp_lifecycle names them): <node>/get_state,
<node>/change_state, <node>/get_available_states,
<node>/get_available_transitions; topic <node>/transition_event.

``set`` behaves like ``ros2 lifecycle set``: it asks the node for its available
transitions, picks the one whose label matches, and sends that Transition
(id and label) in a ChangeState request.  It prints ``true`` or ``false``.

Before each call the node's service liveliness token is looked up; a missing
token or one advertising another type or type hash is reported on stderr (the
call is still attempted).  Every wait is bounded by --timeout; the exit status
is 0 on success, 1 on a failed transition or bad argument, 3 on a timeout or an
error reply.
"""

from __future__ import annotations

import argparse
import sys
import threading

import interop_common as ic

SERVICES = {
    "get_state": "lifecycle_msgs/srv/GetState",
    "change_state": "lifecycle_msgs/srv/ChangeState",
    "get_available_states": "lifecycle_msgs/srv/GetAvailableStates",
    "get_available_transitions": "lifecycle_msgs/srv/GetAvailableTransitions",
}
TRANSITIONS = ("configure", "cleanup", "activate", "deactivate", "shutdown")


class Lifecycle:
    def __init__(self, router: str, node: str, timeout: float, discovery_timeout: float, quiet: bool = False):
        self.router = router
        self.node = node.rstrip("/")
        self.timeout = timeout
        self.discovery_timeout = discovery_timeout
        self.quiet = quiet
        self._clients: dict = {}
        ic.open_session(router)

    def check_discovery(self, kind: str, name: str, type_name: str) -> None:
        problem = ic.wait_for_endpoint(kind, name, type_name, ic.golden()[type_name], self.discovery_timeout)
        if problem and not self.quiet:
            print(f"warning: discovery: {problem}", file=sys.stderr, flush=True)

    def client(self, service: str):
        if service not in self._clients:
            name = f"{self.node}/{service}"
            srv_type = SERVICES[service]
            self.check_discovery("SS", name, srv_type)
            self._clients[service] = ic.service_client(name, srv_type, self.timeout, self.router)
        return self._clients[service]

    def _call_empty(self, service: str):
        c = self.client(service)
        return ic.call(c, self.timeout, **ic.empty_request_fields(c))

    def get_state(self):
        return self._call_empty("get_state").current_state

    def available_states(self):
        return list(self._call_empty("get_available_states").available_states)

    def available_transitions(self):
        return list(self._call_empty("get_available_transitions").available_transitions)

    def change_state(self, label: str) -> bool:
        available = self.available_transitions()
        matches = [t.transition for t in available if t.transition.label == label]
        if not matches:
            labels = ", ".join(sorted({t.transition.label for t in available})) or "none"
            raise ValueError(f"transition '{label}' is not available now (available: {labels})")
        c = self.client("change_state")
        return bool(ic.call(c, self.timeout, transition=matches[0]).success)

    def watch_events(self, count: int, on_event, ready: threading.Event | None = None) -> list:
        from zenoh_ros2_sdk import ROS2Subscriber

        topic = f"{self.node}/transition_event"
        msg_type = "lifecycle_msgs/msg/TransitionEvent"
        self.check_discovery("MP", topic, msg_type)
        box = ic.Waiter()
        host, port = ic.parse_endpoint(self.router)
        # The SDK loads TransitionEvent and computes its hash by itself here.
        sub = ROS2Subscriber(topic, msg_type, box.put, node_name=ic.CLIENT_NODE, domain_id=ic.DOMAIN_ID,
                             router_ip=host, router_port=port)
        if sub.type_hash != ic.golden()[msg_type]:
            print(f"warning: SDK subscriber hash {sub.type_hash} != golden {ic.golden()[msg_type]}", file=sys.stderr)
        if ready is not None:
            ready.set()
        events = []
        try:
            for _ in range(count):
                try:
                    ev = box.get(self.timeout)
                except TimeoutError:
                    raise ic.CallError(f"timed out after {self.timeout:.1f}s waiting for a transition event "
                                       f"({len(events)}/{count} received) on {sub.keyexpr}") from None
                events.append(ev)
                on_event(ev)
        finally:
            sub.close()
        return events


def state_json(s) -> dict:
    return {"id": int(s.id), "label": s.label}


def event_json(ev) -> dict:
    return {
        "timestamp": int(ev.timestamp),  # Jazzy: uint64 nanoseconds
        "transition": {"id": int(ev.transition.id), "label": ev.transition.label},
        "start_state": state_json(ev.start_state),
        "goal_state": state_json(ev.goal_state),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--router", required=True, help="router endpoint, tcp/HOST:PORT")
    ap.add_argument("--node", required=True, help="fully qualified node name, e.g. /iron/demo")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds for each wait (default 10)")
    ap.add_argument("--discovery-timeout", type=float, default=3.0,
                    help="seconds to wait for the node's liveliness tokens before calling (default 3)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("get", help="print the current state label")
    p_set = sub.add_parser("set", help="trigger a transition; prints true/false")
    p_set.add_argument("transition", choices=TRANSITIONS)
    sub.add_parser("available-transitions", help="JSON line per available transition")
    sub.add_parser("available-states", help="JSON line per state")
    p_watch = sub.add_parser("watch-events", help="print N transition events as JSON lines")
    p_watch.add_argument("count", type=int)
    args = ap.parse_args(argv)

    lc = Lifecycle(args.router, args.node, args.timeout, args.discovery_timeout)
    try:
        if args.cmd == "get":
            print(lc.get_state().label, flush=True)
        elif args.cmd == "set":
            ok = lc.change_state(args.transition)
            print("true" if ok else "false", flush=True)
            return 0 if ok else 1
        elif args.cmd == "available-transitions":
            for t in lc.available_transitions():
                ic.emit({"id": int(t.transition.id), "label": t.transition.label,
                         "start_state": state_json(t.start_state), "goal_state": state_json(t.goal_state)})
        elif args.cmd == "available-states":
            for s in lc.available_states():
                ic.emit(state_json(s))
        elif args.cmd == "watch-events":
            lc.watch_events(args.count, lambda ev: ic.emit(event_json(ev)))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ic.CallError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except Exception:  # noqa: BLE001 - report, then exit through ic.shutdown
        import traceback

        traceback.print_exc()
        return 4
    return 0


if __name__ == "__main__":
    ic.shutdown(main())
