from _record import Recorded


class LifecycleNode(Recorded):
    pass
