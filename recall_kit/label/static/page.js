// The labelling page: one query at a time, a key for every action, the next pair shown from what the
// server sent ahead (prefetched) while the grade is written; every action is one request to this same
// server (the page's Content-Security-Policy allows no other host). Text goes in by textContent only.
"use strict";

const base = location.pathname.endsWith("/") ? location.pathname : location.pathname + "/";
let state = null;      // the server's last answer
let shown = null;      // the pair on screen
let upcoming = [];     // the pairs prefetched after it
let inflight = 0;      // grades sent and not yet answered
let returnTo = null;   // "contrast" when the pair on screen was chosen there
let contrastHits = []; // the contrast view's hits, in reading order
let selected = -1;     // the chosen one

function $(id) { return document.getElementById(id); }

function text(element, value) { element.textContent = value === null || value === undefined ? "" : String(value); }

function element(tag, className, content) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (content !== undefined) text(made, content);
  return made;
}

// Requests go one after another, in the order of the keys (the server takes them as they come).
let chain = Promise.resolve();

function call(path, body) {
  const made = chain.then(() => request(path, body));
  chain = made.catch(() => null);
  return made;
}

// A request to this server; a refusal (JSON or plain text) is shown as the server wrote it.
async function request(path, body) {
  const options = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  let response;
  try {
    response = await fetch(base + path, options);
  } catch (failure) {
    showError(`The server did not answer (${failure.message}): is recall-kit label still running?`);
    return null;
  }
  const raw = await response.text();
  const isJson = (response.headers.get("Content-Type") || "").startsWith("application/json");
  let data = null;
  if (isJson) { try { data = JSON.parse(raw); } catch (ignored) { data = null; } }
  if (!response.ok) {
    showError(`${response.status}: ${data && data.error ? data.error : raw.trim() || response.statusText}`);
    return null;
  }
  return data;
}

function showError(message) { text($("error"), message); $("error").hidden = false; }

function duration(seconds) {
  if (seconds === null || seconds === undefined) return null;
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  return `${(seconds / 3600).toFixed(1)} h`;
}

// The progress line: done, the intervals' sample left, what is left, the time left at this pace;
// with nothing left, says so (not "0 left · time left: after two grades").
function progressWords(assessor, p) {
  if (p.left === 0) return `${assessor}: ${p.done} done · nothing left to grade`;
  const sample = p.sample_left > 0 ? `the intervals' sample: ${p.sample_left} pairs left, ` +
    `${p.sample_queries_done} of ${p.sample_queries} queries done · ` : "";
  if (p.to_settle === 0 && !sample) return `${assessor}: ${p.done} done · every verdict settled · ${p.left} more in the pool if you wish`;
  const settle = sample + (p.to_settle === null ? `${p.left} left in the pool` : `${p.to_settle} left to settle every verdict`);
  const pace = p.seconds_left === null ? "time left: after two grades"
    : `about ${duration(p.seconds_left)} left at your pace (${p.seconds_per_pair} s a pair)`;
  return `${assessor}: ${p.done} done · ${settle} · ${pace}`;
}

function renderProgress() {
  const before = state.previous ? ` · the model judge graded the last pair ${state.previous.model_grade} ` +
    `(you: ${state.previous.grade})` : "";
  text($("progress"), progressWords(state.assessor, state.progress) + before);
  const decision = state.decision;
  if (decision) {
    const open = decision.verdicts.filter((v) => v.flip !== "cannot flip").length;
    text($("settle"), open === 0 ? "No verdict can flip." : `${open} of ${decision.verdicts.length} verdicts can flip.`);
  } else {
    text($("settle"), "");
  }
  $("back").disabled = !state.can_go_back;
}

function renderGrades() {
  const box = $("grades");
  if (box.childElementCount) return;
  for (const grade of state.scale) {
    const button = element("button", "", `${grade.value} ${grade.name}`);
    button.type = "button";
    button.dataset.grade = grade.value;
    button.addEventListener("click", () => gradeShown(grade.value));
    box.append(button, element("span", "guide", grade.guide));
  }
  for (const [id, label, action] of [["skip", "s skip", skip], ["back", "b back", back]]) {
    const button = element("button", "", label);
    button.type = "button";
    button.id = id;
    button.addEventListener("click", action);
    box.append(button, element("span", "guide", ""));
  }
}

function renderWhy(item) {
  const list = $("why");
  list.replaceChildren();
  const ranked = item.why.ranks.filter((r) => r.rank !== null).map((r) => `${r.system} #${r.rank}`);
  const absent = item.why.ranks.filter((r) => r.rank === null).map((r) => `${r.system} (not in its top ${r.depth})`);
  if (ranked.length || absent.length) list.append(element("li", "", `Ranked by ${[...ranked, ...absent].join(", ")}`));
  for (const move of item.why.moves) {
    list.append(element("li", "", `Can move ${move.metric} ${move.scope === "overall" ? "overall" : "in " + move.scope}: `
      + `${move.candidate} against ${move.baseline}, a verdict that can still flip`));
  }
  if (item.why.sample) {
    list.append(element("li", "", "In the study's random sample of open queries: its labels make the hole-aware "
      + "intervals, so every unjudged hit of this query is asked"));
  }
  if (!item.why.moves.length && !item.why.sample) {
    list.append(element("li", "", "Moves no verdict that can flip on its own: it completes the judged set."));
  }
}

