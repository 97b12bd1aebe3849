// The Herald console: a client of the admin API (protocol.md) and of GET /v1/admin/live, the
// server-sent events that carry every consumer's figures after each pass of the node's reads.
// The live stream is read with fetch, not EventSource, so that the token goes in a header and never
// in a URL. Everything the page writes from the server goes in as text, never as HTML.

const TOKEN_KEY = 'herald.console.token';
const $ = (selector) => document.querySelector(selector);

const state = {
  token: sessionStorage.getItem(TOKEN_KEY) || '',
  retryMs: 2000,
  /** The latest figures of each consumer, by name. */
  figures: new Map(),
  /** The consumer whose details are open, the figures they and its queues were read at, and the latest load. */
  selected: null,
  detailsSeen: '',
  queuesSeen: '',
  loads: 0,
  /** Resolves the live stream's wait for a token, when it waits. */
  tokenArrived: null,
};

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// ---- the API

async function api(method, path, body) {
  const headers = {};
  if (state.token) headers.Authorization = `Bearer ${state.token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  const json = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const error = json && json.error ? json.error : { code: String(response.status), message: response.statusText };
    // a 403 is about this request (a consumer outside the token's consume grant), not the sign-in
    if (response.status === 401) signInNeeded(error.message);
    throw new ApiError(response.status, error.code, error.message);
  }
  return json;
}

const consumerPath = (consumer) => `/v1/consumers/${encodeURIComponent(consumer)}`;

// ---- signing in

function signInNeeded(reason) {
  $('#sign-in').hidden = false;
  $('#sign-in-error').textContent = state.token ? reason : '';
  $('#sign-out').hidden = true;
  setStatus('signed out', 'down');
}

/** Resolves once a token is given in the sign-in form. */
function tokenGiven() {
  return new Promise((resolve) => { state.tokenArrived = resolve; });
}

$('#sign-in').addEventListener('submit', (submit) => {
  submit.preventDefault();
  state.token = $('#token').value.trim();
  sessionStorage.setItem(TOKEN_KEY, state.token);
  $('#token').value = '';
  $('#sign-in').hidden = true;
  $('#sign-out').hidden = !state.token;
  state.detailsSeen = '';
  state.queuesSeen = '';
  if (state.tokenArrived) {
    state.tokenArrived();
    state.tokenArrived = null;
  }
});

$('#sign-out').addEventListener('click', () => {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = '';
  location.reload();
});

// ---- the live stream

async function follow() {
  for (;;) {
    try {
      const headers = state.token ? { Authorization: `Bearer ${state.token}` } : {};
      const response = await fetch('/v1/admin/live', { headers, cache: 'no-store' });
      if (response.status === 401 || response.status === 403) {
        const body = await response.json().catch(() => null);
        signInNeeded(body && body.error ? body.error.message : response.statusText);
        await tokenGiven();
        continue;
      }
      if (!response.ok) throw new Error(`the live stream answered ${response.status}`);
      setStatus('live', 'live');
      $('#sign-out').hidden = !state.token;
      await readEvents(response.body);
      setStatus('reconnecting…', 'down');
    } catch (failure) {
      setStatus(`reconnecting… (${failure.message})`, 'down');
    }
    await new Promise((resolve) => setTimeout(resolve, state.retryMs));
  }
}

/** Reads server-sent events (blank-line separated blocks of "field: value" lines) until the stream ends. */
async function readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    await readBlocks(reader);
  } finally {
    // a stream given up on is closed, not left open beside the next one
    reader.cancel().catch(() => {});
  }
}

async function readBlocks(reader) {
  let buffered = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffered += value;
    let end;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      let name = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const content = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') name = content;
        else if (field === 'data') data.push(content);
        else if (field === 'retry' && /^\d+$/.test(content)) state.retryMs = Number(content);
      }
      if (name === 'figures' && data.length) showFigures(JSON.parse(data.join('\n')));
    }
  }
}

function setStatus(text, kind) {
  const live = $('#live');
  live.textContent = text;
  live.className = `status ${kind || ''}`;
}

// ---- the consumers

const COLUMNS = ['backlog', 'unacked', 'stale', 'deadLetters', 'errors', 'published', 'delivered', 'acked',
  'oldestUnackedAgeMs', 'state'];

function showFigures(figures) {
  showAlerts(figures.stats);
  state.figures = new Map(figures.consumers.map((row) => [row.consumer, row]));
  const body = $('#consumers tbody');
  const rows = new Map([...body.rows].map((row) => [row.dataset.consumer, row]));
  for (const consumer of figures.consumers) {
    let row = rows.get(consumer.consumer);
    rows.delete(consumer.consumer);
    if (!row) row = newConsumerRow(consumer.consumer);
    body.appendChild(row); // in the stream's order, which is by name
    const rates = consumer.rates || {};
    const shown = {
      backlog: count(consumer.backlog),
      unacked: count(consumer.unacked),
      stale: count(consumer.stale),
      deadLetters: count(consumer.deadLetters),
      errors: count(consumer.errors),
      published: rate(rates.published),
      delivered: rate(rates.delivered),
      acked: rate(rates.acked),
      oldestUnackedAgeMs: consumer.unacked ? duration(consumer.oldestUnackedAgeMs) : '–',
      state: consumer.blockedUntil ? `blocked ${duration(consumer.blockedUntil - figures.at)}` : 'ok',
    };
    for (const field of COLUMNS) {
      const cell = row.querySelector(`[data-field="${field}"]`);
      cell.textContent = shown[field];
    }
    row.querySelector('[data-field="stale"]').className = consumer.stale ? 'warn' : '';
    row.querySelector('[data-field="deadLetters"]').className = consumer.deadLetters ? 'bad' : '';
    row.querySelector('[data-field="errors"]').className = consumer.errors ? 'bad' : '';
    row.querySelector('[data-field="state"]').className = consumer.blockedUntil ? 'bad' : '';
  }
  rows.forEach((gone) => gone.remove());
  $('#updated').textContent = figures.at
    ? `Figures of ${new Date(figures.at).toLocaleTimeString()}, read every ${duration(figures.everyMs)} while this page is open.`
    : 'No consumer yet.';
  fillConsumerChoice();
  refreshSelected();
}

function newConsumerRow(consumer) {
  const row = document.createElement('tr');
  row.dataset.consumer = consumer;
  const name = document.createElement('td');
  name.textContent = consumer;
  row.appendChild(name);
  for (const field of COLUMNS) {
    const cell = document.createElement('td');
    cell.dataset.field = field;
    row.appendChild(cell);
  }
  row.addEventListener('click', () => select(consumer));
  return row;
}

function showAlerts(stats) {
  const alerts = $('#alerts');
  alerts.replaceChildren();
  if (!stats) {
    alerts.appendChild(paragraph('alert raised', 'The gateway figures could not be read: is Redis away?'));
    return;
  }
  const spool = stats.spool;
  alerts.appendChild(paragraph(`alert ${spool.alert === 'RAISED' ? 'raised' : ''}`,
    `Spool: ${bytes(spool.usedBytes)}${spool.quotaBytes ? ` of ${bytes(spool.quotaBytes)}` : ''}`
    + (spool.alert === 'RAISED' ? ` — alert raised (over ${spool.raisePercent} %)` : '')));
  const unacked = stats.unacked;
  alerts.appendChild(paragraph(`alert ${unacked.alert === 'RAISED' ? 'raised' : ''}`,
    `Unacked: ${count(unacked.used)}${unacked.limit ? ` of ${count(unacked.limit)}` : ''}`
    + (unacked.alert === 'RAISED' ? ' — alert raised' : '')));
  state.chargedTopics = stats.chargedTopics || {};
}

// ---- one consumer: its figures, settings, dead-letter and error queues

function select(consumer) {
  state.selected = consumer;
  state.detailsSeen = '';
  state.queuesSeen = '';
  for (const row of $('#consumers tbody').rows) row.classList.toggle('selected', row.dataset.consumer === consumer);
  $('#consumer').hidden = false;
  $('#consumer-name').textContent = consumer;
  refreshSelected();
}

/**
 * Reads the open consumer's details again when its counts changed since they were read, and its
 * queues only when their sizes did: a queue's read stores a batch for acks, so it is not made at
 * every pass.
 */
function refreshSelected() {
  const consumer = state.selected;
  if (!consumer) return;
  const figures = state.figures.get(consumer);
  if (!figures) {
    $('#consumer').hidden = true;
    state.selected = null;
    return;
  }
  const details = JSON.stringify([figures.backlog, figures.unacked, figures.stale, figures.deadLetters, figures.errors]);
  const queues = JSON.stringify([figures.deadLetters, figures.errors]);
  if (details === state.detailsSeen) return;
  loadConsumer(consumer, queues !== state.queuesSeen).then((loaded) => {
    if (loaded) {
      state.detailsSeen = details;
      state.queuesSeen = queues;
    }
  }).catch((failure) => say(failure.message, true));
}

/** Shows a consumer's details, and its queues when asked; false when a later load overtook this one. */
async function loadConsumer(consumer, withQueues) {
  const load = ++state.loads;
  const [metadata, dead, errors] = await Promise.all([
    api('GET', `${consumerPath(consumer)}/metadata`),
    withQueues ? api('POST', `${consumerPath(consumer)}/dead-letters/poll`, { maxEvents: 100 }) : null,
    withQueues ? api('POST', `${consumerPath(consumer)}/errors/poll`, { maxEvents: 100 }) : null,
  ]);
  if (state.selected !== consumer || load !== state.loads) return false;
  const list = $('#consumer-metadata');
  list.replaceChildren();
  const totals = metadata.totals;
  const shown = [
    ['Backlog', count(metadata.backlog)], ['Unacked', count(metadata.unacked)], ['Stale', count(metadata.stale)],
    ['Scheduled', count(metadata.scheduled)], ['Delayed', count(metadata.delayed)],
    ['Oldest in backlog', duration(metadata.oldestBacklogAgeMs)], ['Spooled', bytes(metadata.spooledBytes)],
    ['Published', count(totals.published)], ['Delivered', count(totals.delivered)], ['Acked', count(totals.acked)],
    ['Redelivered', count(totals.redelivered)], ['Dead-lettered', count(totals.deadLettered)],
    ['Rejected', count(totals.rejected)], ['Dropped', count(totals.dropped)],
    ['Throttle', metadata.throttle.blocked ? `blocked until ${new Date(metadata.throttle.blockedUntil).toLocaleTimeString()}` : 'not blocked'],
  ];
  for (const [term, value] of shown) {
    const dt = document.createElement('dt');
    dt.textContent = term;
    const dd = document.createElement('dd');
    dd.textContent = value;
    list.append(dt, dd);
  }
  $('#consumer-settings').textContent = JSON.stringify(metadata.config, null, 2);
  if (withQueues) {
    showQueue('dead-letters', consumer, dead.events);
    showQueue('errors', consumer, errors.events);
  }
  return true;
}

function showQueue(queue, consumer, events) {
  const box = document.querySelector(`.queue[data-queue="${queue}"]`);
  const body = box.querySelector('tbody');
  body.replaceChildren();
  if (events.length === 0) {
    const row = body.insertRow();
    const cell = row.insertCell();
    cell.colSpan = 6;
    cell.className = 'quiet';
    cell.textContent = 'Empty.';
  }
  for (const event of events) {
    const row = body.insertRow();
    row.dataset.eventId = event.eventId;
    for (const text of [event.eventId, event.topic, event.deadLetterReason || 'REJECTED', count(event.deliveryCount),
      event.reason || '']) {
      row.insertCell().textContent = text;
    }
    const actions = row.insertCell();
    actions.append(
      button('Redrive', 'redrive', () => redrive(queue, consumer, { eventIds: [event.eventId] })),
      button('History', 'history', () => showHistory(consumer, event.eventId)),
    );
  }
  box.querySelector('.redrive-all').onclick = () => {
    if (window.confirm(`Send every event of ${consumer}'s ${queue} queue back to its queue?`)) {
      redrive(queue, consumer, { all: true });
    }
  };
  box.querySelector('.redrive-all').disabled = events.length === 0;
}

