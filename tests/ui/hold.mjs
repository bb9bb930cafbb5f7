// Drives the console's Desk in headless Chromium for tests/product/task_history.rs: a bulletin held
// for an editor is shown with why it waits and its claims; the release endpoint refuses a
// request without the console's token and one with a forged token (the bulletin stays held);
// then Release on the page sends it, and the card moves from held to published.
// Any failure exits non-zero with why.
//
// Arguments: <base url> <token> <screenshot dir> <held bulletin id>

import { chromium } from "playwright-core";

const [base, token, shots, id] = process.argv.slice(2);
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
  page.on("console", m => { if (m.type() === "error" && !m.text().includes("401")) errors.push(m.text()); });
  // With a bulletin held, the Desk is where the page opens, the held bulletin first.
  await page.goto(`${base}/?token=${encodeURIComponent(token)}`);
  const card = page.locator(`#desk.active .held[data-held="${id}"]`);
  await card.waitFor({ timeout: LIMIT });
  const text = await card.innerText();
  for (const want of ["held for an editor", "confirmed on 3 independent owners", "Harbour bridge", "Release", "Drop"])
    if (!text.includes(want)) throw new Error(`the held bulletin does not show ${want}: ${text}`);
  if ((await card.locator(".claim").count()) !== 4) throw new Error(`4 claims expected: ${text}`);
  step("desk: the held bulletin with why it waits");
  await page.screenshot({ path: `${shots}/desk-held.png`, fullPage: true });

  // The same request the Release button makes, without the token and with a forged one.
  const statuses = await page.evaluate(async id => {
    const post = headers => fetch(`/api/desk/${id}/release`, {
      method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: "{}",
    }).then(r => r.status);
    return [await post({}), await post({ Authorization: "Bearer forged-" + "0".repeat(32) })];
  }, id);
  if (statuses.some(s => s !== 401)) throw new Error(`missing and forged tokens gave ${statuses}, not 401`);
  const state = await page.evaluate(async token =>
    (await fetch("/api/state", { headers: { Authorization: "Bearer " + token } })).json(), token);
  if (!state.held.some(h => h.id === id)) throw new Error("a refused release released the bulletin");
  step("desk: a missing or forged token is refused");

  await card.locator("button.release").click();
  await page.locator(`#desk .bulletin[data-bulletin="${id}"]`).waitFor({ timeout: LIMIT });
  if (await page.locator(`#desk .held[data-held="${id}"]`).count())
    throw new Error("the released bulletin is still shown as held");
  step("desk: released from the page, now published");
  await page.screenshot({ path: `${shots}/desk-released.png`, fullPage: true });
  if (errors.length) throw new Error("script errors on the page: " + errors.join("; "));
  step("PASS");
} catch (e) {
  console.log("FAILED: " + (e && e.stack || e));
  process.exitCode = 1;
} finally {
  await browser.close();
}
