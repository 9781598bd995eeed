/**
 * The canvas renderers of Icon, Video, AudioPlayer, Tabs, Modal, Slider, MultipleChoice and
 * DateTimeInput (inlined into page-canvas.ts's script, in its closure: it uses `cv`, `cvNode`,
 * `cvValue`, `cvText`, `cvNote`, `cvAbs`, `cvKey`, `cvEdit`, `cvLoader`, `has`; plain ES2017).
 *  - Icon: the v0.8 icon names as plain symbols (A2UI_ICONS; no icon font or remote file).
 *  - Video / AudioPlayer: http(s) only, through cvLoader (the user clicks, the channel fetches,
 *    a blob: URL plays); `controls`, never `autoplay`, preload "metadata".
 *  - Tabs / Modal: the selected tab and the open modal (a <dialog>) are kept in `cv.ui` by
 *    surface, component and template item, so an update of the canvas keeps them. A click on a
 *    Modal's entryPointChild opens it and goes no further: a Button there does not send its action.
 *  - Slider, MultipleChoice, DateTimeInput: bound by path, the user's value goes to `cv.edits`
 *    (a number; an array of the selected option values, in the options' order; the input's ISO
 *    8601 text: "2026-05-01", "14:30" or "2026-05-01T14:30"), which a Button's context reads.
 * Text only through textContent; handlers are functions, never strings.
 */
import { A2UI_ICONS } from "./a2ui-schema.js";