async function redrive(queue, consumer, which) {
  try {
    const result = await api('POST', `${consumerPath(consumer)}/${queue}/redrive`, which);
    const missed = (result.results || []).filter((r) => r.status !== 'REDRIVEN');
    say(`${count(result.redriven)} event(s) of ${consumer} sent back to its queue.`
      + missed.map((r) => ` ${r.eventId}: ${r.status}.`).join(''), missed.length > 0);
    await loadConsumer(consumer, true);
  } catch (failure) {
    say(`Redrive failed: ${failure.message}`, true);
  }
}

// ---- topics

async function loadTopics() {
  const { topics } = await api('GET', '/v1/admin/topics');
  const body = $('#topics tbody');
  body.replaceChildren();
  for (const topic of topics) {
    const row = body.insertRow();
    const charged = (state.chargedTopics || {})[topic.topic];
    for (const text of [topic.topic, topic.enabled ? 'yes' : 'no (refuses publishes)',
      topic.maxEventBytes == null ? 'gateway limit' : bytes(topic.maxEventBytes),
      topic.quotaBytes == null ? 'none' : bytes(topic.quotaBytes), charged ? bytes(charged.usedBytes) : '–',
      topic.namespace || '–']) {
      row.insertCell().textContent = text;
    }
  }
  if (topics.length === 0) body.insertRow().insertCell().textContent = 'No topic has settings of its own.';
}

