from _record import Recorded


class DeclareLaunchArgument(Recorded):
    pass


class EmitEvent(Recorded):
    pass


class ExecuteProcess(Recorded):
    pass


class RegisterEventHandler(Recorded):
    pass


class Shutdown(Recorded):
    pass
