from _record import Recorded


class LaunchConfiguration(Recorded):
    pass


class EnvironmentVariable(Recorded):
    pass
