// Drives the console in headless Chromium against a running node (started by ConsoleBrowserIT):
// sees a consumer's backlog change on the page without a reload, then dead-letters an event and
// redrives it from the page. Exits 0 when every step holds; otherwise prints the step that failed.
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const { HERALD_URL: url, HERALD_TOKEN: token, HERALD_CONSUMER: consumer, HERALD_TOPIC: topic } = process.env;
const STEP_MS = 20_000;

async function api(method, path, body) {
  const response = await fetch(url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

function step(name) {
  console.log(`step: ${name}`);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  // this machine's network is closed: no background connections, no Google lookups
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
});
const pageErrors = [];
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(STEP_MS);
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') pageErrors.push(message.text());
  });
  const cell = (field) => page.locator(`#consumers tr[data-consumer="${consumer}"] [data-field="${field}"]`);
  const shows = async (field, text) => {
    await page.waitForFunction(([c, f, t]) => document.querySelector(
      `#consumers tr[data-consumer="${c}"] [data-field="${f}"]`)?.textContent === t, [consumer, field, text],
    { timeout: STEP_MS });
  };

  step('the page asks for a token, and signs in with one');
  await page.goto(`${url}/console`);
  await page.locator('#sign-in').waitFor({ state: 'visible' });
  await page.fill('#token', 'not-a-key');
  await page.click('#sign-in button[type="submit"]');
  await page.locator('#sign-in-error').filter({ hasText: /./ }).waitFor();
  await page.fill('#token', token);
  await page.click('#sign-in button[type="submit"]');
  await page.locator('#live.live').waitFor();
  // a reload would lose this mark
  await page.evaluate(() => { window.heraldTestMark = 'same page'; });

  step('the consumer shows with an empty backlog');
  await shows('backlog', '0');

  step('three events published: the backlog figure changes on the page');
  await api('POST', `/v1/topics/${topic}/events`, { events: [{ payload: 1 }, { payload: 2 }, { payload: 3 }] });
  await shows('backlog', '3');

  step('one event handed out and nacked past maxDeliveries: it shows in the dead-letter queue');
  const batch = await api('POST', `/v1/consumers/${consumer}/poll`, { maxEvents: 1 });
  assert.equal(batch.events.length, 1);
  const dead = batch.events[0];
  const nack = await api('POST', `/v1/consumers/${consumer}/nacks`,
    { ackIds: [dead.ackId], action: 'REQUEUE', reason: 'cannot parse the invoice' });
  assert.equal(nack.results[0].status, 'DEAD_LETTERED');
  await shows('deadLetters', '1');
  await shows('backlog', '2');
  await cell('backlog').click();
  const deadRow = page.locator(`.queue[data-queue="dead-letters"] tr[data-event-id="${dead.eventId}"]`);
  await deadRow.waitFor();
  const rowText = await deadRow.textContent();
  assert.match(rowText, /MAX_DELIVERIES/);
  assert.match(rowText, /cannot parse the invoice/);

  step("the event's history says why it was dead-lettered");
  await deadRow.locator('button.history').click();
  await page.locator('#history .history-state').filter({ hasText: 'DEAD_LETTERED' }).waitFor();
  assert.match(await page.locator('#history').textContent(), /MAX_DELIVERIES/);
  await page.click('nav button[data-tab="consumers"]');

  step('redriven from the page: the dead-letter queue empties and the backlog is back to 3');
  await deadRow.locator('button.redrive').click();
  await page.locator('#message').filter({ hasText: '1 event(s)' }).waitFor();
  await deadRow.waitFor({ state: 'detached' });
  await shows('deadLetters', '0');
  await shows('backlog', '3');
  const history = await api('GET', `/v1/consumers/${consumer}/events/${dead.eventId}`);
  assert.equal(history.state, 'BACKLOG');

  step('the page was never reloaded, and logged no error');
  assert.equal(await page.evaluate(() => window.heraldTestMark), 'same page');
  // the wrong token's 401 is the one error the browser logs itself
  assert.deepEqual(pageErrors.filter((e) => !/status of 401/.test(e)), []);
  console.log('console test passed');
} finally {
  await browser.close();
}