function renderItem(item) {
  shown = item;
  $("item").hidden = !item;
  $("done").hidden = !!item;
  const list = $("judged");
  list.replaceChildren();
  if (!item) { text($("meta"), ""); return; }
  const more = state && state.progress ? state.progress.in_query : 0;
  text($("meta"), `query ${item.query_id} (${item.stratum}) · memory ${item.doc_id}`);
  text($("query"), item.query);
  text($("memory-id"), `id ${item.doc_id}`);
  renderMemory(item);
  text($("current-grade"), item.grade === null || item.grade === undefined ? `not graded yet · ${more} more for this query`
    : `you graded it ${item.grade}`);
  $("note").value = item.note || "";
  text($("flag"), item.flagged ? "⚑ flagged (f takes it off)" : "");
  renderWhy(item);
  for (const judged of item.judged) {
    const li = element("li");
    li.append(element("span", "grade", judged.grade), document.createTextNode(` ${judged.text}`));
    if (judged.text_more) li.append(element("span", "more", ` … ${judged.text_more.toLocaleString("en")} more characters`));
    list.append(li);
  }
}

// The server sends a memory up to a bound (a few KB); the rest is asked for by the "a" key.
function renderMemory(item) {
  text($("memory"), item.memory);
  const more = item.memory_more || 0;
  $("memory-more").hidden = !more;
  text($("memory-more"), more ? `… ${more.toLocaleString("en")} more characters: a shows all` : "");
}

async function showAll() {
  const item = shown;
  if (!item || !item.memory_more) return;
  const answer = await call("api/memory", { query_id: item.query_id, doc_id: item.doc_id });
  if (!answer || !same(item, shown)) return;
  item.memory = answer.memory;
  item.memory_more = 0;
  renderMemory(item);
}

function same(a, b) { return !!a && !!b && a.query_id === b.query_id && a.doc_id === b.doc_id; }

// The server's answer: its progress always; its pair only when it differs from the one on screen.
function take(next) {
  if (!next) return;
  state = next;
  renderGrades();
  renderProgress();
  if (inflight > 0) return;
  upcoming = next.upcoming;
  if (!same(next.item, shown) || !shown) renderItem(next.item);
  else text($("current-grade"), shown.grade === null || shown.grade === undefined
    ? `not graded yet · ${next.progress.in_query} more for this query` : `you graded it ${shown.grade}`);
}

async function gradeShown(value) {
  if (!shown || !state.scale.some((g) => g.value === value)) return;
  const item = shown;
  const fromContrast = returnTo === "contrast";
  // The next pair shows at once when it is this query's; the next query is the server's to choose
  // (the order moves as grades come in: a query left on an old guess would come back later).
  const ahead = fromContrast ? null : upcoming.shift() || null;
  const next = ahead && ahead.query_id === item.query_id ? ahead : null;
  if (next) renderItem(next);
  else { upcoming = []; shown = null; }  // keys wait for the server's answer: the graded pair is not graded twice
  inflight += 1;
  const answer = await call("api/grade", { query_id: item.query_id, doc_id: item.doc_id, grade: value,
    then: next ? { query_id: next.query_id, doc_id: next.doc_id } : null });
  inflight -= 1;
  if (!answer) { if (inflight === 0) renderItem(item); return; }
  if (fromContrast) { returnTo = null; take(answer); await showContrast(); return; }
  take(answer);
}

async function skip() { returnTo = null; take(await call("api/skip", {})); }
async function back() { returnTo = null; take(await call("api/back", {})); }

async function keepNote(flagged) {
  if (!shown) return;
  const item = shown;
  const before = [item.note, item.flagged];
  item.note = $("note").value;
  item.flagged = flagged;
  text($("flag"), flagged ? "⚑ flagged (f takes it off)" : "");
  const answer = await call("api/note", { query_id: item.query_id, doc_id: item.doc_id, note: item.note, flagged });
  if (!answer) { [item.note, item.flagged] = before; return; }
  take(answer);
}

// -- the contrast view ------------------------------------------------------------------------------

function highlighted(content, terms) {
  const wanted = new Set(terms);
  const out = [];
  for (const part of content.split(/(\w+)/u)) {
    const word = part.toLowerCase();
    const hit = wanted.has(word) || [...wanted].some((t) => t.length > 3 && word.startsWith(t));
    out.push(hit ? element("mark", "", part) : document.createTextNode(part));
  }
  return out;
}

