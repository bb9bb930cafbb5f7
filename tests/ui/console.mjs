// Drives the console's page in headless Chromium (Debian's, through playwright-core) for
// tests/product/console_ui.rs. Steps print one line each; the Rust side waits for `READY` before it
// sends the task, so what the page shows arrives live. Any failure exits non-zero with why.
//
// Arguments: <base url> <token> <parked job id> <screenshot dir>

import { chromium } from "playwright-core";

const [base, token, job, shots] = process.argv.slice(2);
const LIMIT = 90_000;
const step = text => console.log(text);

const browser = await chromium.launch({
  executablePath: process.env.IRON_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const errors = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("pageerror", e => errors.push(String(e)));
  page.on("console", m => {
    // The browser reports the 401 of the deliberately refused load as an error of the page;
    // the report may come late, so it is told apart by its address (no token in it).
    const refusedLoad = !m.location().url.includes("token=") && m.text().includes("401");
    if (m.type() === "error" && !refusedLoad) errors.push(`${m.text()} (${m.location().url})`);
  });
  const shot = async name => {
    await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
    step(`screenshot ${name}`);
  };

  // Without the token: refused.
  const refused = await page.goto(base + "/");
  if (refused.status() !== 401) throw new Error(`without the token: ${refused.status()}, not 401`);
  step("refused without the token");

  const loaded = await page.goto(`${base}/?token=${encodeURIComponent(token)}`);
  if (loaded.status() !== 200) throw new Error(`with the token: ${loaded.status()}`);
  await page.waitForSelector("#live.on", { timeout: LIMIT });
  await page.waitForSelector("#who:has-text('acting as')", { timeout: LIMIT });
  step("loaded with the token, live");
  await shot("tasks-empty");
  step("READY");

  // The task's question arrives live; answer it from the page.
  await page.goto(`${base}/?token=${encodeURIComponent(token)}#questions`);
  await page.waitForSelector("#live.on", { timeout: LIMIT });
  const question = page.locator("#questions .question").first();
  await question.waitFor({ timeout: LIMIT });
  step("question: " + (await question.locator(".text").innerText()));
  await shot("questions");
  await question.locator("textarea").fill("the harbour bridge");
  await question.locator("button[type=submit]").click();
  await page.waitForSelector("#toast div:has-text('answer: done')", { timeout: LIMIT });
  step("answered from the page");

  // The task tree shows the expert and its result, without a reload.
  await page.click("nav a[href='#tasks']");
  const task = page.locator("#tasks .task", { hasText: "harbour bridge is closed" }).first();
  await task.locator(".reply").waitFor({ timeout: LIMIT });
  await task.locator(".status.succeeded").first().waitFor({ timeout: LIMIT });
  const expert = (await task.locator(".expert").first().innerText()).trim();
  if (!expert.includes("/iron/experts/")) throw new Error(`no expert process in the tree: ${expert}`);
  step("task tree: reply and expert " + expert);
  // Its timeline opens under it: the question, its answer and the reply, as `iron task show`.
  await task.locator("button.show-timeline").first().click();
  const timeline = task.locator(".timeline").first();
  await timeline.locator("tr.step.judged").waitFor({ timeout: LIMIT });
  const steps = await timeline.innerText();
  for (const want of ["routed", "asked", "answered", "model", "judged"])
    if (!steps.includes(want)) throw new Error(`the timeline does not show ${want}: ${steps}`);
  step("task timeline: " + (await timeline.locator("tr.step").count()) + " steps");
  await shot("tasks");

  // The parked job resumes from its button.
  await page.click("nav a[href='#jobs']");
  const row = page.locator(`#jobs tr[data-job="${job}"]`);
  await row.locator(".status.parked").waitFor({ timeout: LIMIT });
  await shot("jobs-parked");
  await row.locator("button.resume").click();
  await row.locator(".status.done").waitFor({ timeout: LIMIT });
  step("job resumed from the page and done");
  await shot("jobs");

  for (const view of ["sessions", "nodes", "sources", "hunks", "events"]) {
    await page.click(`nav a[href='#${view}']`);
    if (view === "nodes") await page.locator("#nodes tr[data-node='/iron/console']").waitFor({ timeout: LIMIT });
    if (view === "events") await page.locator("#event-list .event").first().waitFor({ timeout: LIMIT });
    if (view === "sources") {
      const failing = page.locator("#sources tr.failing");
      await failing.locator(".status.failing").first().waitFor({ timeout: LIMIT });
      const text = await failing.innerText();
      for (const want of ["news_wires", "every input fails", "/srv/feeds/typo.xml", "/srv/feeds/wires.txt:3",
        "not found: no file /srv/feeds/typo.xml"])
        if (!text.includes(want)) throw new Error(`the Sources tab does not show ${want}: ${text}`);
      step("sources: a failing feed with where and why");
    }
    await shot(view);
  }
  if (errors.length) throw new Error("script errors on the page: " + errors.join("; "));
  step("PASS");
} catch (e) {
  // What the page knew when it failed, for the test's report.
  console.log("errors on the page: " + JSON.stringify(errors));
  for (const page of browser.contexts().flatMap(c => c.pages())) {
    const seen = await page.evaluate(async token => {
      const r = await fetch("/api/state", { headers: { Authorization: "Bearer " + token } });
      return { toasts: document.getElementById("toast").innerText, state: r.status + " " + (await r.text()) };
    }, token).catch(err => ({ error: String(err) }));
    console.log("page at failure: " + JSON.stringify(seen).slice(0, 4000));
    console.log("at " + page.url());
    await page.screenshot({ path: `${shots}/failure.png`, fullPage: true }).catch(() => {});
  }
  throw e;
} finally {
  await browser.close();
}
