"""Bring Iron up under ROS 2: `ros2 launch iron bringup.launch.py [router:=tcp/HOST:PORT]`.

Reads the same process list as `iron up` (launch/bringup.yaml): starts the Zenoh router,
waits until it accepts sessions (`iron wait-router`; if it never does, the launch shuts
down and says why), then starts every node as a launch_ros LifecycleNode with its
arguments and `params:` (as ROS 2 parameters, which the node reads at start and refuses
when it does not know one); nodes marked `autostart` are configured when their process
starts and activated once they reach `inactive`. Each node runs under `iron ship`, which
passes its output to this terminal unchanged and ships it to the log plane (`iron logs
<node>`), as `iron up` does.

The `router` argument defaults to IRON_ROUTER when it is set, else to the list's
`router.listen`; the router listens there and every node gets it as IRON_ROUTER, so the
two always agree. Needs RMW_IMPLEMENTATION=rmw_zenoh_cpp so stock ROS 2 tools share the
router.
"""

import os

import yaml
from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    EmitEvent,
    ExecuteProcess,
    RegisterEventHandler,
    Shutdown,
)
from launch.event_handlers import OnProcessExit, OnProcessStart
from launch.events import matches_action
from launch.substitutions import EnvironmentVariable, LaunchConfiguration
from launch_ros.actions import LifecycleNode
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from lifecycle_msgs.msg import Transition


# How long the nodes wait for the router to accept sessions before the launch gives up.
ROUTER_WAIT_SECS = 30


def _share_dir():
    try:
        from ament_index_python.packages import get_package_share_directory

        return os.path.join(get_package_share_directory("iron"), "launch")
    except Exception:  # running from a source checkout
        return os.path.dirname(os.path.abspath(__file__))


def _iron_executable():
    try:
        from ament_index_python.packages import get_package_prefix

        return os.path.join(get_package_prefix("iron"), "lib", "iron", "iron")
    except Exception:
        return "iron"


def _param_value(value):
    return value if isinstance(value, (bool, int, float, str, list)) else str(value)


def generate_launch_description():
    list_path = os.environ.get("IRON_LAUNCH_LIST", os.path.join(_share_dir(), "bringup.yaml"))
    with open(list_path, encoding="utf-8") as f:
        plan = yaml.safe_load(f) or {}

    listen = (plan.get("router") or {}).get("listen", "tcp/127.0.0.1:7447")
    router = LaunchConfiguration("router")
    iron = _iron_executable()
    wait = ExecuteProcess(
        cmd=[iron, "wait-router", "--router", router, "--timeout", str(ROUTER_WAIT_SECS)],
        name="iron_wait_router",
        output="screen",
    )
    actions = [
        DeclareLaunchArgument(
            "router",
            default_value=EnvironmentVariable("IRON_ROUTER", default_value=listen),
            description="Zenoh router endpoint (default: IRON_ROUTER, else the list's router.listen)",
        ),
        ExecuteProcess(
            cmd=[iron, "router", "--listen", router],
            name="iron_router",
            output="screen",
        ),
        wait,
    ]
    nodes = []

    for spec in plan.get("nodes") or []:
        namespace = spec.get("namespace", "/iron")
        fqn = namespace.rstrip("/") + "/" + spec["name"]
        node = LifecycleNode(
            package="iron",
            executable=spec["executable"],
            name=spec["name"],
            namespace=namespace,
            arguments=spec.get("args", []),
            # Its output to this terminal and, line by line, to the log plane (`iron logs`).
            prefix=f"{iron} ship --node {fqn} --",
            parameters=[{k: _param_value(v) for k, v in (spec.get("params") or {}).items()}],
            additional_env={"IRON_ROUTER": router},
            respawn=spec.get("respawn", True),
            output="screen",
        )
        nodes.append(node)
        if not spec.get("autostart", True):
            continue
        configure = EmitEvent(
            event=ChangeState(
                lifecycle_node_matcher=matches_action(node),
                transition_id=Transition.TRANSITION_CONFIGURE,
            )
        )
        activate = EmitEvent(
            event=ChangeState(
                lifecycle_node_matcher=matches_action(node),
                transition_id=Transition.TRANSITION_ACTIVATE,
            )
        )
        nodes.append(RegisterEventHandler(OnProcessStart(target_action=node, on_start=[configure])))
        nodes.append(
            RegisterEventHandler(
                OnStateTransition(
                    target_lifecycle_node=node,
                    start_state="configuring",
                    goal_state="inactive",
                    entities=[activate],
                )
            )
        )

    def after_wait(event, _context):
        if event.returncode == 0:
            return nodes
        return [Shutdown(reason=f"the router never accepted a session within {ROUTER_WAIT_SECS} s")]

    actions.append(RegisterEventHandler(OnProcessExit(target_action=wait, on_exit=after_wait)))
    return LaunchDescription(actions)