// ---- one event's history

function fillConsumerChoice() {
  const choice = $('#history-consumer');
  const names = [...state.figures.keys()];
  if (choice.options.length === names.length && [...choice.options].every((o, i) => o.value === names[i])) return;
  const chosen = choice.value;
  choice.replaceChildren(...names.map((name) => new Option(name, name, false, name === chosen)));
}

function showHistory(consumer, eventId) {
  openTab('history');
  fillConsumerChoice();
  $('#history-consumer').value = consumer;
  $('#history-event').value = eventId;
  loadHistory().catch((failure) => say(failure.message, true));
}

async function loadHistory() {
  const consumer = $('#history-consumer').value;
  const eventId = $('#history-event').value.trim();
  const out = $('#history');
  out.replaceChildren();
  let event;
  try {
    event = await api('GET', `${consumerPath(consumer)}/events/${encodeURIComponent(eventId)}`);
  } catch (failure) {
    out.appendChild(paragraph('error', failure.message));
    return;
  }
  const facts = [`State: ${event.state}`];
  if (event.deadLetterReason) facts.push(`dead-lettered (${event.deadLetterReason}) at ${time(event.deadLetteredAt)}`);
  if (event.redrivenAt) facts.push(`redriven at ${time(event.redrivenAt)}`);
  if (event.droppedAt) facts.push(`dropped at ${time(event.droppedAt)}`);
  if (event.expiredAt) facts.push(`expired at ${time(event.expiredAt)}`);
  if (event.heldBack) facts.push(`held back behind ${event.waitingBehind} (ordering by key)`);
  out.appendChild(paragraph('history-state', facts.join('; ')));
  const table = document.createElement('table');
  const head = table.createTHead().insertRow();
  for (const title of ['#', 'Handed out', 'Node', 'Connection', 'Deadline', 'Outcome', 'When', 'Reason']) {
    const th = document.createElement('th');
    th.textContent = title;
    head.appendChild(th);
  }
  const body = table.createTBody();
  for (const delivery of event.deliveries || []) {
    const row = body.insertRow();
    for (const text of [delivery.deliveryCount, time(delivery.handedOutAt), delivery.node, delivery.connection,
      time(delivery.ackDeadline), delivery.outcome || 'open', time(delivery.outcomeAt), delivery.reason || '']) {
      row.insertCell().textContent = text;
    }
  }
  out.appendChild(table);
}