export const CANVAS_WIDGETS_SCRIPT = String.raw`
  var CV_ICONS = ${JSON.stringify(A2UI_ICONS)};
  function cvUiKey(sid, id, base) { return sid + "\n" + id + "\n" + (base ? cvKey(base) : ""); }
  function cvIcon(name) {
    var el = document.createElement("span"); el.className = "a2-icon";
    if (!has(CV_ICONS, name)) { el.appendChild(cvNote("(no icon " + name + ")")); return el; }
    el.textContent = CV_ICONS[name]; el.title = name;
    el.setAttribute("role", "img"); el.setAttribute("aria-label", name); el.setAttribute("data-icon", name);
    return el;
  }
  function cvMedia(sid, kind, p, base) {
    var box = document.createElement("div"), url = cvText(cvValue(p.url, sid, base)); box.className = "a2-media a2-" + kind;
    if (p.description) { var cap = document.createElement("small"); cap.textContent = cvText(cvValue(p.description, sid, base)); box.appendChild(cap); }
    if (!CV_IMG_WEB.test(url)) { box.appendChild(cvNote("(" + kind + " not shown: not an http(s) address)")); return box; }
    cvLoader(box, kind, url, function (src) {
      var m = document.createElement(kind); m.controls = true; m.autoplay = false; m.preload = "metadata";
      if (kind === "video") m.playsInline = true;
      m.src = src; return m;
    });
    return box;
  }
  function cvTabs(sid, id, p, base, stack) {
    var key = cvUiKey(sid, id, base), el = document.createElement("div"); el.className = "a2-tabs";
    var bar = document.createElement("div"); bar.className = "a2-tabbar"; bar.setAttribute("role", "tablist");
    var panel = document.createElement("div"); panel.className = "a2-tabpanel"; panel.setAttribute("role", "tabpanel");
    var tabs = p.tabItems.map(function (t, i) {
      var b = document.createElement("button"); b.type = "button"; b.className = "a2-tab"; b.setAttribute("role", "tab");
      b.textContent = cvText(cvValue(t.title, sid, base));
      b.onclick = function () { select(i); };
      bar.appendChild(b); return b;
    });
    function select(i) {
      cv.ui[key] = i;
      tabs.forEach(function (b, j) { b.setAttribute("aria-selected", String(i === j)); });
      panel.textContent = ""; panel.appendChild(cvNode(sid, p.tabItems[i].child, base, stack));
    }
    var chosen = has(cv.ui, key) ? cv.ui[key] : 0;
    select(chosen < tabs.length ? chosen : 0);
    el.appendChild(bar); el.appendChild(panel);
    return el;
  }
  function cvModal(sid, id, p, base, stack) {
    var key = cvUiKey(sid, id, base), el = document.createElement("div"); el.className = "a2-modal";
    var entry = document.createElement("div"); entry.className = "a2-modal-entry";
    entry.appendChild(cvNode(sid, p.entryPointChild, base, stack));
    var dlg = document.createElement("dialog"); dlg.className = "a2-dialog";
    var close = document.createElement("button"); close.type = "button"; close.className = "a2-dialog-close"; close.textContent = "×"; close.setAttribute("aria-label", "Close");
    var content = document.createElement("div"); content.className = "a2-dialog-body";
    dlg.appendChild(close); dlg.appendChild(content);
    function open() {
      content.textContent = ""; content.appendChild(cvNode(sid, p.contentChild, base, stack));
      cv.ui[key] = true; if (!dlg.open) dlg.showModal();
    }
    // capture: the click opens the modal and reaches nothing inside the entry point (no Button action)
    entry.addEventListener("click", function (e) { e.stopPropagation(); e.preventDefault(); open(); }, true);
    close.onclick = function () { dlg.close(); };
    dlg.onclose = function () { if (dlg.isConnected) delete cv.ui[key]; };
    el.appendChild(entry); el.appendChild(dlg);
    if (has(cv.ui, key)) cv.reopen.push(open);
    return el;
  }
  function cvSlider(sid, p, base) {
    var min = p.minValue !== undefined ? p.minValue : 0, max = p.maxValue !== undefined ? p.maxValue : 100;
    var wrap = document.createElement("label"); wrap.className = "a2-slider";
    var input = document.createElement("input"); input.type = "range"; input.min = String(min); input.max = String(max);
    input.step = Math.floor(min) === min && Math.floor(max) === max && max - min >= 2 ? "1" : String((max - min) / 100);
    var v = Number(cvValue(p.value, sid, base));
    input.value = String(isFinite(v) ? Math.min(max, Math.max(min, v)) : min);
    var out = document.createElement("output"); out.textContent = input.value;
    var segs = p.value.path !== undefined ? cvAbs(p.value.path, base) : null;
    input.oninput = function () { out.textContent = input.value; if (segs) cvEdit(sid, segs, Number(input.value)); };
    wrap.appendChild(input); wrap.appendChild(out);
    return wrap;
  }
  /** selections as the data model holds them: an array, a map of strings (v0.8 has no arrays: keys "0", "1", …) or one string */
  function cvStrings(v) {
    var list = Array.isArray(v) ? v : v && typeof v === "object" ? Object.keys(v).map(function (k) { return v[k]; }) : v === undefined || v === null ? [] : [v];
    return list.filter(function (x) { return typeof x === "string"; });
  }
  function cvChoice(sid, p, base) {
    var chips = p.type === "chips", max = p.maxAllowedSelections || p.options.length;
    var wrap = document.createElement("div"); wrap.className = "a2-choice" + (chips ? " chips" : ""); wrap.setAttribute("role", "group");
    var segs = p.selections.path !== undefined ? cvAbs(p.selections.path, base) : null;
    var now = cvStrings(cvValue(p.selections, sid, base)), picked = Object.create(null);
    p.options.forEach(function (o) { if (now.indexOf(o.value) >= 0) picked[o.value] = true; });
    var items = p.options.map(function (o) {
      var label = cvText(cvValue(o.label, sid, base)), item;
      if (chips) {
        item = document.createElement("button"); item.type = "button"; item.className = "a2-chip"; item.textContent = label;
        item.onclick = function () { toggle(o.value); };
      } else {
        item = document.createElement("label"); item.className = "a2-check";
        var box = document.createElement("input"); box.type = "checkbox"; box.onchange = function () { toggle(o.value); };
        var cap = document.createElement("span"); cap.textContent = label;
        item.appendChild(box); item.appendChild(cap);
      }
      item.setAttribute("data-value", o.value);
      return { el: item, value: o.value, label: label.toLowerCase() };
    });
    function count() { return Object.keys(picked).length; }
    function show() {
      var full = max > 1 && count() >= max;
      items.forEach(function (it) {
        var on = !!picked[it.value], input = chips ? it.el : it.el.firstChild;
        if (chips) it.el.setAttribute("aria-pressed", String(on)); else input.checked = on;
        input.disabled = full && !on;
      });
    }
    function toggle(value) {
      if (picked[value]) delete picked[value];
      else if (max === 1) { picked = Object.create(null); picked[value] = true; }
      else if (count() < max) picked[value] = true;
      show();
      if (segs) cvEdit(sid, segs, p.options.filter(function (o) { return picked[o.value]; }).map(function (o) { return o.value; }));
    }
    if (p.filterable) {
      var filter = document.createElement("input"); filter.type = "search"; filter.className = "a2-filter"; filter.placeholder = "Filter";
      filter.oninput = function () { var q = filter.value.toLowerCase(); items.forEach(function (it) { it.el.hidden = it.label.indexOf(q) < 0; }); };
      wrap.appendChild(filter);
    }
    items.forEach(function (it) { wrap.appendChild(it.el); });
    show();
    return wrap;
  }
  /** an ISO 8601 value in the form an input of this type takes ("" when it has no such part) */
  function cvDateValue(s, type) {
    var date = (/^\d{4}-\d{2}-\d{2}/.exec(s) || [""])[0], time = (/(?:^|T|\s)(\d{2}:\d{2})/.exec(s) || ["", ""])[1];
    return type === "date" ? date : type === "time" ? time : date ? date + "T" + (time || "00:00") : "";
  }
  function cvDateTime(sid, p, base) {
    var d = p.enableDate !== false, t = p.enableTime !== false, type = d && t ? "datetime-local" : d ? "date" : "time";
    var wrap = document.createElement("label"); wrap.className = "a2-field a2-datetime";
    var input = document.createElement("input"); input.type = type;
    input.setAttribute("aria-label", d && t ? "Date and time" : d ? "Date" : "Time");
    input.value = cvDateValue(cvText(cvValue(p.value, sid, base)), type);
    if (p.value.path !== undefined) { var segs = cvAbs(p.value.path, base); input.oninput = input.onchange = function () { cvEdit(sid, segs, input.value); }; }
    wrap.appendChild(input);
    return wrap;
  }
`;

