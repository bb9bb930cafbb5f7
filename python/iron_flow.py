"""Iron durable flows in Python: the ctx a flow's run(ctx, input) receives.

The runner starts `python3 iron_flow.py <flow file>` and speaks one JSON object per line over
stdin/stdout; the journal, replay and fingerprints live in the runner. A flow's own print()
goes to stderr so stdout stays the protocol. No installation: the runner ships this file.

    def run(ctx, input):
        page = ctx.step("fetch", fetch, input["url"])
        ctx.sleep("cool_off", 60)
        if not ctx.wait_approval("publish", "publish this?")["approved"]:
            raise Parked("the editor said no")
        return ctx.effect("publish", post, already_posted, page)
"""

import hashlib
import importlib.util
import inspect
import json
import sys
import traceback


class Waiting(Exception):
    """Raise (or let ctx raise) to stop until `on` happens."""

    def __init__(self, on):
        super().__init__(on)
        self.on = on


class Parked(Exception):
    """Raise to park the job with a reason; a person resumes or cancels it."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class _Stop(BaseException):
    """The runner ended this run (the job waits or parked); unwinds the flow."""


_OUT = sys.stdout


def _send(message):
    _OUT.write(json.dumps(message) + "\n")
    _OUT.flush()


def _receive():
    line = sys.stdin.readline()
    if not line:
        raise _Stop("runner closed the pipe")
    return json.loads(line)


def _name(fn):
    return getattr(fn, "__module__", "?") + "." + getattr(fn, "__qualname__", repr(fn))


def _identity(fn):
    """Who a step calls, for its fingerprint: the function's name and a hash of its source,
    so an edited body parks a job that journaled the old one. (What the function calls in
    turn is not covered: bump the step's name when a helper's change matters.)"""
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        source = repr((code.co_code, code.co_consts, code.co_names)) if code else ""
    digest = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return _name(fn) + "#" + digest


class Ctx:
    """The same calls as the Rust ctx; each blocks until the runner answers."""

    def _call(self, message, callables):
        _send(message)
        while True:
            reply = _receive()
            if "value" in reply:
                return reply["value"]
            if "stop" in reply:
                raise _Stop(reply["stop"])
            which = reply.get("call")
            try:
                value = callables[which](*message.get("args", []))
            except (Waiting, Parked, _Stop):
                raise
            except Exception:
                _send({"op": "error", "error": traceback.format_exc()})
                continue
            _send({"op": "result", "value": value})

    def step(self, name, fn, *args):
        """Runs fn(*args) once per job; on replay returns the journaled result."""
        return self._call(
            {"op": "step", "name": name, "fn": _identity(fn), "legacy_fn": _name(fn),
             "args": list(args)},
            {"run": fn},
        )

    def effect(self, name, act, observe, *args):
        """act(*args) behind a confirmation gate: observe(*args) must return a truthy
        observation showing the change, or None/False when it is not there."""

        def looked(*a):
            seen = observe(*a)
            return seen if seen else None

        return self._call(
            {"op": "effect", "name": name, "fn": _identity(act), "legacy_fn": _name(act),
             "args": list(args)},
            {"act": act, "observe": looked},
        )

    def effect_by_expert(self, name, domain, instruction, observe, *args):
        """An irreversible act an expert performs: effect_intent is journaled, the expert
        `domain` is asked `instruction` once (the job waits for its answer), and
        effect_confirmed is journaled only when observe(*args) returns a truthy observation.
        After a crash it observes first, so the act is never asked for twice."""

        def looked(*a):
            seen = observe(*a)
            return seen if seen else None

        return self._call(
            {
                "op": "effect_expert",
                "name": name,
                "domain": domain,
                "instruction": instruction,
                "args": list(args),
            },
            {"observe": looked},
        )

    def sleep(self, name, seconds):
        """A durable timer: the job waits (no process) until the clock says it is due."""
        self._call({"op": "sleep", "name": name, "seconds": seconds}, {})

    def wait_approval(self, name, prompt):
        """Returns {"approved": bool, "note": str|None}; an early answer counts."""
        return self._call({"op": "wait_approval", "name": name, "prompt": prompt}, {})

    def ask_expert(self, name, domain, instruction):
        """Asks the expert `domain` ("<mesh>/<role>") through the gateway; the job waits.
        Returns {"status", "text", "result", "goal_status"}."""
        return self._call(
            {"op": "ask_expert", "name": name, "domain": domain, "instruction": instruction},
            {},
        )

    def wait_signal(self, name):
        """Returns the signal's payload; an early signal counts."""
        return self._call({"op": "wait_signal", "name": name}, {})


def _main(path):
    spec = importlib.util.spec_from_file_location("flow", path)
    module = importlib.util.module_from_spec(spec)
    sys.stdout = sys.stderr
    try:
        start = _receive()
        spec.loader.exec_module(module)
        value = module.run(Ctx(), start.get("input"))
        _send({"op": "return", "value": value})
    except _Stop:
        return 0
    except Waiting as w:
        _send({"op": "waiting", "on": str(w.on)})
    except Parked as p:
        _send({"op": "parked", "reason": str(p.reason)})
    except BaseException:
        _send({"op": "raised", "error": traceback.format_exc()})
    return 0


if __name__ == "__main__":
    sys.modules.setdefault("iron_flow", sys.modules[__name__])
    sys.exit(_main(sys.argv[1]))
