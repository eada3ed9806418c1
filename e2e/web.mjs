// Browser test of the chat page served at / by `woolly serve`: headless
// Chromium driven by playwright-core. Run by web_test.go, which starts the
// server and passes WOOLLY_URL, WOOLLY_MODEL, WOOLLY_SLOW_MODEL,
// WOOLLY_API_KEY, CHROMIUM (the browser's path) and SCREENSHOT (a .png path).
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { check, passed } from './check.mjs';

const { WOOLLY_URL: url, WOOLLY_MODEL: model, WOOLLY_SLOW_MODEL: slowModel, WOOLLY_API_KEY: key,
  CHROMIUM: exe, SCREENSHOT: shot } = process.env;
for (const [k, v] of Object.entries({ url, model, slowModel, key, exe, shot })) {
  assert.ok(v, `${k} is not set`);
}

// Playwright makes a fresh profile directory (--user-data-dir) itself.
const browser = await chromium.launch({
  executablePath: exe,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
  timeout: 60_000,
});
const page = await browser.newPage({ viewport: { width: 1100, height: 720 } });
// Failed loads are checked through responses (failures below); other
// console errors and uncaught exceptions fail the test.
const pageErrors = [];
page.on('console', (m) => {
  if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) pageErrors.push(m.text());
});
page.on('pageerror', (e) => pageErrors.push(e.message));
const streams = [];
const failures = [];
page.on('response', (r) => {
  const path = new URL(r.url()).pathname;
  if (path === '/v1/chat/completions') streams.push(r.headers()['content-type']);
  if (r.status() >= 400) failures.push(`${r.status()} ${path}`);
});

const lastAnswer = page.locator('.msg.assistant').last();

