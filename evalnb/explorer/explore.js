// The run explorer's page (an anywidget ES module shipped with evalnb: nothing is fetched).
//
// The kernel holds the run; this draws the synced state it sends (the header, the shown
// page of the overview, the shown page of the listed samples) and sends each click, search
// and filter as a message {seq, action, ...}. The kernel answers by updating the state and
// then "answered" with the message's seq: the time between the two is written on the root
// (data-answered-ms), which the browser tests read.
//
// Every string that comes from a run (model text, case ids, check names and details) is
// put in the page with textContent, never as markup, so nothing in it runs or is typeset.

function h(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function pct(x) {
  return x === null || x === undefined ? "n/a" : `${(x * 100).toFixed(0)}%`;
}

function points(x) {
  return x === null || x === undefined ? "" : `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)} pp`;
}

function button(label, className, onClick) {
  const node = h("button", `evalnb-x-button ${className || ""}`, label);
  node.type = "button";
  node.addEventListener("click", (event) => {
    event.stopPropagation();
    onClick(event);
  });
  return node;
}

function select(className, options, value, onChange) {
  const node = h("select", className);
  for (const [optionValue, label] of options) {
    const option = h("option", "", label);
    option.value = optionValue;
    node.append(option);
  }
  node.value = value;
  node.addEventListener("change", () => onChange(node.value));
  return node;
}

function render({ model, el }) {
  el.classList.add("evalnb-explore", "tex2jax_ignore", "mathjax_ignore");
  let seq = 0;
  const sent = new Map();
  const send = (action, fields) => {
    if (model.get("static")) {
      // A saved view (no kernel): say so where the answer would have come.
      message.textContent = "This is a saved view: run the notebook in Jupyter to click through it.";
      message.style.display = "block";
      return;
    }
    seq += 1;
    sent.set(seq, performance.now());
    el.dataset.pending = String(seq);
    model.send({ seq, action, ...fields });
  };

  const top = h("div", "evalnb-x-top");
  const filters = h("div", "evalnb-x-filters");
  const named = h("div", "evalnb-x-named");
  const searchRow = h("div", "evalnb-x-searchrow");
  const message = h("div", "evalnb-x-message");
  const grid = h("div", "evalnb-x-grid");
  const listing = h("div", "evalnb-x-listing");
  el.append(top, filters, named, searchRow, message, grid, listing);

  // -- the search row: built once, so typing is never interrupted by a redraw --------------
  const query = h("input", "evalnb-x-query");
  query.type = "text";
  query.placeholder = "search prompts, answers, check details";
  query.setAttribute("dir", "auto");
  const regexLabel = h("label", "evalnb-x-regex");
  const regexBox = h("input");
  regexBox.type = "checkbox";
  regexLabel.append(regexBox, document.createTextNode(" regex"));
  const go = () => send("search", { query: query.value, regex: regexBox.checked });
  query.addEventListener("keydown", (event) => {
    event.stopPropagation(); // JupyterLab's shortcuts never see the keys typed here
    if (event.key === "Enter") go();
  });
  const where = h("input", "evalnb-x-goto");
  where.type = "text";
  where.placeholder = "case id or page";
  where.setAttribute("dir", "auto");
  const jump = () => send("goto", { target: where.value });
  where.addEventListener("keydown", (event) => {
    event.stopPropagation();
    if (event.key === "Enter") jump();
  });
  searchRow.append(
    query, regexLabel, button("Search", "evalnb-x-search", go),
    h("span", "evalnb-x-gap", " go to "), where, button("Go", "evalnb-x-go", jump),
  );

  function drawTop() {
    const head = model.get("header");
    top.replaceChildren();
    if (!head || !head.variants) return;
    const checks = head.checks.map((c) => [c, c]);
    const variants = head.variants.map((v) => [v, v]);
    const pick = h("div", "evalnb-x-pick");
    pick.append(
      h("span", "", "check "),
      select("evalnb-x-check", checks, head.check, (v) => send("check", { check: v })),
      h("span", "", " compare "),
      select("evalnb-x-b", variants, head.b, (v) => send("pair", { a: head.a, b: v })),
      h("span", "", " against "),
      select("evalnb-x-a", variants, head.a, (v) => send("pair", { a: v, b: head.b })),
    );
    const story = h("div", "evalnb-x-story", head.story);
    if (model.get("static")) {
      top.append(h("div", "evalnb-x-static-note", "A saved view, as the notebook left it: open the notebook in Jupyter to click through it."));
    }
    top.append(pick, story);
    if (head.note) top.append(h("div", "evalnb-x-note", head.note));
    const suite = h("div", "evalnb-x-suite");
    for (const row of head.suite) {
      const line = h("div", "evalnb-x-suiteline");
      line.append(h("b", "", row.variant), document.createTextNode(`: ${row.text}`));
      suite.append(line);
    }
    for (const caution of head.cautions || []) suite.append(h("div", "evalnb-x-note", caution));
    top.append(suite, h("div", "evalnb-x-method", `cells: k/n of the check, ${head.method}`));
  }

  function drawFilters() {
    const head = model.get("header");
    const controls = model.get("controls");
    filters.replaceChildren();
    if (!head || !controls || !controls.grid) return;
    const gridFilters = controls.grid;
    const row = h("div", "evalnb-x-filterrow");
    const choose = (name, values) => {
      if (!values || !values.length) return;
      row.append(
        h("span", "", ` ${name} `),
        select(`evalnb-x-${name}`, [["", "any"], ...values.map((v) => [v, v])], gridFilters[name],
          (v) => send("filters", { filters: { [name]: v } })),
      );
    };
    choose("tag", head.tags);
    choose("split", head.splits);
    choose("group", head.groups);
    const toggles = [
      ["different", "variants differ", gridFilters.different],
      ["different_answers", "different answers", gridFilters.different_answers],
      ["failing", "failing", controls.samples.failing],
      ["incomplete", "incomplete", controls.samples.incomplete],
      ["flaky", "flaky", controls.samples.flaky],
      ["changed", "changed between variants", controls.samples.changed],
      ["reviewed", "reviewed", controls.samples.reviewed],
      ["unreviewed", "unreviewed", controls.samples.unreviewed],
      ["disagree", "verdict ≠ check", controls.samples.disagree],
    ];
    for (const [name, label, value] of toggles) {
      const box = h("input", `evalnb-x-filter-${name}`);
      box.type = "checkbox";
      box.checked = !!value;
      box.addEventListener("change", () => send("filters", { filters: { [name]: box.checked } }));
      const wrap = h("label", "evalnb-x-toggle");
      wrap.append(box, document.createTextNode(` ${label}`));
      row.append(wrap);
    }
    filters.append(row);
    // The filters on, by name, and one button that clears them (and any list or search).
    named.replaceChildren();
    const on = controls.named || [];
    const line = h("div", "evalnb-x-namedrow");
    line.dataset.filters = on.join(",");
    if (on.length) {
      line.append(h("span", "evalnb-x-label-on", "filters on: "), h("b", "evalnb-x-filternames", on.join(" · ")), document.createTextNode(" "));
    } else {
      line.append(h("span", "evalnb-x-filternames evalnb-x-nofilter", "no filter"), document.createTextNode(" "));
    }
    line.append(button("↺ overview, no filter", "evalnb-x-reset", () => send("reset", {})));
    named.append(line);
  }

  function sortHeader(label, key, controls) {
    const th = h("th", "evalnb-x-sortable", label);
    th.dataset.sort = key;
    if (controls.sort === key) th.textContent += controls.descending ? " ▼" : " ▲";
    th.addEventListener("click", () =>
      send("sort", { sort: key, descending: controls.sort === key ? !controls.descending : key !== "case_id" }),
    );
    return th;
  }

  function drawCell(row, cell) {
    const td = h("td", "evalnb-x-cell");
    td.dataset.case = row.case_id;
    td.dataset.variant = cell.variant;
    if (!cell.n) {
      td.append(h("span", "evalnb-x-none", cell.unscored ? `${cell.unscored} unscored` : "no scored sample"));
    } else {
      td.append(h("span", "evalnb-x-kn", `${cell.k}/${cell.n}`), h("span", "evalnb-x-rate", ` ${pct(cell.estimate)}`));
      const bar = h("div", "evalnb-x-bar");
      const span = h("div", "evalnb-x-interval");
      span.style.left = `${(cell.low || 0) * 100}%`;
      span.style.width = `${Math.max(1, ((cell.high || 0) - (cell.low || 0)) * 100)}%`;
      const dot = h("div", "evalnb-x-dot");
      dot.style.left = `${(cell.estimate || 0) * 100}%`;
      bar.append(span, dot);
      td.append(bar);
    }
    const marks = [];
    if (cell.incomplete) marks.push(["evalnb-x-incomplete", `${cell.incomplete} incomplete`]);
    if (cell.unscored && cell.n) marks.push(["evalnb-x-unscored", `${cell.unscored} unscored`]);
    if (cell.flaky) marks.push(["evalnb-x-flaky", "flaky"]);
    if (cell.human_pass || cell.human_fail) {
      marks.push(["evalnb-x-human", `human ✓${cell.human_pass} ✗${cell.human_fail}`]);
    }
    if (marks.length) {
      const line = h("div", "evalnb-x-marks");
      for (const [cls, text] of marks) line.append(h("span", cls, text));
      td.append(line);
    }
    if (cell.answer !== undefined) {
      // The first answer on one line; the whole of it (up to 2,000 characters) on hover.
      const first = h("div", "evalnb-x-first", cell.answer || "(empty)");
      first.setAttribute("dir", "auto");
      first.title = cell.answer_tip || "";
      td.append(first);
    }
    td.addEventListener("click", () => send("cell", { case_id: row.case_id, variant: cell.variant }));
    return td;
  }

  function pager(className, page, pages, total, noun, action) {
    const bar = h("div", `evalnb-x-pager ${className}`);
    const prev = button("‹ previous", "evalnb-x-prev", () => send(action, { page: page - 1 }));
    const next = button("next ›", "evalnb-x-next", () => send(action, { page: page + 1 }));
    prev.disabled = page <= 0;
    next.disabled = page >= pages - 1;
    bar.append(prev, h("span", "evalnb-x-pageinfo", ` page ${page + 1} of ${pages} · ${total} ${noun} `), next);
    return bar;
  }

  function drawGrid() {
    const view = model.get("overview");
    const head = model.get("header");
    const controls = model.get("controls");
    grid.replaceChildren();
    if (!view || !view.rows || !head.variants) return;
    const table = h("table", "evalnb-x-table");
    const tr = h("tr");
    tr.append(sortHeader("case", "case_id", controls));
    for (const v of head.variants) tr.append(sortHeader(v, `rate:${v}`, controls));
    tr.append(sortHeader(`${head.b} − ${head.a}`, "absdiff", controls), h("th", "", ""));
    table.append(tr);
    for (const row of view.rows) {
      const line = h("tr", row.hit ? "evalnb-x-row evalnb-x-hit" : "evalnb-x-row");
      line.dataset.case = row.case_id;
      const name = h("td", "evalnb-x-case");
      name.append(h("span", "evalnb-x-caseid", row.case_id));
      if (row.tags) name.append(h("div", "evalnb-x-tags", row.tags));
      line.append(name);
      for (const cell of row.cells) line.append(drawCell(row, cell));
      const diff = h("td", "evalnb-x-diff", points(row.diff));
      if (row.diff) diff.classList.add(row.diff > 0 ? "evalnb-x-up" : "evalnb-x-down");
      const side = h("td", "evalnb-x-sidecell");
      side.append(button("⇆ side by side", "evalnb-x-side", () => send("side", { case_id: row.case_id })));
      line.append(diff, side);
      table.append(line);
    }
    grid.append(pager("evalnb-x-gridpager", view.page, view.pages, view.total, `of ${view.cases} cases`, "grid_page"), table);
  }

  function pre(className, text, more) {
    const node = h("pre", `evalnb-x-pre ${className}`, text);
    node.setAttribute("dir", "auto");
    if (more) node.append(h("span", "evalnb-x-more", `\n… ${more} more characters (explorer.selection holds them all)`));
    return node;
  }

  function marked(className, parts, more) {
    const node = h("pre", `evalnb-x-pre ${className}`);
    node.setAttribute("dir", "auto");
    for (const [hit, text] of parts) node.append(hit ? h("mark", "evalnb-x-mark-hit", text) : document.createTextNode(text));
    if (more) node.append(h("span", "evalnb-x-more", `\n… ${more} more characters (explorer.selection holds them all)`));
    return node;
  }

  function drawDiff(segments) {
    const node = h("pre", "evalnb-x-pre evalnb-x-answer evalnb-x-diffed");
    node.setAttribute("dir", "auto");
    for (const [op, text] of segments) {
      if (op === "=") node.append(document.createTextNode(text));
      else if (op === "?") node.append(h("span", "evalnb-x-uncompared", text));
      else node.append(h(op === "+" ? "ins" : "del", "", text));
    }
    return node;
  }

  function drawSample(sample, compact) {
    const head = model.get("header");
    const card = h("div", `evalnb-x-sample evalnb-x-${sample.outcome}`);
    card.dataset.position = String(sample.position);
    card.dataset.case = sample.case_id;
    card.dataset.variant = sample.variant;
    card.dataset.repeat = String(sample.repeat);
    const key = h("div", "evalnb-x-key");
    key.append(
      h("b", "evalnb-x-keycase", sample.case_id),
      h("span", "", ` · ${sample.variant} · repeat ${sample.repeat} · `),
      h("span", `evalnb-x-status evalnb-x-status-${sample.status === "completed" ? "ok" : "bad"}`, sample.status),
      h("span", `evalnb-x-outcome evalnb-x-${sample.outcome}`, ` check ${sample.outcome}`),
    );
    const facts = [];
    if (sample.latency_ms !== null) facts.push(`${Math.round(sample.latency_ms)} ms`);
    if (sample.prompt_tokens !== null || sample.completion_tokens !== null) {
      facts.push(`tokens ${sample.prompt_tokens ?? "?"} in / ${sample.completion_tokens ?? "?"} out`);
    }
    if (sample.cost !== null) facts.push(`cost ${sample.cost.toFixed(6)}`);
    key.append(h("span", "evalnb-x-facts", ` · ${facts.join(" · ")}`));
    const verdict = h("span", "evalnb-x-verdict", sample.verdict ? ` · human: ${sample.verdict}${sample.verdict_by ? ` (${sample.verdict_by})` : ""}` : " · no human verdict");
    key.append(verdict);
    card.append(key);
    if (sample.error) card.append(pre("evalnb-x-error", sample.error, 0));
    if (!compact) {
      card.append(h("div", "evalnb-x-label", "prompt"), sample.prompt_hits ? marked("evalnb-x-prompt", sample.prompt_hits, sample.prompt_more) : pre("evalnb-x-prompt", sample.prompt, sample.prompt_more));
    }
    let label = "answer";
    if (sample.similarity !== undefined && !sample.diff) {
      label = `answer (not marked: ${Math.round(sample.similarity * 100)}% of words in common)`;
    }
    card.append(h("div", "evalnb-x-label", label));
    if (sample.diff) card.append(drawDiff(sample.diff));
    else if (sample.answer_hits) card.append(marked("evalnb-x-answer", sample.answer_hits, sample.answer_more));
    else card.append(pre("evalnb-x-answer", sample.answer, sample.answer_more));
    const checks = h("table", "evalnb-x-checks");
    for (const [name, outcome, detail] of sample.checks) {
      const tr = h("tr");
      tr.append(h("td", "evalnb-x-checkname", name), h("td", `evalnb-x-${outcome}`, outcome), h("td", "evalnb-x-detail", detail));
      checks.append(tr);
    }
    card.append(checks);
    if (!compact && (sample.requested.length || sample.executed.length)) {
      const actions = h("div", "evalnb-x-actions");
      actions.append(h("div", "evalnb-x-label", "tool actions: requested"));
      for (const a of sample.requested) actions.append(h("div", "evalnb-x-action", a));
      actions.append(h("div", "evalnb-x-label", "executed"));
      for (const a of sample.executed) actions.append(h("div", "evalnb-x-action", a));
      card.append(actions);
    }
    const buttons = h("div", "evalnb-x-buttons");
    buttons.append(button("review", "evalnb-x-review", () => {
      if (head.annotator) {
        send("review", { position: sample.position });
        return;
      }
      // No annotator yet: ask for one here, then open the panel as that name.
      if (buttons.querySelector(".evalnb-x-who")) return;
      const who = h("input", "evalnb-x-who");
      who.type = "text";
      who.placeholder = "your name (annotator)";
      const open = () => {
        if (who.value.trim()) send("review", { position: sample.position, annotator: who.value.trim() });
      };
      who.addEventListener("keydown", (event) => {
        event.stopPropagation();
        if (event.key === "Enter") open();
      });
      buttons.append(who, button("open review", "evalnb-x-open-review", open));
      who.focus();
    }));
    if (head.annotator) {
      for (const v of ["pass", "fail", "needs_review"]) {
        buttons.append(button(v.replace("_", " "), `evalnb-x-mark evalnb-x-mark-${v}`, () => send("verdict", { position: sample.position, verdict: v })));
      }
    }
    card.append(buttons);
    return card;
  }

  function drawListing() {
    const view = model.get("listing");
    listing.replaceChildren();
    if (!view || view.mode === "none" || !view.mode) return;
    const focus = view.focus || {};
    let title = "";
    if (view.mode === "cell") title = `samples of ${focus.case_id} · ${focus.variant}`;
    else if (view.mode === "side") {
      title = view.view === "plain" ? `${focus.case_id} side by side` : `${focus.case_id} side by side (diff against ${view.variants[0]} where answers are near)`;
    } else title = `search${focus.regex ? " (regex)" : ""}: ${focus.query}`;
    listing.append(h("div", "evalnb-x-title", title));
    const on = view.filters || [];
    if (on.length) listing.append(h("div", "evalnb-x-listfilters", `only the samples these filters keep: ${on.join(" · ")}`));
    if (view.mode === "side") {
      const views = h("div", "evalnb-x-views");
      for (const [name, label] of [["diff", "word diff"], ["plain", "plain"]]) {
        const b = button(label, `evalnb-x-view-${name}`, () => send("side_view", { view: name }));
        if (view.view === name) b.classList.add("evalnb-x-chosen");
        b.disabled = view.view === name;
        views.append(b);
      }
      listing.append(views);
    }
    const noun = view.mode === "side" ? "samples (a page is a set of repeats)" : "samples";
    listing.append(pager("evalnb-x-listpager", view.page, view.pages, view.total, noun, "list_page"));
    if (view.mode === "side") {
      const table = h("table", "evalnb-x-side-table");
      const tr = h("tr");
      tr.append(h("th", "", "repeat"));
      for (const v of view.variants) tr.append(h("th", "", v));
      table.append(tr);
      for (const row of view.rows) {
        const line = h("tr", "evalnb-x-siderow");
        line.append(h("td", "evalnb-x-repeat", String(row.repeat)));
        for (const cell of row.cells) {
          const td = h("td", "evalnb-x-sidecol");
          if (cell) td.append(drawSample(cell, true));
          else td.append(h("i", "evalnb-x-nosample", on.length ? `no sample kept by the filters (${on.join(" · ")})` : "no sample"));
          line.append(td);
        }
        table.append(line);
      }
      listing.append(table);
    } else {
      if (!view.samples.length) listing.append(h("div", "evalnb-x-empty", "no sample matches"));
      for (const sample of view.samples) listing.append(drawSample(sample, false));
    }
  }

  function drawMessage() {
    message.textContent = model.get("message");
    message.style.display = model.get("message") ? "block" : "none";
  }

  const drawAll = () => {
    drawTop();
    drawFilters();
    drawGrid();
    drawListing();
    drawMessage();
  };
  drawAll();
  model.on("change:header", () => { drawTop(); drawFilters(); drawGrid(); });
  model.on("change:controls", () => { drawFilters(); drawGrid(); });
  // Opened without the cells' first answers (the kernel reads them after the overview
  // shows): ask for the page again once, with them. A saved copy (no kernel) shows it as is.
  const first = model.get("overview");
  if (first && first.rows && first.answers === false && !model.get("static")) send("grid_page", { page: first.page });
  model.on("change:overview", drawGrid);
  model.on("change:listing", drawListing);
  model.on("change:message", drawMessage);
  model.on("change:answered", () => {
    const done = model.get("answered");
    const start = sent.get(done);
    if (start !== undefined) {
      sent.delete(done);
      // Measured after the browser has laid out what the answer drew.
      requestAnimationFrame(() => {
        el.dataset.answeredMs = String(Math.round(performance.now() - start));
        el.dataset.answered = String(done);
      });
    }
  });
}

export default { render };
