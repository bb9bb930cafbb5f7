from _record import Recorded


class OnProcessStart(Recorded):
    pass


class OnProcessExit(Recorded):
    pass