$('#history-form').addEventListener('submit', (submit) => {
  submit.preventDefault();
  loadHistory().catch((failure) => say(failure.message, true));
});

// ---- tabs, messages and formats

function openTab(tab) {
  for (const choice of document.querySelectorAll('nav button')) {
    choice.setAttribute('aria-pressed', String(choice.dataset.tab === tab));
    $(`#tab-${choice.dataset.tab}`).hidden = choice.dataset.tab !== tab;
  }
  if (tab === 'topics') loadTopics().catch((failure) => say(failure.message, true));
}

for (const choice of document.querySelectorAll('nav button')) {
  choice.addEventListener('click', () => openTab(choice.dataset.tab));
}

function say(text, failed) {
  const message = $('#message');
  message.textContent = text;
  message.className = failed ? 'error' : '';
}

function paragraph(className, text) {
  const p = document.createElement('p');
  p.className = className;
  p.textContent = text;
  return p;
}

function button(text, className, action) {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = className;
  b.textContent = text;
  b.addEventListener('click', action);
  return b;
}

const count = (n) => (n == null ? '–' : Number(n).toLocaleString('en'));
const rate = (n) => (n == null ? '–' : n.toFixed(1));
const time = (ms) => (ms == null ? '–' : new Date(ms).toLocaleTimeString());

function duration(ms) {
  if (ms == null) return '–';
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

function bytes(n) {
  if (n == null) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

follow();
