"""The newsroom's pipeline, started by the `new_items` trigger whenever the sources show new
items: group the items into claims (monitor), cross-check each claim across independent
owners (analyst), word a bulletin of what is new or changed (editor), and publish it
(publisher) behind a confirmation gate.

Each expert gets its work as prose plus an `iron-task` block (JSON), and answers with JSON:
a model reads the block as data; with no model configured, the offline backend performs the
task deterministically. Whatever an expert answers, this flow keeps the two rules that must
never depend on a model: a claim is `confirmed` only when its supporting reports come from at
least two different owners and nothing denies it, and a claim already published with the
same status is never published again. A claim is the same claim as one published before when
they share a report, whatever id the grouping gives it now (the id is made from its earliest
report, which may have left the sources' window), so a story re-read later, or one whose first
report is gone, is never published as news again; a changed status is a correction of the
bulletin that carried it.

A mesh may make bulletins wait for an editor (the trigger's `review`, see `_review`): the job
then waits for the approval `release`, whose prompt carries the bulletin, until a person
releases it (as worded, or with the wording they give) or drops it, from the console's Desk or
with `iron desk release|drop`. A dropped bulletin is not published; its claims come back to the
editor when a new report about them arrives.

Input (from the trigger): `items` (every current item of the watched sources: id, title,
summary, url, published, outlet, owner, feed, source), `new` (`<source>:<id>` of the items
that fired it; only claims holding one are checked again), `channel` and `dest` (where
bulletins go), and `review` (the editor's hold; none when absent).
"""

import hashlib
import json
import os

from iron_flow import Parked

STATUSES = ("confirmed", "single_source", "contradicted")


def run(ctx, input):
    review = _review(input.get("review"))
    reports = [_report(i) for i in input.get("items", []) if i.get("id")]
    if not reports:
        return {"published": None, "reason": "no items"}
    by_id = {r["id"]: r for r in reports}

    grouped = _ask(ctx, "group", "newsroom/monitor", GROUP, {
        "iron_task": "group_claims", "reports": reports})
    every = _claims(grouped.get("claims"), by_id)
    claims = _affected(every, input.get("new"))
    if not claims:
        return {"published": None, "reason": "no claim has a new item"}

    # The claims to rate are checked among all the others and every report: a rival account or
    # a denial grouped apart is what keeps a claim from being confirmed.
    task = {"iron_task": "cross_check", "claims": every, "reports": reports}
    if len(claims) < len(every):
        task["check"] = [c["id"] for c in claims]
    checked = _ask(ctx, "cross_check", "newsroom/analyst", CROSS_CHECK, task)
    verdicts = _guard(checked.get("verdicts"), claims, by_id)

    history = ctx.step("published_by_report", published_claims)
    lines = _changes(verdicts, history, by_id)
    if not lines:
        return {"published": None, "reason": "nothing new or changed since the last bulletin"}

    wording = _ask(ctx, "write", "newsroom/editor", WRITE, {
        "iron_task": "write_bulletin", "claims": lines})
    bulletin, text = _bulletin(lines, wording)

    channel = input.get("channel", "bulletins")
    dest = input.get("dest", "terminal")
    held = _held(review, lines)
    if held:
        answer = ctx.wait_approval("release", json.dumps(
            {"bulletin": bulletin, "text": text, "channel": channel, "held": held},
            sort_keys=True))
        if not answer.get("approved"):
            return {"published": None, "dropped": bulletin["id"],
                    "reason": answer.get("note") or "dropped by the editor"}
        if (answer.get("note") or "").strip():
            text = f"[{bulletin['id']}] {answer['note'].strip()}"
            bulletin["edited"] = True
    publish = _instruction(PUBLISH, {
        "iron_task": "publish", "channel": channel, "dest": dest,
        "delivery_id": bulletin["id"], "text": text, "bulletin": bulletin})
    receipt = ctx.effect_by_expert(
        "publish", "newsroom/publisher", publish, in_outbox, bulletin["id"])
    return {"published": bulletin["id"], "claims": len(lines), "receipt": receipt}


# What each expert is asked. The block below each is the same for a model and offline.

