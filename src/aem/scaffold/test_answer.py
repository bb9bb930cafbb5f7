"""Tests of the sample flow with a stand-in ctx: no runner, no expert, no network.

    python3 aem/{mesh}/skills/{role}/tests/test_answer.py
"""

import importlib.util
import pathlib
import sys
import unittest

sys.dont_write_bytecode = True  # nothing but the recorded files in the expert's folder

FLOW = pathlib.Path(__file__).resolve().parent.parent / "flows" / "answer.py"


def load_flow():
    spec = importlib.util.spec_from_file_location("answer", FLOW)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class StandIn:
    """Answers ask_expert as the expert would, and remembers what it was asked."""

    def __init__(self, text):
        self.text = text
        self.asked = []

    def ask_expert(self, name, domain, instruction):
        self.asked.append((name, domain, instruction))
        return {"status": "done", "text": self.text, "result": None, "goal_status": "succeeded"}


class AnswerFlow(unittest.TestCase):
    def test_asks_the_expert_once_and_returns_its_answer(self):
        ctx = StandIn("Nothing changed.")
        out = load_flow().run(ctx, {"question": " What changed today? "})
        self.assertEqual(out, {"answer": "Nothing changed.", "status": "done"})
        self.assertEqual(ctx.asked, [("ask", "{mesh}/{role}", "What changed today?")])

    def test_without_a_question_it_asks_nobody(self):
        ctx = StandIn("unused")
        out = load_flow().run(ctx, {})
        self.assertIsNone(out["answer"])
        self.assertEqual(ctx.asked, [])


if __name__ == "__main__":
    unittest.main()
