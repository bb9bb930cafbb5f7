class Transition:
    """The transition ids lifecycle_msgs/msg/Transition defines."""

    TRANSITION_CONFIGURE = 1
    TRANSITION_CLEANUP = 2
    TRANSITION_ACTIVATE = 3
    TRANSITION_DEACTIVATE = 4