function hitElement(query, side, hit, terms) {
  const kind = hit.grade === null ? "unjudged" : hit.grade > 0 ? "relevant" : "not-relevant";
  const row = element("div", `hit ${kind}`);
  row.dataset.query = query.query_id;
  row.dataset.doc = hit.doc_id;
  row.dataset.side = side;
  const mark = hit.grade === null ? "unjudged" : hit.grade > 0 ? `relevant ${hit.grade}` : "not relevant";
  row.append(element("strong", "", `${hit.rank}. `), element("span", "id", `[${hit.doc_id}] ${mark}`));
  let move = "only here";
  if (hit.other_rank !== null) {
    const by = hit.other_rank - hit.rank;
    move = `⇄ ${hit.other_rank}` + (by === 0 ? " =" : side === "challenger" ? (by > 0 ? ` ▲${by}` : ` ▼${-by}`) : "");
  }
  row.append(element("span", "move", move), document.createElement("br"));
  if (hit.offerable) row.append(...highlighted(hit.text, terms));
  if (hit.offerable && hit.text_more) row.append(element("span", "more", ` … ${hit.text_more.toLocaleString("en")} more characters`));
  else row.append(document.createTextNode("(not shown)"));
  if (hit.offerable) {
    row.classList.add("choosable");
    row.addEventListener("click", () => { select(contrastHits.indexOf(row)); openSelected(); });
  }
  return row;
}

async function showContrast() {
  const data = await call("api/contrast");
  if (!data) return;
  const box = $("contrast");
  box.replaceChildren();
  text($("contrast-title"), data.queries.length
    ? `Where ${data.challenger} and ${data.baseline} differ most (top ${data.k})` : "No two systems to contrast.");
  for (const query of data.queries) {
    const title = element("h3");
    title.append(document.createTextNode(`${query.query_id}: `), ...highlighted(query.query, query.terms));
    const pair = element("div", "pair");
    for (const side of ["baseline", "challenger"]) {
      const column = element("div");
      column.append(element("strong", "", data[side]), ...query[side].map((hit) => hitElement(query, side, hit, query.terms)));
      pair.append(column);
    }
    box.append(title, pair);
  }
  contrastHits = [...box.querySelectorAll(".hit.choosable")];
  showView("contrast");
  select(selected >= 0 ? Math.min(selected, contrastHits.length - 1) : 0);
}

function select(index) {
  for (const hit of document.querySelectorAll(".hit.selected, .hit.twin")) hit.classList.remove("selected", "twin");
  selected = index;
  const hit = contrastHits[index];
  if (!hit) return;
  hit.classList.add("selected");
  for (const twin of contrastHits) {
    if (twin !== hit && twin.dataset.query === hit.dataset.query && twin.dataset.doc === hit.dataset.doc) twin.classList.add("twin");
  }
  hit.scrollIntoView({ block: "nearest" });
}

async function openSelected() {
  const hit = contrastHits[selected];
  if (!hit) return;
  const answer = await call("api/open", { query_id: hit.dataset.query, doc_id: hit.dataset.doc });
  if (!answer) return;
  returnTo = "contrast";
  showView("label");
  state = answer;
  renderProgress();
  renderItem(answer.item);
}

function showView(name) {
  $("label-view").hidden = name !== "label";
  $("contrast-view").hidden = name !== "contrast";
  $("help").hidden = name !== "help";
  if (name !== "contrast") window.scrollTo(0, 0);
}

function view() { return !$("contrast-view").hidden ? "contrast" : !$("help").hidden ? "help" : "label"; }

// -- keys -------------------------------------------------------------------------------------------

async function onNoteKey(event) {
  if (event.key === "Enter") { event.preventDefault(); $("note").blur(); await keepNote(!!(shown && shown.flagged)); }
  else if (event.key === "Escape") { event.preventDefault(); $("note").value = shown ? shown.note || "" : ""; $("note").blur(); }
}

const LABEL_KEYS = {
  s: skip, b: back, Backspace: back, a: showAll,
  n: () => { $("note").focus(); },
  f: () => keepNote(!(shown && shown.flagged)),
};

const CONTRAST_KEYS = {
  j: () => select(Math.min(selected + 1, contrastHits.length - 1)),
  ArrowDown: () => select(Math.min(selected + 1, contrastHits.length - 1)),
  k: () => select(Math.max(selected - 1, 0)),
  ArrowUp: () => select(Math.max(selected - 1, 0)),
  Enter: openSelected,
};

document.addEventListener("keydown", async (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  $("error").hidden = true;  // a refusal stays on screen until the next key
  const key = event.key;
  const now = view();
  if (key === "Escape") { returnTo = null; showView("label"); return; }
  if (key === "?") { showView(now === "help" ? "label" : "help"); return; }
  if (key === "c") { if (now === "contrast") showView("label"); else await showContrast(); return; }
  if (now === "contrast" && CONTRAST_KEYS[key]) { event.preventDefault(); await CONTRAST_KEYS[key](); return; }
  if (now !== "label") return;
  if (/^[0-9]$/.test(key)) { event.preventDefault(); await gradeShown(Number(key)); }
  else if (LABEL_KEYS[key]) { event.preventDefault(); await LABEL_KEYS[key](); }
});

document.addEventListener("DOMContentLoaded", async () => {
  $("note").addEventListener("keydown", (event) => { event.stopPropagation(); onNoteKey(event); });
  $("show-help").addEventListener("click", () => showView(view() === "help" ? "label" : "help"));
  $("show-contrast").addEventListener("click", showContrast);
  take(await call("api/state"));
});