GROUP = """Group these reports into claims: reports that describe the same event (even in \
other words) form one claim; a report that denies or contradicts an event belongs to that \
event's claim. Do not merge different events that merely share a place or a word. Answer with \
one JSON object: {"claims": [{"id": "<a stable id>", "text": "<the claim as one sentence>", \
"reports": [{"id": "<report id>", "stance": "supports" | "denies"}]}]}. Every report id must \
be one of the block's."""

CROSS_CHECK = """Cross-check each claim (only those whose ids are in `check`, when it is \
given: the other claims and reports are the rest of what the sources say). Reports with the same \
owner are ONE source. A claim is "confirmed" only when at least two reports with different \
owners support it and no report, in it or anywhere else, denies it or tells it otherwise; \
"contradicted" when a report denies it; otherwise "single_source". When unsure, say \
single_source. Answer with one JSON object: {"verdicts": [{"claim": "<claim id>", \
"text": "<claim>", "status": "confirmed" | "single_source" | "contradicted", "supporting": \
["<report id>"], "denying": ["<report id>"], "reason": "<one sentence>"}]}."""

WRITE = """Write a short news bulletin from these checked claims, following the house rules: \
confirmed claims stated as fact and attributed; single-source claims as "X says", never as \
fact; contradicted claims with both sides; a claim with `corrects` is a correction of that \
bulletin and says so. Answer with one JSON object: {"headline": "<at most twelve words>", \
"lines": [{"claim": "<claim id>", "text": "<its sentence>"}], "text": "<the whole bulletin>"}."""

PUBLISH = """Publish this bulletin: check it against the house rules, then send it once with \
the deliver tool, exactly as given (channel, dest, text, delivery_id, and the bulletin as \
data). Answer with one JSON object: {"published": true | false, "detail": "<what happened>"}."""


def _review(raw):
    """The editor's hold the trigger declares, as (statuses, owners_at_most), or None:

    - absent or `none`: nothing waits;
    - `editor`: every bulletin waits;
    - `{editor: [statuses], owners_at_most: N}`: a bulletin waits when one of its claims has
      one of the statuses and, when N is given, rests on at most N independent owners
      (`{editor: [confirmed], owners_at_most: 2}` holds every confirmation on exactly two).

    Anything else parks the job: a misspelt hold must never publish unreviewed."""
    if raw is None or raw == "none":
        return None
    if raw == "editor":
        return (set(STATUSES), None)
    if isinstance(raw, dict) and "editor" in raw and set(raw) <= {"editor", "owners_at_most"}:
        statuses, most = raw["editor"], raw.get("owners_at_most")
        if isinstance(statuses, list) and statuses and all(s in STATUSES for s in statuses) \
                and (most is None or (type(most) is int and most >= 1)):
            return (set(statuses), most)
    raise Parked(f"the trigger's review is {json.dumps(raw)}: write `editor` (every bulletin "
                 f"waits for an editor), or {{editor: [statuses], owners_at_most: N}} with "
                 f"statuses among {', '.join(STATUSES)}")


def _owners(line):
    """The independent owners a bulletin line rests on (as `_guard` counts them)."""
    return {o for o in (_owner(s) for s in line["sources"] if s["stance"] == "supports") if o}


def _held(review, lines):
    """Why the bulletin of `lines` waits for an editor, one line per claim held (empty: it
    does not wait)."""
    if review is None:
        return []
    statuses, most = review
    why = []
    for l in lines:
        owners = len(_owners(l))
        if l["status"] in statuses and (most is None or owners <= most):
            why.append(f"{l['status']} on {owners} independent owner"
                       f"{'' if owners == 1 else 's'}: {l['text']}")
    return why


def _instruction(prose, task):
    # Backticks inside the data are escaped, so no item can close the block early.
    data = json.dumps(task, sort_keys=True).replace("`", "\\u0060")
    return prose + "\n\n```iron-task\n" + data + "\n```"


def _ask(ctx, name, domain, prose, task):
    answer = ctx.ask_expert(name, domain, _instruction(prose, task))
    if answer.get("goal_status") != "succeeded":
        raise Parked(f"{domain} did not answer the {name} step "
                     f"({answer.get('status')}): {answer.get('text')}")
    return _json(answer.get("text", ""))


def _json(text):
    """The first JSON object in an answer (a model may wrap it in prose or a fence)."""
    start = text.find("{")
    while start != -1:
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
            if isinstance(value, dict):
                return value
        except ValueError:
            pass
        start = text.find("{", start + 1)
    return {}


