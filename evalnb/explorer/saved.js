// Draws a notebook page's widgets from the widget state saved with the notebook, with no
// kernel and no network (the documentation site loads it in place of nbconvert's loader,
// which fetches the widgets' script from a CDN).
//
// The explorer and the review panel's key capture are anywidgets: their ES module and style
// are in the saved state (`_esm`, `_css`), so each is loaded from there and drawn by its own
// `render`, over a model that holds the saved values (clicks reach no kernel: nothing
// changes). The review panel's other parts are ipywidgets' plain controls (boxes, HTML,
// buttons, dropdowns, text boxes, checkboxes, progress bars, outputs): each is drawn here as
// a plain element showing its saved value, read-only.
//
// A view whose model is not in the saved state is left as it is.

const STATE = 'script[type="application/vnd.jupyter.widget-state+json"]';
const VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]';
const MODEL = "IPY_MODEL_";

function savedModels() {
  const models = {};
  for (const node of document.querySelectorAll(STATE)) {
    try {
      Object.assign(models, JSON.parse(node.textContent).state || {});
    } catch (error) {
      console.error("evalnb: unreadable widget state", error);
    }
  }
  return models;
}

// The model an anywidget's render sees: the saved values, and events for changes made here.
class SavedModel {
  constructor(id, state, models) {
    this.id = id;
    this.state = { ...state };
    this.models = models;
    this.handlers = new Map();
  }
  get(name) {
    return name === "static" ? true : this.state[name];
  }
  set(name, value) {
    this.state[name] = value;
    for (const handler of this.handlers.get(`change:${name}`) || []) handler();
  }
  on(event, handler) {
    if (!this.handlers.has(event)) this.handlers.set(event, []);
    this.handlers.get(event).push(handler);
  }
  off(event, handler) {
    if (!event) this.handlers.clear();
    else if (!handler) this.handlers.delete(event);
    else this.handlers.set(event, (this.handlers.get(event) || []).filter((h) => h !== handler));
  }
  send() {}
  save_changes() {}
  get widget_manager() {
    return { get_model: async (id) => new SavedModel(id, (this.models[id] || {}).state || {}, this.models) };
  }
}

const styled = new Set();
function addStyle(css) {
  if (!css || styled.has(css)) return;
  styled.add(css);
  const style = document.createElement("style");
  style.textContent = css;
  document.head.append(style);
}

const modules = new Map();
function loadModule(esm) {
  if (!modules.has(esm)) {
    const url = URL.createObjectURL(new Blob([esm], { type: "text/javascript" }));
    modules.set(esm, import(url));
  }
  return modules.get(esm);
}

async function drawAnywidget(id, state, models, el) {
  addStyle(state._css);
  const module = await loadModule(state._esm || "");
  let widget = module.default ?? module;
  if (typeof widget === "function") widget = await widget();
  const model = new SavedModel(id, state, models);
  if (widget.initialize) await widget.initialize({ model });
  if (widget.render) await widget.render({ model, el });
}

