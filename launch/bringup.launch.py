"""Bring Iron up under ROS 2: `ros2 launch iron bringup.launch.py`.

Reads the same process list as `iron up` (launch/bringup.yaml): starts the Zenoh router
first, then every node as a launch_ros LifecycleNode; nodes marked `autostart` are
configured when their process starts and activated once they reach `inactive`.
Needs RMW_IMPLEMENTATION=rmw_zenoh_cpp so stock ROS 2 tools share the router.
"""

import os

import yaml
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, ExecuteProcess, RegisterEventHandler
from launch.event_handlers import OnProcessStart
from launch.events import matches_action
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import LifecycleNode
from launch_ros.event_handlers import OnStateTransition
from launch_ros.events.lifecycle import ChangeState
from lifecycle_msgs.msg import Transition


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
    actions = [
        DeclareLaunchArgument("router", default_value=listen, description="Zenoh router endpoint"),
        ExecuteProcess(
            cmd=[_iron_executable(), "router", "--listen", LaunchConfiguration("router")],
            name="iron_router",
            output="screen",
        ),
    ]

    for spec in plan.get("nodes") or []:
        node = LifecycleNode(
            package="iron",
            executable=spec["executable"],
            name=spec["name"],
            namespace=spec.get("namespace", "/iron"),
            arguments=spec.get("args", []),
            parameters=[{k: _param_value(v) for k, v in (spec.get("params") or {}).items()}],
            additional_env={"IRON_ROUTER": LaunchConfiguration("router")},
            respawn=spec.get("respawn", True),
            output="screen",
        )
        actions.append(node)
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
        actions.append(RegisterEventHandler(OnProcessStart(target_action=node, on_start=[configure])))
        actions.append(
            RegisterEventHandler(
                OnStateTransition(
                    target_lifecycle_node=node,
                    start_state="configuring",
                    goal_state="inactive",
                    entities=[activate],
                )
            )
        )
    return LaunchDescription(actions)
