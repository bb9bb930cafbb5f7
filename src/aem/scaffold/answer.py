"""A sample durable flow of {mesh}/{role}: it asks the expert a question and returns the
answer. Start it (a runner of the mesh must be running: `iron new mesh` printed its entry
for the launch list) with

    iron jobs start {mesh}/{role}/answer --input '{"question": "What changed today?"}'

and follow it with `iron jobs show <job>`.

A flow is `run(ctx, input)`. Everything that is not deterministic goes through `ctx`
(`ctx.step`, `ctx.ask_expert`, `ctx.sleep`, `ctx.wait_approval`, `ctx.effect_by_expert`),
so after a crash the runner replays the function from the top, takes what its journal
holds, and goes on where it stopped. Code between those calls computes only from `input`
and their results.
"""


def run(ctx, input):
    question = str(input.get("question") or "").strip()
    if not question:
        return {"answer": None, "reason": "the input has no question"}
    reply = ctx.ask_expert("ask", "{mesh}/{role}", question)
    return {"answer": reply.get("text"), "status": reply.get("status")}