function h(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function applyLayout(node, layoutRef, models) {
  const layout = layoutRef && models[String(layoutRef).replace(MODEL, "")];
  const s = (layout && layout.state) || {};
  for (const key of ["display", "visibility", "width", "min_width", "max_width", "height", "max_height", "overflow", "flex", "margin", "padding", "border"]) {
    const value = s[key];
    if (value !== null && value !== undefined && value !== "") node.style[key.replace(/_(\w)/g, (_, c) => c.toUpperCase())] = value;
  }
}

async function drawOutputs(outputs, el) {
  for (const output of outputs || []) {
    const data = output.data || {};
    if (output.output_type === "stream") el.append(h("pre", "evalnb-saved-stream", output.text));
    else if (data["application/vnd.jupyter.widget-view+json"]) {
      const holder = h("div");
      el.append(holder);
      await draw(data["application/vnd.jupyter.widget-view+json"].model_id, holder);
    } else if (data["text/html"]) {
      const div = h("div");
      div.innerHTML = [].concat(data["text/html"]).join("");
      el.append(div);
    } else if (data["text/plain"]) el.append(h("pre", "", [].concat(data["text/plain"]).join("")));
  }
}

let models = {};

// Draw the widget `id` into `el`; true when it was drawn.
async function draw(id, el) {
  const entry = models[id];
  if (!entry) return false;
  const s = entry.state || {};
  const name = entry.model_name || "";
  if (entry.model_module === "anywidget" || s._esm !== undefined) {
    await drawAnywidget(id, s, models, el);
    return true;
  }
  let node;
  if (/Box(Model)?$/.test(name)) {
    node = h("div", `evalnb-saved-box evalnb-saved-${name.replace("Model", "").toLowerCase()}`);
    node.style.display = "flex";
    node.style.flexDirection = name.startsWith("HBox") ? "row" : "column";
    node.style.gap = "4px";
    for (const child of s.children || []) {
      const holder = h("div");
      node.append(holder);
      await draw(String(child).replace(MODEL, ""), holder);
    }
  } else if (name === "HTMLModel" || name === "HTMLMathModel") {
    node = h("div", "evalnb-saved-html");
    node.innerHTML = s.value || "";
  } else if (name === "LabelModel") {
    node = h("span", "evalnb-saved-label", s.value || "");
  } else if (name === "ButtonModel") {
    node = h("button", `evalnb-saved-button ${s.button_style ? `evalnb-saved-${s.button_style}` : ""}`, s.description || "");
    node.type = "button";
    node.disabled = true;
  } else if (name === "ToggleButtonsModel") {
    node = h("div", "evalnb-saved-toggles");
    (s._options_labels || []).forEach((label, i) => {
      const b = h("button", "", label);
      b.disabled = true;
      if (i === s.index) b.style.fontWeight = "600";
      node.append(b);
    });
  } else if (name === "DropdownModel" || name === "SelectModel" || name === "RadioButtonsModel") {
    node = h("select", "evalnb-saved-select");
    (s._options_labels || []).forEach((label, i) => {
      const option = h("option", "", label);
      option.value = String(i);
      node.append(option);
    });
    if (s.index !== null && s.index !== undefined) node.value = String(s.index);
    node.disabled = true;
  } else if (name === "TextareaModel" || name === "TextModel") {
    node = h(name === "TextModel" ? "input" : "textarea", "evalnb-saved-text");
    node.value = s.value || "";
    node.placeholder = s.placeholder || "";
    node.readOnly = true;
  } else if (name === "CheckboxModel") {
    node = h("label", "evalnb-saved-checkbox");
    const box = h("input");
    box.type = "checkbox";
    box.checked = !!s.value;
    box.disabled = true;
    node.append(box, document.createTextNode(` ${s.description || ""}`));
  } else if (name === "IntProgressModel" || name === "FloatProgressModel") {
    node = h("progress", "evalnb-saved-progress");
    node.max = s.max || 1;
    node.value = s.value || 0;
  } else if (name === "OutputModel") {
    node = h("div", "evalnb-saved-output");
    await drawOutputs(s.outputs, node);
  } else {
    return false;
  }
  if (s.description && !["ButtonModel", "CheckboxModel"].includes(name) && s.description_allow_html !== true) {
    const wrap = h("span", "evalnb-saved-described");
    wrap.append(h("span", "", `${s.description} `), node);
    node = wrap;
  }
  for (const name of s._dom_classes || []) node.classList.add(name);
  applyLayout(node, s.layout, models);
  el.append(node);
  return true;
}

// ipywidgets' own look is not on the page: enough of it that the controls read as controls.
const LOOK = `
.evalnb-saved-widget button, .evalnb-saved-widget select, .evalnb-saved-widget textarea, .evalnb-saved-widget input[type=text] {
  border: 1px solid rgba(128, 128, 128, 0.55); border-radius: 3px; padding: 2px 8px; margin: 2px;
  background: rgba(128, 128, 128, 0.08); color: inherit; font: inherit; }
.evalnb-saved-widget .evalnb-saved-button:disabled { opacity: 0.85; }
.evalnb-saved-widget .evalnb-saved-success { background: #2e7d32; color: #fff; }
.evalnb-saved-widget .evalnb-saved-danger { background: #c62828; color: #fff; }
.evalnb-saved-widget .evalnb-saved-warning { background: #ef6c00; color: #fff; }
.evalnb-saved-widget .evalnb-saved-info, .evalnb-saved-widget .evalnb-saved-primary { background: #1565c0; color: #fff; }
.evalnb-saved-widget textarea { width: 100%; box-sizing: border-box; }
`;

async function main() {
  addStyle(LOOK);
  models = savedModels();
  for (const script of document.querySelectorAll(VIEW)) {
    let view;
    try {
      view = JSON.parse(script.textContent);
    } catch (error) {
      continue;
    }
    const el = h("div", "evalnb-saved-widget");
    el.dataset.modelId = view.model_id;
    script.after(el);
    try {
      if (!(await draw(view.model_id, el))) el.remove();
    } catch (error) {
      console.error("evalnb: a saved widget could not be drawn", error);
      el.dataset.error = String(error);
    }
  }
  document.documentElement.dataset.evalnbSaved = "drawn";
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
else main();
