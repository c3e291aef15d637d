// The labelling page: keys for grades, skip, back, help and the contrast view; every action is one
// request to this same server (the page's Content-Security-Policy allows no other host).
"use strict";

const base = location.pathname.endsWith("/") ? location.pathname : location.pathname + "/";
let state = null;

function $(id) { return document.getElementById(id); }

function text(element, value) { element.textContent = value === null || value === undefined ? "" : String(value); }

async function call(path, body) {
  const options = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  const response = await fetch(base + path, options);
  const data = await response.json();
  if (!response.ok) { showError(data.error || response.statusText); return null; }
  $("error").hidden = true;
  return data;
}

function showError(message) { text($("error"), message); $("error").hidden = false; }

function render(next) {
  if (!next) return;
  state = next;
  text($("progress"), `${state.assessor}: ${state.given} graded now, ${state.total} in your file, ${state.left} left`);
  const decision = state.decision;
  if (decision) {
    const open = decision.verdicts.filter((v) => v.flip !== "cannot flip").length;
    text($("settle"), open === 0 ? "No verdict can flip."
      : `At most ${decision.to_settle} judgments until no verdict can flip (${open} of ${decision.verdicts.length} can).`);
  } else {
    text($("settle"), "");
  }
  const item = state.item;
  $("item").hidden = !item;
  $("done").hidden = !!item;
  $("back").disabled = !state.can_go_back;
  const list = $("judged");
  list.replaceChildren();
  if (!item) return;
  text($("meta"), `query ${item.query_id} (${item.stratum}) · memory ${item.doc_id}`);
  text($("query"), item.query);
  text($("memory"), item.memory);
  text($("current-grade"), item.grade === null ? "not graded yet" : `graded ${item.grade}`);
  for (const judged of item.judged) {
    const li = document.createElement("li");
    const grade = document.createElement("span");
    grade.className = "grade";
    text(grade, judged.grade);
    li.append(grade, document.createTextNode(` ${judged.text}`));
    list.append(li);
  }
}

async function grade(value) {
  if (!state || !state.item) return;
  render(await call("api/grade", { query_id: state.item.query_id, doc_id: state.item.doc_id, grade: value }));
}

function hitElement(queryId, hit) {
  const div = document.createElement("div");
  div.className = "hit " + (hit.grade === null ? "unjudged" : "judged");
  const label = hit.grade === null ? "unjudged" : `grade ${hit.grade}`;
  div.append(document.createTextNode(`${hit.rank}. [${label}] ${hit.offerable ? hit.text : "(not shown)"} `));
  if (hit.grade === null && hit.offerable) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "label-hit";
    button.dataset.query = queryId;
    button.dataset.doc = hit.doc_id;
    text(button, "label");
    button.addEventListener("click", async () => {
      const next = await call("api/open", { query_id: queryId, doc_id: hit.doc_id });
      if (next) { showView("label"); render(next); }
    });
    div.append(button);
  }
  return div;
}

async function showContrast() {
  const data = await call("api/contrast");
  if (!data) return;
  const box = $("contrast");
  box.replaceChildren();
  text($("contrast-title"), data.queries.length
    ? `Where ${data.challenger} and ${data.baseline} differ most (top ${data.k})` : "No two systems to contrast.");
  for (const query of data.queries) {
    const title = document.createElement("h3");
    text(title, `${query.query_id}: ${query.query}`);
    const pair = document.createElement("div");
    pair.className = "pair";
    for (const side of ["baseline", "challenger"]) {
      const column = document.createElement("div");
      const head = document.createElement("strong");
      text(head, data[side]);
      column.append(head, ...query[side].map((hit) => hitElement(query.query_id, hit)));
      pair.append(column);
    }
    box.append(title, pair);
  }
  showView("contrast");
}

function showView(name) {
  $("label-view").hidden = name !== "label";
  $("contrast-view").hidden = name !== "contrast";
  $("help").hidden = name !== "help";
}

document.addEventListener("keydown", async (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const key = event.key;
  if (key === "Escape") { showView("label"); return; }
  if (key === "?") { showView($("help").hidden ? "help" : "label"); return; }
  if (key === "c") { if ($("contrast-view").hidden) await showContrast(); else showView("label"); return; }
  if ($("label-view").hidden) return;
  if (["0", "1", "2", "3"].includes(key)) { event.preventDefault(); await grade(Number(key)); }
  else if (key === "s") { render(await call("api/skip", {})); }
  else if (key === "b" || key === "Backspace") { event.preventDefault(); render(await call("api/back", {})); }
});

document.addEventListener("DOMContentLoaded", async () => {
  for (const button of document.querySelectorAll("#grades button[data-grade]")) {
    button.addEventListener("click", () => grade(Number(button.dataset.grade)));
  }
  $("skip").addEventListener("click", async () => render(await call("api/skip", {})));
  $("back").addEventListener("click", async () => render(await call("api/back", {})));
  $("show-help").addEventListener("click", () => showView($("help").hidden ? "help" : "label"));
  $("show-contrast").addEventListener("click", showContrast);
  render(await call("api/state"));
});
