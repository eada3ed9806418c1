// Woolly's chat page: models from GET /api/tags, answers streamed from
// POST /v1/chat/completions (SSE), conversations in localStorage.
'use strict';

const STORE = 'woolly.chats';   // [{id, title, model, messages: [{role, content, reasoning}]}]
const CURRENT = 'woolly.current';
const MODEL = 'woolly.model';
const KEY = 'woolly.apiKey';

const $ = (id) => document.getElementById(id);
const els = {
  chats: $('chats'), messages: $('messages'), model: $('model'), input: $('input'),
  send: $('send'), stop: $('stop'), status: $('status'), composer: $('composer'),
  keyDialog: $('key-dialog'), keyInput: $('key-input'),
};

let chats = load(STORE, []);
let current = localStorage.getItem(CURRENT) || '';
let controller = null; // AbortController of the answer being streamed

function load(name, fallback) {
  try {
    const v = JSON.parse(localStorage.getItem(name));
    return Array.isArray(v) ? v : fallback;
  } catch {
    return fallback;
  }
}

function save() {
  try {
    localStorage.setItem(STORE, JSON.stringify(chats));
    localStorage.setItem(CURRENT, current);
  } catch (e) {
    status('could not save the conversation: ' + e.message, true);
  }
}

function status(text, isError) {
  els.status.textContent = text;
  els.status.className = isError ? 'error' : '';
}

function headers() {
  const h = { 'Content-Type': 'application/json' };
  const key = localStorage.getItem(KEY);
  if (key) h.Authorization = 'Bearer ' + key;
  return h;
}

function chat() {
  return chats.find((c) => c.id === current);
}

function newChat() {
  const c = { id: Date.now().toString(36) + Math.random().toString(36).slice(2, 6), title: 'New chat', messages: [] };
  chats.unshift(c);
  current = c.id;
  save();
  render();
  els.input.focus();
}

// askKey shows the key dialog; it resolves true when a key was saved.
function askKey() {
  return new Promise((resolve) => {
    els.keyInput.value = localStorage.getItem(KEY) || '';
    els.keyDialog.onclose = () => {
      if (els.keyDialog.returnValue === 'save') {
        const k = els.keyInput.value.trim();
        if (k) localStorage.setItem(KEY, k); else localStorage.removeItem(KEY);
        resolve(true);
      } else {
        resolve(false);
      }
    };
    els.keyDialog.returnValue = '';
    els.keyDialog.showModal();
  });
}

// errorText reads an error body of any of the server's API families.
async function errorText(res) {
  const text = await res.text();
  try {
    const j = JSON.parse(text);
    const e = j.error;
    return (e && (e.message || (typeof e === 'string' && e))) || text;
  } catch {
    return text || res.statusText;
  }
}

async function loadModels() {
  status('loading models…');
  let res;
  try {
    res = await fetch('/api/tags', { headers: headers() });
  } catch (e) {
    status('cannot reach the server: ' + e.message, true);
    return;
  }
  if (res.status === 401) {
    status('this server needs an API key', true);
    if (await askKey()) loadModels();
    return;
  }
  if (!res.ok) {
    status('models: ' + (await errorText(res)), true);
    return;
  }
  const { models = [] } = await res.json();
  const want = (chat() && chat().model) || localStorage.getItem(MODEL);
  els.model.replaceChildren(...models.map((m) => {
    const o = document.createElement('option');
    o.value = o.textContent = m.name;
    o.selected = m.name === want;
    return o;
  }));
  status(models.length ? '' : 'no models in the server\'s models directory', !models.length);
  updateButtons();
}

function renderChats() {
  els.chats.replaceChildren(...chats.map((c) => {
    const li = document.createElement('li');
    li.textContent = c.title;
    li.title = c.title;
    if (c.id === current) li.className = 'current';
    li.onclick = () => {
      if (controller) return; // not while an answer streams into the current one
      current = c.id;
      save();
      render();
    };
    return li;
  }));
}

// messageView builds the element of one message; fill updates it.
function messageView(m) {
  const div = document.createElement('div');
  div.className = 'msg ' + m.role;
  const role = document.createElement('div');
  role.className = 'role';
  role.textContent = m.role === 'user' ? 'You' : m.role === 'error' ? 'Error' : (m.model || 'Assistant');
  const details = document.createElement('details');
  const summary = document.createElement('summary');
  const reasoning = document.createElement('div');
  reasoning.className = 'reasoning';
  details.append(summary, reasoning);
  const content = document.createElement('div');
  content.className = 'content';
  const meta = document.createElement('div');
  meta.className = 'meta';
  div.append(role, details, content, meta);
  const view = { div, details, summary, reasoning, content, meta };
  fill(view, m);
  return view;
}