def _report(item):
    keys = ("id", "title", "summary", "url", "published", "outlet", "owner", "source")
    return {k: item.get(k) or ("" if k != "published" else None) for k in keys}


def _claims(raw, by_id):
    """The grouping as asked for, keeping only report ids that exist, each in one claim; any
    report left out becomes a claim of its own (never merged by default)."""
    claims, placed = [], set()
    for c in raw if isinstance(raw, list) else []:
        if not isinstance(c, dict):
            continue
        members = []
        for r in c.get("reports") or []:
            rid = r.get("id") if isinstance(r, dict) else None
            if rid in by_id and rid not in placed:
                stance = "denies" if r.get("stance") == "denies" else "supports"
                members.append({"id": rid, "stance": stance})
                placed.add(rid)
        if members:
            cid = c.get("id") if isinstance(c.get("id"), str) and c.get("id") else _cid(members[0]["id"])
            claims.append({"id": cid, "text": str(c.get("text") or by_id[members[0]["id"]]["title"]),
                           "reports": members})
    for rid, r in by_id.items():
        if rid not in placed:
            claims.append({"id": _cid(rid), "text": r["title"],
                           "reports": [{"id": rid, "stance": "supports"}]})
    return claims


def _affected(claims, new):
    """The claims a new item belongs to (every claim when the input names no new items): only
    these can have changed since the last bulletin, so only these are checked again."""
    if not isinstance(new, list):
        return claims
    ids = {n.split(":", 1)[-1] for n in new if isinstance(n, str)}
    return [c for c in claims if any(r["id"] in ids for r in c["reports"])]


def _cid(report_id):
    return "c-" + hashlib.sha256(report_id.encode()).hexdigest()[:16]


def _guard(raw, claims, by_id):
    """Each claim's verdict, from the analyst's answer where it has one, under rules no answer
    can bend: a claim with a denial is contradicted; confirmed needs two different owners among
    the claim's own supporting reports. A claim the analyst did not rate is single_source."""
    given = {v.get("claim"): v for v in raw if isinstance(v, dict)} if isinstance(raw, list) else {}
    verdicts = []
    for c in claims:
        members = {r["id"]: r["stance"] for r in c["reports"]}
        v = given.get(c["id"], {})
        status = v.get("status") if v.get("status") in STATUSES else "single_source"
        # A denial seen by either the grouping or the cross-check counts (the cross-check may
        # name a known report of another claim: a rival account of the same subject); a
        # denier is never a supporter.
        denying = sorted({r for r in v.get("denying") or [] if r in by_id}
                         | {r for r, s in members.items() if s == "denies"})
        supporting = [r for r in (v.get("supporting") or list(members))
                      if r in members and r not in denying]
        owners = {o for o in (_owner(by_id[r]) for r in supporting) if o}
        if denying:
            status = "contradicted"
        if status == "confirmed" and len(owners) < 2:
            status = "single_source"
        verdicts.append({"claim": c["id"], "text": v.get("text") or c["text"], "status": status,
                         "supporting": supporting, "denying": denying,
                         "reason": v.get("reason", "")})
    return verdicts


def _outbox():
    """The delivery bridge's outbox records, oldest first (none before the first send)."""
    path = os.path.join(os.environ.get("IRON_STATE_DIR", ".iron"), "outbox.jsonl")
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except FileNotFoundError:
        return []
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            continue  # a line cut short by a crash
    return records


def published_claims():
    """What the outbox says was published: `claims` (claim id -> {status, bulletin}, the
    latest) and `reports` (report id -> the claim id it was last published under)."""
    seen, reports = {}, {}
    for record in _outbox():
        b = record.get("bulletin") or {}
        for c in b.get("claims") or []:
            if c.get("claim"):
                seen[c["claim"]] = {"status": c.get("status"), "bulletin": b.get("id")}
                for r in c.get("reports") or []:
                    reports[r] = c["claim"]
    return {"claims": seen, "reports": reports}