try {
  await check('the page loads and asks for the API key', async () => {
    const res = await page.goto(url + '/');
    assert.equal(res.status(), 200);
    assert.match(res.headers()['content-type'], /^text\/html/);
    assert.equal(await page.title(), 'Woolly chat');
    await page.locator('#key-dialog').waitFor({ state: 'visible', timeout: 10_000 });
    await page.fill('#key-input', key);
    await page.click('#key-save');
  });

  await check('the model list comes from /api/tags', async () => {
    await page.waitForFunction((m) => [...document.querySelectorAll('#model option')].some((o) => o.value === m),
      `${model}:latest`, { timeout: 10_000 });
    await page.selectOption('#model', `${model}:latest`);
  });

  await check('a message gets an answer streamed in', async () => {
    // Every text the answer shows on its way, recorded as it changes.
    await page.evaluate(() => {
      window.seen = [];
      new MutationObserver(() => {
        const c = [...document.querySelectorAll('.msg.assistant .content')].pop();
        if (c && c.textContent && c.textContent !== window.seen.at(-1)) window.seen.push(c.textContent);
      }).observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
    });
    await page.fill('#input', 'Tell me a story about a cat.');
    await page.press('#input', 'Enter');
    await page.locator('.msg.user').first().waitFor();
    await page.waitForFunction(() => window.seen.length > 0, null, { timeout: 30_000 });
    await page.waitForFunction(() => !document.getElementById('send').disabled
      || window.seen.length >= 3, null, { timeout: 60_000 });
    const seen = await page.evaluate(() => window.seen);
    assert.ok(seen.length >= 3, `the answer appeared in ${seen.length} step(s): ${JSON.stringify(seen)}`);
    for (let i = 1; i < seen.length; i++) {
      assert.ok(seen[i].startsWith(seen[i - 1]), `step ${i} does not extend the text before it`);
    }
    assert.match(streams[0] || '', /^text\/event-stream/);
    // Wait for the end (or stop it): the answer stays, with its text.
    if (await page.locator('#stop').isEnabled()) {
      await page.waitForFunction(() => document.getElementById('stop').disabled, null, { timeout: 60_000 })
        .catch(async () => { await page.click('#stop'); });
    }
    const text = await lastAnswer.locator('.content').textContent();
    assert.ok(text.length >= seen.at(-1).length && text.trim().length > 0, `final answer ${JSON.stringify(text)}`);
    console.log(`     answer (${seen.length} steps): ${JSON.stringify(text.slice(0, 120))}`);
    await page.screenshot({ path: shot });
    console.log(`     screenshot: ${shot}`);
  });

  await check('Stop ends a long answer', async () => {
    // A random-weight model that talks until its context is full.
    // Stop is pressed as the first words show, from within the page: a
    // click from here could come after the answer's end (about 1 s).
    await page.selectOption('#model', `${slowModel}:latest`);
    await page.evaluate(() => {
      const n = document.querySelectorAll('.msg.assistant').length;
      window.stopped = false;
      const obs = new MutationObserver(() => {
        const a = document.querySelectorAll('.msg.assistant');
        const stop = document.getElementById('stop');
        if (a.length > n && a[a.length - 1].querySelector('.content').textContent && !stop.disabled) {
          obs.disconnect();
          stop.click();
          window.stopped = true;
        }
      });
      obs.observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
    });
    await page.fill('#input', 'Go on.');
    await page.click('#send');
    await page.waitForFunction(() => window.stopped, null, { timeout: 30_000 });
    await page.waitForFunction(() => document.getElementById('stop').disabled && !document.getElementById('send').disabled,
      null, { timeout: 10_000 });
    assert.equal(await lastAnswer.locator('.meta').textContent(), 'stopped');
    assert.equal(await page.locator('#status').textContent(), 'stopped');
  });

  await check('the conversation is kept across a reload', async () => {
    const before = await page.locator('.msg').allTextContents();
    await page.reload();
    await page.locator('.msg.user').first().waitFor({ timeout: 10_000 });
    assert.deepEqual(await page.locator('.msg').allTextContents(), before);
    assert.equal(await page.locator('#chats li').count(), 1);
    assert.equal(await page.locator('#chats li').first().textContent(), 'Tell me a story about a cat.');
    // New chat: an empty conversation, the old one still listed.
    await page.click('#new-chat');
    assert.equal(await page.locator('.msg').count(), 0);
    assert.equal(await page.locator('#chats li').count(), 2);
  });

  await check('reasoning kept with an answer shows folded', async () => {
    // None of the test models writes <think>, so the stored form of an
    // answer with reasoning_content is put in local storage and shown.
    await page.evaluate(() => {
      const chats = JSON.parse(localStorage.getItem('woolly.chats'));
      chats.unshift({ id: 'r', title: 'Thinking', messages: [{ role: 'user', content: 'Why?' },
        { role: 'assistant', model: 'm', reasoning: 'Because of this.', content: 'That.' }] });
      localStorage.setItem('woolly.chats', JSON.stringify(chats));
      localStorage.setItem('woolly.current', 'r');
    });
    await page.reload();
    const d = page.locator('.msg.assistant details');
    await d.waitFor({ timeout: 10_000 });
    assert.equal(await d.evaluate((e) => e.open), false);
    assert.equal(await d.locator('summary').textContent(), 'Reasoning');
    assert.equal(await d.locator('.reasoning').isVisible(), false);
    await d.locator('summary').click();
    assert.equal(await d.locator('.reasoning').textContent(), 'Because of this.');
    assert.equal(await d.locator('.reasoning').isVisible(), true);
    assert.equal(await page.locator('.msg.assistant .content').textContent(), 'That.');
  });

  assert.deepEqual(pageErrors, [], 'errors in the page');
  // The one refusal: the model list asked for before the key was given.
  assert.deepEqual(failures, ['401 /api/tags'], 'failed requests');
  console.log(`${passed()} checks passed`);
} catch (e) {
  await page.screenshot({ path: shot }).catch(() => {});
  console.log(`     screenshot: ${shot}`);
  throw e;
} finally {
  await browser.close();
}