function fill(v, m) {
  v.details.hidden = !m.reasoning;
  v.summary.textContent = m.thinking ? 'Thinking…' : 'Reasoning';
  v.reasoning.textContent = m.reasoning || '';
  v.content.textContent = m.content;
  v.meta.textContent = m.meta || '';
  v.meta.hidden = !m.meta;
}

function renderMessages() {
  const c = chat();
  if (!c || !c.messages.length) {
    const p = document.createElement('p');
    p.className = 'empty';
    p.textContent = 'Pick a model and send a message.';
    els.messages.replaceChildren(p);
    return;
  }
  els.messages.replaceChildren(...c.messages.map((m) => messageView(m).div));
  els.messages.scrollTop = els.messages.scrollHeight;
}

function render() {
  renderChats();
  renderMessages();
  const c = chat();
  if (c && c.model && [...els.model.options].some((o) => o.value === c.model)) els.model.value = c.model;
  updateButtons();
}

function updateButtons() {
  const busy = controller !== null;
  els.send.disabled = busy || !els.model.value;
  els.stop.disabled = !busy;
}

// sse yields the data payloads of a text/event-stream body.
async function* sse(body) {
  const reader = body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.search(/\r?\n\r?\n/)) >= 0) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i).replace(/^\r?\n\r?\n/, '');
      const data = frame.split(/\r?\n/).filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, '')).join('\n');
      if (data) yield data;
    }
  }
}

async function send(text) {
  if (!chat()) newChat();
  const c = chat();
  const model = els.model.value;
  if (!model) {
    status('pick a model first', true);
    return;
  }
  localStorage.setItem(MODEL, model);
  c.model = model;
  if (!c.messages.length) c.title = text.slice(0, 60);
  c.messages.push({ role: 'user', content: text });
  // The history sent: user and assistant turns, not errors or reasoning.
  const history = c.messages.filter((m) => m.role === 'user' || m.role === 'assistant')
    .map((m) => ({ role: m.role, content: m.content }));
  const answer = { role: 'assistant', model, content: '', reasoning: '' };
  c.messages.push(answer);
  save();
  render();
  const view = messageView(answer);
  els.messages.lastChild.replaceWith(view.div);

  controller = new AbortController();
  updateButtons();
  status('answering…');
  const t0 = performance.now();
  let tokens = 0;
  let finish = '';
  try {
    const res = await fetch('/v1/chat/completions', {
      method: 'POST', headers: headers(), signal: controller.signal,
      body: JSON.stringify({ model, messages: history, stream: true, stream_options: { include_usage: true } }),
    });
    if (!res.ok) {
      const msg = await errorText(res);
      if (res.status === 401) askKey();
      throw new Error(`${res.status}: ${msg}`);
    }
    for await (const data of sse(res.body)) {
      if (data === '[DONE]') break;
      const ev = JSON.parse(data);
      if (ev.error) throw new Error(ev.error.message || JSON.stringify(ev.error));
      if (ev.usage) tokens = ev.usage.completion_tokens || tokens;
      const ch = ev.choices && ev.choices[0];
      if (!ch) continue;
      const d = ch.delta || {};
      if (d.reasoning_content) {
        answer.reasoning += d.reasoning_content;
        answer.thinking = !answer.content;
      }
      if (d.content) {
        answer.content += d.content;
        answer.thinking = false;
      }
      if (ch.finish_reason) finish = ch.finish_reason;
      fill(view, answer);
      els.messages.scrollTop = els.messages.scrollHeight;
    }
    const secs = (performance.now() - t0) / 1000;
    answer.meta = [tokens && `${tokens} tokens`, tokens && `${(tokens / secs).toFixed(1)} tok/s`,
      finish && finish !== 'stop' && `finish: ${finish}`].filter(Boolean).join(' · ');
    status('');
  } catch (e) {
    if (e.name === 'AbortError') {
      answer.meta = 'stopped';
      status('stopped');
    } else {
      c.messages.push({ role: 'error', content: e.message });
      status('error', true);
    }
  } finally {
    answer.thinking = false;
    if (!answer.content && !answer.reasoning && answer.meta !== 'stopped') {
      c.messages.splice(c.messages.indexOf(answer), 1);
    }
    controller = null;
    save();
    render();
  }
}

els.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = els.input.value.trim();
  if (!text || controller) return;
  els.input.value = '';
  send(text);
});
els.input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    els.composer.requestSubmit();
  }
});
els.stop.onclick = () => controller && controller.abort();
els.model.onchange = () => {
  localStorage.setItem(MODEL, els.model.value);
  updateButtons();
};
$('reload-models').onclick = loadModels;
$('new-chat').onclick = () => { if (!controller) newChat(); };
$('clear-chats').onclick = () => {
  if (controller || !confirm('Delete every saved conversation?')) return;
  chats = [];
  current = '';
  save();
  render();
};
$('set-key').onclick = async () => { if (await askKey()) loadModels(); };

if (!chat()) current = chats.length ? chats[0].id : '';
render();
loadModels();