/** Their CSS (appended to page-canvas.ts's). */
export const CANVAS_WIDGETS_STYLE = String.raw`
.a2-icon { display: inline-block; width: max-content; min-width: 1.2em; font-size: 20px; line-height: 1; text-align: center; }
.a2-media { display: flex; flex-direction: column; gap: 6px; }
.a2-media video { display: block; max-width: 100%; border-radius: 6px; background: #000; }
.a2-media audio { width: 100%; max-width: 420px; }
.a2-tabbar { display: flex; gap: 2px; border-bottom: 1px solid var(--line); margin-bottom: 10px; flex-wrap: wrap; }
.a2-tab { font: inherit; padding: 6px 12px; border: none; border-bottom: 2px solid transparent; background: none; color: var(--muted); cursor: pointer; }
.a2-tab[aria-selected="true"] { color: var(--text); border-bottom-color: var(--accent); }
.a2-modal-entry { display: inline-block; align-self: flex-start; }
.a2-dialog { border: 1px solid var(--line); border-radius: 12px; background: var(--bg); color: var(--text); padding: 18px 20px; max-width: min(90vw, 640px); max-height: 85vh; overflow: auto; }
.a2-dialog::backdrop { background: rgba(0, 0, 0, 0.45); }
.a2-dialog-close { float: right; border: none; background: none; color: var(--muted); font-size: 20px; cursor: pointer; margin: -8px -8px 0 8px; }
.a2-slider { display: flex; gap: 10px; align-items: center; }
.a2-slider input { flex: 1; accent-color: var(--accent); }
.a2-slider output { min-width: 3ch; font-variant-numeric: tabular-nums; color: var(--muted); }
.a2-choice { display: flex; flex-direction: column; gap: 6px; }
.a2-choice.chips { flex-direction: row; flex-wrap: wrap; }
.a2-choice [hidden] { display: none; }
.a2-chip { font: inherit; font-size: 13px; padding: 5px 12px; border-radius: 16px; border: 1px solid var(--line); background: var(--panel); color: var(--text); cursor: pointer; }
.a2-chip[aria-pressed="true"] { background: var(--accent); border-color: transparent; color: #fff; }
.a2-chip:disabled, .a2-check input:disabled + span { opacity: 0.5; cursor: default; }
.a2-filter { padding: 5px 8px; border-radius: 8px; border: 1px solid var(--line); background: var(--panel); color: var(--text); font: inherit; font-size: 13px; }
`;
