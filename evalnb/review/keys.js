// Keyboard capture for an evalnb review panel (an anywidget ES module, shipped with the
// package: nothing is fetched from the network).
//
// One listener on window, in the capture phase, sees every key before JupyterLab does.
// While the panel is engaged (the pointer is over it, it holds the focus, or the last
// click was inside it and no other panel is under the pointer) a key without Ctrl, Alt
// or Meta is stopped there, so it never reaches JupyterLab's command shortcuts, and is
// sent to the kernel with a sequence number. Messages on one comm arrive in order, and
// the kernel handles them one at a time: a queue, so no key is dropped or reordered.
// Typing in the panel's own text fields is left to them (stopped at the panel instead);
// Escape leaves a text field so that keys work again. The keys in "local" act here and
// never reach the kernel: one puts the focus in the reason box, one opens or closes the
// sample list (through its toggle button, so the kernel hears of it as of a click) and,
// when it opens, puts the focus in its search box.
//
// Keys and clicks must reach the kernel after every change the reviewer made before them
// to the panel's other controls (the sample list, the filters, the checkboxes), or a
// verdict could land on the sample the panel showed before a jump. Those changes travel
// as widget state, which ipywidgets holds back while the same control has an update
// unanswered; keys and clicks are messages, which it sends at once. So after such a change
// this sends a ping, and keys and button clicks wait in order until its answer: by then
// every update held back has gone out ahead of them.
//
// Each key and each click in the panel carries the text of the panel's reason box: the
// box's own updates go on its own comm, which ipywidgets holds back while the kernel is
// busy, so the kernel takes the text sent here first and a key right after typing keeps
// every character typed. "shown" names the sample the text was typed for; the kernel sets
// it after the box, so the text and the name this sends always belong together.
//
// Each key, and each click in the panel, expects an answer from the kernel. With no
// answer within a few seconds the panel says so: the kernel is busy, or it restarted and
// the panel is stale (a new kernel does not know its comm) and must be made again. When
// sending itself fails, the panel is stale for certain.

const WAIT_MS = 3000;
const STALE =
  "This panel is stale: its kernel restarted or stopped, so nothing done here is saved. Run the cell that made it again.";
const stopHere = (event) => event.stopPropagation();
const PASS = new Set(["Tab", "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12"]);

function editable(node) {
  return !!(node && node.closest && node.closest("input, textarea, select, [contenteditable=''], [contenteditable='true']"));
}