def _published_as(v, history):
    """The id `v` was published under: its own, else that of the published claim sharing the
    most of its reports (the latest published on a tie); None when it was never published."""
    claims, reports = history.get("claims") or {}, history.get("reports") or {}
    if v["claim"] in claims:
        return v["claim"]
    shared = {}
    for r in v["supporting"] + v["denying"]:
        if r in reports:
            shared[reports[r]] = shared.get(reports[r], 0) + 1
    if not shared:
        return None
    order = list(claims)
    return max(shared, key=lambda c: (shared[c], order.index(c) if c in order else -1))


def _changes(verdicts, history, by_id):
    """The claims to publish: never published, or published with another status (then a
    correction of the bulletin that carried it, under the id it was published with)."""
    lines = []
    for v in verdicts:
        known = _published_as(v, history)
        before = (history.get("claims") or {}).get(known) if known else None
        if known:
            v = dict(v, claim=known)
        if before and before.get("status") == v["status"]:
            continue
        cited = _one_per_owner(v["denying"], by_id)
        sources = [_source(by_id[r], "supports") for r in v["supporting"]]
        sources += [_source(by_id[r], "denies") for r in cited]
        line = {"claim": v["claim"], "text": v["text"], "status": v["status"], "sources": sources,
                "reports": v["supporting"] + v["denying"]}
        if len(cited) < len(v["denying"]):
            line["uncited_denials"] = len(v["denying"]) - len(cited)
        if before:
            line["corrects"] = before.get("bulletin")
            line["previous_status"] = before.get("status")
        lines.append(line)
    return lines


def _owner(item):
    """The owner of a report or a cited source as the Rust judge compares owners
    (`claims::owner_key`): trimmed, runs of whitespace made one space, lower-cased; blank
    counts as no owner."""
    return " ".join(str(item.get("owner") or "").split()).lower()


def _one_per_owner(ids, by_id):
    """The reports a line cites among denying `ids`: the earliest of each owner. A claim's own
    reports are few, but its denials come from every rival account in the batch (hundreds in a
    dense one), and each owner disputes it once however many of its reports say so; `reports`
    keeps every id."""
    earliest = {}
    for r in ids:
        owner = _owner(by_id[r]) or r  # blank: each its own
        key = (by_id[r].get("published") or "~", r)  # undated last
        earliest[owner] = min(earliest.get(owner, key), key)
    kept = {r for _, r in earliest.values()}
    return [r for r in ids if r in kept]


def _source(report, stance):
    return {"outlet": report["outlet"], "owner": report["owner"], "url": report["url"],
            "published": report["published"], "stance": stance}


def _bulletin(lines, wording):
    """The bulletin object of the output contract and the text to send. Its id is computed
    from what it says, so the same bulletin always has the same id (and is sent once)."""
    # What it says, and what it corrects: a claim flipping back to an earlier status is a new
    # bulletin (it corrects the later one), never a repeat the bridge would refuse.
    key = json.dumps([[l["claim"], l["status"], l.get("corrects") or ""] for l in lines])
    worded = {w.get("claim"): w.get("text") for w in wording.get("lines") or []
              if isinstance(w, dict)}
    claims = []
    for l in lines:
        c = {"claim": l["claim"], "text": l["text"], "status": l["status"],
             "sources": l["sources"], "reports": l["reports"]}
        if worded.get(l["claim"]):
            c["wording"] = worded[l["claim"]]
        if l.get("corrects"):
            c["corrects"] = l["corrects"]
        claims.append(c)
    bulletin = {"id": "b-" + hashlib.sha256(key.encode()).hexdigest()[:16], "claims": claims}
    corrects = sorted({l["corrects"] for l in lines if l.get("corrects")})
    if corrects:
        bulletin["corrects"] = corrects
    text = wording.get("text") if isinstance(wording.get("text"), str) else ""
    if not text.strip():
        text = "\n".join(f"- {l['status'].upper()}: {l['text']}" for l in lines)
    return bulletin, f"[{bulletin['id']}] {text}"


def in_outbox(bulletin_id):
    """The delivery bridge's own record of the send, read back from its outbox; None when the
    bulletin is not there."""
    for record in _outbox():
        if record.get("delivery_id") == bulletin_id and \
                (record.get("bulletin") or {}).get("id") == bulletin_id:
            return {"delivery_id": bulletin_id, "ts_ms": record.get("ts_ms"),
                    "channel": record.get("channel"), "dest": record.get("dest")}
    return None
