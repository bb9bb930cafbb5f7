// Drives the console's Desk in headless Chromium for tests/product/task_history.rs, against the
// newsroom the README's first command runs: the sample bulletin is shown with its claims,
// why each has its status, and its evidence drawn by owner; the status filter narrows it.
// Any failure exits non-zero with why.
//
// Arguments: <base url> <token> <screenshot dir>

import { chromium } from "playwright-core";

const [base, token, shots] = process.argv.slice(2);
const LIMIT = 60_000;
const step = text => console.log(text);

const browser = await chromium.launch({
  executablePath: process.env.IRON_CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const errors = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
  page.on("pageerror", e => errors.push(String(e)));
  page.on("console", m => { if (m.type() === "error") errors.push(m.text()); });
  // With bulletins on the log, the Desk is where the page opens.
  await page.goto(`${base}/?token=${encodeURIComponent(token)}`);
  const bulletin = page.locator("#desk.active .bulletin").first();
  await bulletin.waitFor({ timeout: LIMIT });
  const claims = bulletin.locator(".claim");
  if ((await claims.count()) !== 4) throw new Error(`4 claims expected: ${await bulletin.innerText()}`);
  const confirmed = bulletin.locator(".claim", { has: page.locator(".status.confirmed") });
  const text = await confirmed.innerText();
  for (const want of ["Harbour bridge", "3 independent owners", "Sample Wire, City Desk", "https://"])
    if (!text.includes(want)) throw new Error(`the confirmed claim does not show ${want}: ${text}`);
  if ((await confirmed.locator("svg rect.owner").count()) !== 3)
    throw new Error("the confirmed claim's picture has not one box per owner");
  const disputed = bulletin.locator(".claim", { has: page.locator(".status.contradicted") });
  if (!(await disputed.innerText()).includes("disputed by harbour-authority"))
    throw new Error(`the contradicted claim does not say who disputes it: ${await disputed.innerText()}`);
  if ((await disputed.locator("svg rect.owner[stroke='#c55']").count()) !== 1)
    throw new Error("the dispute is not drawn apart");
  // One owner's two outlets are one box.
  const flood = bulletin.locator(".claim", { hasText: "Quay Street" });
  if ((await flood.locator("svg rect.owner").count()) !== 1)
    throw new Error("two outlets of one owner are not drawn as one source");
  step("desk: the bulletin with its evidence");
  await page.screenshot({ path: `${shots}/desk.png`, fullPage: true });
  await page.selectOption("#desk select[name=status]", "contradicted");
  await page.waitForFunction(() => document.querySelectorAll("#desk .claim").length === 1, null, { timeout: LIMIT });
  step("desk: filtered by status");
  if (errors.length) throw new Error("script errors on the page: " + errors.join("; "));
  step("PASS");
} catch (e) {
  console.log("FAILED: " + (e && e.stack || e));
  process.exitCode = 1;
} finally {
  await browser.close();
}