function render({ model, el }) {
  el.classList.add("evalnb-keys");
  const hint = document.createElement("span");
  hint.className = "evalnb-keys-hint";
  hint.textContent = model.get("hint");
  const alarm = document.createElement("div");
  alarm.className = "evalnb-stale";
  alarm.style.display = "none";
  el.append(hint, alarm);

  let panel = null;
  let seq = 0;
  let lost = false;
  const waiting = new Map(); // seq -> time sent
  let holding = 0; // the ping keys and clicks wait for (-1: about to be sent, 0: none)
  let pings = 0; // pings about to be sent
  const held = []; // what waits, in order: functions that send a key or repeat a click

  const findPanel = () => {
    if (!panel || !panel.isConnected) {
      panel = el.closest(".evalnb-review");
      if (panel) panel.setAttribute("tabindex", "-1");
    }
    return panel;
  };

  const say = (text) => {
    findPanel();
    alarm.textContent = text;
    alarm.style.display = text ? "block" : "none";
    if (panel) panel.classList.toggle("evalnb-dead", lost);
  };

  const reasonText = () => {
    const box = findPanel()?.querySelector(".evalnb-reason textarea");
    return box ? box.value : undefined;
  };

  const send = (content) => {
    seq += 1;
    waiting.set(seq, Date.now());
    try {
      model.send({ ...content, seq });
    } catch (error) {
      lost = true;
      say(STALE);
    }
  };

  const later = (action) => {
    if (holding) held.push(action);
    else action();
  };

  const release = () => {
    holding = 0;
    while (held.length && !holding) held.shift()();
  };

  const onChange = (event) => {
    const mine = findPanel();
    const target = event.target;
    if (!mine || !mine.contains(target) || target.closest(".evalnb-reason")) return;
    // After ipywidgets' own handler (bubbling, at the control) has sent or held its update.
    holding = -1;
    pings += 1;
    setTimeout(() => {
      send({ event: "ping" });
      pings -= 1;
      holding = seq;
    }, 0);
  };

  const onClick = (event) => {
    const mine = findPanel();
    const button = event.target.closest && event.target.closest("button");
    if (!holding || !button || !mine || !mine.contains(button)) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    held.push(() => button.click());
  };

  const act = (what, mine) => {
    if (what === "reason") {
      mine.querySelector(".evalnb-reason textarea")?.focus();
      return;
    }
    const toggle = mine.querySelector(".evalnb-list-button");
    const list = mine.querySelector(".evalnb-list");
    if (what !== "list" || !toggle || !list) return;
    const opening = !toggle.classList.contains("mod-active");
    later(() => toggle.click());
    // Shown at once (the kernel shows it too when it hears of the toggle), so the search
    // box takes the next keys as text, not as shortcuts.
    list.style.display = opening ? "flex" : "none";
    if (opening) list.querySelector(".evalnb-list-search input")?.focus();
    else mine.focus();
  };

  const engaged = (target) => {
    const mine = findPanel();
    if (!mine || !mine.isConnected) return false;
    if (mine.contains(document.activeElement) && document.activeElement !== document.body) return true;
    if (mine.matches(":hover")) return true;
    const hovered = document.querySelector(".evalnb-review:hover");
    return !hovered && window.__evalnbLastPanel === mine;
  };

  const onDown = (event) => {
    const mine = findPanel();
    if (mine && mine.contains(event.target)) {
      window.__evalnbLastPanel = mine;
      send({ event: "ping", reason: reasonText(), shown: model.get("shown") });
    } else if (window.__evalnbLastPanel === mine) {
      window.__evalnbLastPanel = null;
    }
  };

  const onKey = (event) => {
    if (event.ctrlKey || event.altKey || event.metaKey || PASS.has(event.key)) return;
    const mine = findPanel();
    if (!mine) return;
    const target = event.target;
    const inside = mine.contains(target);
    if (editable(target)) {
      if (!inside) return; // a code cell, the file browser...: not ours
      if (event.key === "Escape") {
        target.blur();
        mine.focus();
        event.preventDefault();
        event.stopPropagation();
      }
      // The field takes the key; stopped at the field, it goes no further.
      target.addEventListener("keydown", stopHere, { once: true });
      return;
    }
    if (inside && target.tagName === "BUTTON" && (event.key === "Enter" || event.key === " ")) return;
    if (!engaged(target)) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    if (event.repeat) return;
    const own = (model.get("local") || {})[event.key.length === 1 ? event.key.toLowerCase() : event.key];
    if (own) {
      act(own, mine);
      return;
    }
    if (event.key.length !== 1 && !["Escape", "Enter", "ArrowLeft", "ArrowRight"].includes(event.key)) return;
    // What the key carries is read now, when it is pressed, even if it waits.
    const content = { event: "key", key: event.key, reason: reasonText(), shown: model.get("shown") };
    later(() => send(content));
  };

  const onMessage = (content) => {
    if (content && typeof content.ack === "number") {
      waiting.delete(content.ack);
      for (const [n] of waiting) if (n < content.ack) waiting.delete(n);
      lost = false;
      say("");
      if (holding > 0 && !pings && content.ack >= holding) release();
    }
  };

  const watch = setInterval(() => {
    if (!el.isConnected) return;
    let oldest = Infinity;
    for (const [, sent] of waiting) oldest = Math.min(oldest, sent);
    if (oldest === Infinity || Date.now() - oldest < WAIT_MS) return;
    const seconds = Math.round((Date.now() - oldest) / 1000);
    say(
      lost
        ? STALE
        : `No answer from the kernel for ${seconds} s: it is busy, or it restarted (then this panel is stale: run its cell again). Keys typed meanwhile are queued.`
    );
  }, 500);

  window.addEventListener("keydown", onKey, true);
  window.addEventListener("pointerdown", onDown, true);
  window.addEventListener("change", onChange, true);
  window.addEventListener("click", onClick, true);
  model.on("msg:custom", onMessage);

  return () => {
    clearInterval(watch);
    window.removeEventListener("keydown", onKey, true);
    window.removeEventListener("pointerdown", onDown, true);
    window.removeEventListener("change", onChange, true);
    window.removeEventListener("click", onClick, true);
  };
}

export default { render };
