/**
 * The page's canvas renderer (inlined into page-script.ts, inside its closure: it uses `$`,
 * `send`, `uuid`, `token`, `errorOf` and `state.chat`; plain ES2017). `canvasShow(view)` takes a `canvas` frame's
 * view (canvas-state.ts CanvasView, or null) and renders the panel next to the chat:
 *  - A2UI surfaces (the v0.8 standard catalog: Text, Image, Button, Card, Row, Column, List,
 *    TextField, CheckBox, Divider here; Icon, Video, AudioPlayer, Tabs, Modal, Slider,
 *    MultipleChoice and DateTimeInput in page-canvas-widgets.ts) with data binding: a value is
 *    its literal or the data model at its path (relative paths inside a List template hang off
 *    the item). The inputs bound by path (TextField, CheckBox, Slider, MultipleChoice,
 *    DateTimeInput) write the user's edits into the page's copy of the model (`cv.edits`, read
 *    before the agent's data), kept over later updates unless the agent changed that path.
 *    A Button press sends `canvas_action` (an A2UI userAction: the action name, the button's id,
 *    its surface, and its action context resolved now, edits included).
 *  - presented HTML in a sandboxed `<iframe>` from /canvas/frame/<id> (canvas-frame.ts): `sandbox=""`
 *    (no script runs), or "allow-scripts" when the view says the frame runs scripts.
 * Safety: text only through textContent (no HTML from A2UI ever), images only from data: raster
 * URLs, or an http(s) image, video or audio after the user clicks "Load <what> from <host>",
 * fetched by the channel (GET /api/canvas/image or /api/canvas/media with the token,
 * canvas-image.ts) and shown from a blob: URL (kept while the canvas still shows it), so the page
 * loads nothing from other hosts; nothing plays by itself; cycles and depth are capped. Ids are the agent's ("toString" is
 * one): every lookup by id, data key or edit key checks own properties (`has`), and the maps the
 * page fills itself have no prototype.
 */
import { CANVAS_WIDGETS_SCRIPT, CANVAS_WIDGETS_STYLE } from "./page-canvas-widgets.js";

export const CANVAS_SCRIPT = String.raw`
  // ui: open tabs and modals by their key (cvUiKey); blobs: loaded web media by kind and URL; reopen: modals to show after a render
  var cv = { view: null, edits: Object.create(null), frameId: "", ui: Object.create(null), blobs: Object.create(null), used: Object.create(null), reopen: [] };
  var CV_IMG_DATA = /^data:image\/(png|jpeg|gif|webp);base64,[A-Za-z0-9+\/=]+$/, CV_IMG_WEB = /^https?:\/\/[^\s"'<>]+$/;
  var CV_MAX_DEPTH = 40, CV_MAX_ITEMS = 200;
  var has = function (o, k) { return Object.prototype.hasOwnProperty.call(o, k); };
  function cvSegs(path) {
    var t = String(path).replace(/^\//, ""); if (!t) return [];
    var parts = t.indexOf("/") >= 0 || path.charAt(0) === "/" ? t.split("/") : t.split(".");
    return parts.map(function (p) { return p.replace(/~1/g, "/").replace(/~0/g, "~"); });
  }
  function cvAbs(path, base) { return path.charAt(0) === "/" || !base ? cvSegs(path) : base.concat(cvSegs(path)); }
  function cvKey(segs) { return "/" + segs.map(function (s) { return s.replace(/~/g, "~0").replace(/\//g, "~1"); }).join("/"); }
  function cvLookup(data, segs) {
    var node = data;
    for (var i = 0; i < segs.length; i++) { if (node === null || typeof node !== "object" || !has(node, segs[i])) return undefined; node = node[segs[i]]; }
    return node;
  }
  function cvGet(sid, segs) {
    var e = cv.edits[sid], k = cvKey(segs);
    return e && has(e, k) ? e[k] : cvLookup(cv.view.surfaces[sid].data, segs);
  }
  function cvEdit(sid, segs, value) { (cv.edits[sid] = cv.edits[sid] || Object.create(null))[cvKey(segs)] = value; }
  function cvValue(b, sid, base) {
    if (!b) return undefined;
    if (b.path !== undefined) { var v = cvGet(sid, cvAbs(b.path, base)); if (v !== undefined) return v; }
    return b.literalString !== undefined ? b.literalString : b.literalNumber !== undefined ? b.literalNumber : b.literalArray !== undefined ? b.literalArray : b.literalBoolean;
  }
  function cvText(v) { return v === undefined || v === null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v); }
  function cvNote(text) { var n = document.createElement("span"); n.className = "a2-note"; n.textContent = text; return n; }

  function cvNode(sid, id, base, stack) {
    var comps = cv.view.surfaces[sid].components, entry = has(comps, id) ? comps[id] : null;
    if (!entry || !entry.component) return cvNote("(missing component " + id + ")");
    if (stack.indexOf(id) >= 0 || stack.length > CV_MAX_DEPTH) return cvNote("(component " + id + " is nested in itself)");
    var type = Object.keys(entry.component)[0], p = entry.component[type], next = stack.concat([id]), el;
    switch (type) {
      case "Text":
        var hint = p.usageHint || "body";
        el = document.createElement(/^h[1-5]$/.test(hint) ? hint : hint === "caption" ? "small" : "p");
        el.textContent = cvText(cvValue(p.text, sid, base));
        break;
      case "Image": el = cvImage(cvText(cvValue(p.url, sid, base)), p); break;
      case "Button":
        el = document.createElement("button"); el.type = "button"; el.className = "a2-button" + (p.primary ? " primary" : "");
        el.appendChild(cvNode(sid, p.child, base, next));
        el.onclick = function () { cvAction(sid, id, p.action, base); };
        break;
      case "Card": el = document.createElement("div"); el.className = "a2-card"; el.appendChild(cvNode(sid, p.child, base, next)); break;
      case "Row": case "Column": case "List":
        el = document.createElement("div");
        el.className = "a2-box " + (type === "Row" || (type === "List" && p.direction === "horizontal") ? "a2-row" : "a2-column") +
          (p.distribution ? " dist-" + p.distribution : "") + (p.alignment ? " align-" + p.alignment : "");
        cvChildren(sid, p.children, base, next).forEach(function (c) { el.appendChild(c); });
        break;
      case "TextField": el = cvField(sid, p, base); break;
      case "CheckBox": el = cvCheck(sid, p, base); break;
      case "Divider": el = document.createElement("hr"); el.className = "a2-divider" + (p.axis === "vertical" ? " vertical" : ""); break;
      case "Icon": el = cvIcon(cvText(cvValue(p.name, sid, base))); break;
      case "Video": case "AudioPlayer": el = cvMedia(sid, type === "Video" ? "video" : "audio", p, base); break;
      case "Tabs": el = cvTabs(sid, id, p, base, next); break;
      case "Modal": el = cvModal(sid, id, p, base, next); break;
      case "Slider": el = cvSlider(sid, p, base); break;
      case "MultipleChoice": el = cvChoice(sid, p, base); break;
      case "DateTimeInput": el = cvDateTime(sid, p, base); break;
      default: return cvNote("(" + type + " is not supported)");
    }
    el.setAttribute("data-a2-id", id);
    if (entry.weight) el.style.flexGrow = String(entry.weight);
    return el;
  }
  function cvChildren(sid, ch, base, stack) {
    if (ch.explicitList) return ch.explicitList.map(function (c) { return cvNode(sid, c, base, stack); });
    var t = ch.template, at = cvAbs(t.dataBinding, base), items = cvGet(sid, at);
    if (!items || typeof items !== "object") return [];
    return Object.keys(items).slice(0, CV_MAX_ITEMS).map(function (k) { return cvNode(sid, t.componentId, at.concat([k]), stack); });
  }
  function cvImage(url, p) {
    var box = document.createElement("div"); box.className = "a2-image" + (p.usageHint ? " " + p.usageHint : "");
    var img = document.createElement("img"); img.alt = ""; img.referrerPolicy = "no-referrer"; if (p.fit) img.className = "fit-" + p.fit;
    if (CV_IMG_DATA.test(url)) { img.src = url; box.appendChild(img); }
    else if (CV_IMG_WEB.test(url)) cvLoader(box, "image", url, function (src) { img.src = src; return img; });
    else box.appendChild(cvNote("(image not shown: not an https or data: image address)"));
    return box;
  }
  /**
   * An http(s) image, video or audio: a "Load <kind> from <host>" button; a click has the channel
   * fetch it (canvas-image.ts) and shows it from a blob: URL (show(src) makes the element), kept
   * in cv.blobs while the canvas shows that URL, so a re-render shows it at once.
   */
  function cvLoader(box, kind, url, show) {
    var key = kind + " " + url;
    if (cv.blobs[key]) { cv.used[key] = true; box.appendChild(show(cv.blobs[key])); return; }
    var host = "?"; try { host = new URL(url).host; } catch (e) { /* shown as ? */ }
    var Kind = kind.charAt(0).toUpperCase() + kind.slice(1);
    var load = document.createElement("button"); load.type = "button"; load.className = "a2-load"; load.textContent = "Load " + kind + " from " + host;
    load.onclick = function () {
      load.disabled = true; load.textContent = "Loading " + kind + " from " + host + "…";
      var api = kind === "image" ? "/api/canvas/image?" : "/api/canvas/media?kind=" + kind + "&";
      fetch(api + "chat=" + encodeURIComponent(state.chat) + "&url=" + encodeURIComponent(url), { headers: { authorization: "Bearer " + token() } })
        .then(function (r) { return r.ok ? r.blob() : errorOf(r).then(function (e) { throw e; }); })
        .then(function (b) {
          var src = cv.blobs[key] || (cv.blobs[key] = URL.createObjectURL(b)); cv.used[key] = true;
          if (load.parentNode === box) box.replaceChild(show(src), load);
        }, function (e) { load.disabled = false; load.textContent = Kind + " from " + host + " not loaded: " + e.message + " (retry)"; });
    };
    box.appendChild(load);
  }
  function cvField(sid, p, base) {
    var wrap = document.createElement("label"); wrap.className = "a2-field";
    var cap = document.createElement("span"); cap.textContent = cvText(cvValue(p.label, sid, base)); wrap.appendChild(cap);
    var kind = p.textFieldType || "shortText", input = document.createElement(kind === "longText" ? "textarea" : "input");
    if (kind !== "longText") { input.type = { number: "number", date: "date", obscured: "password" }[kind] || "text"; if (p.validationRegexp) input.pattern = p.validationRegexp; }
    input.value = cvText(cvValue(p.text, sid, base));
    if (p.text && p.text.path !== undefined) {
      var segs = cvAbs(p.text.path, base);
      input.oninput = function () { cvEdit(sid, segs, kind === "number" && input.value !== "" && !isNaN(Number(input.value)) ? Number(input.value) : input.value); };
    }
    wrap.appendChild(input);
    return wrap;
  }
  function cvCheck(sid, p, base) {
    var wrap = document.createElement("label"); wrap.className = "a2-check";
    var box = document.createElement("input"); box.type = "checkbox"; box.checked = cvValue(p.value, sid, base) === true;
    if (p.value.path !== undefined) { var segs = cvAbs(p.value.path, base); box.onchange = function () { cvEdit(sid, segs, box.checked); }; }
    var cap = document.createElement("span"); cap.textContent = cvText(cvValue(p.label, sid, base));
    wrap.appendChild(box); wrap.appendChild(cap);
    return wrap;
  }
  /** an A2UI userAction: the context's values as they are now (edits included) */
  function cvAction(sid, id, action, base) {
    var context = Object.create(null);
    (action.context || []).forEach(function (c) { var v = cvValue(c.value, sid, base); context[c.key] = v === undefined ? null : v; });
    send({ type: "canvas_action", id: uuid(), chat: state.chat, surfaceId: sid, sourceComponentId: id, name: action.name, context: context });
  }

  function cvRender() {
    var panel = $("canvas"), body = $("canvas-body"), v = cv.view, shown = !!(v && v.visible);
    panel.hidden = !shown; document.body.classList.toggle("with-canvas", shown);
    if (!shown) { body.textContent = ""; cv.frameId = ""; return; }
    var html = v.view === "html" && v.html;
    $("canvas-title").textContent = html && v.html.title ? v.html.title : "Canvas";
    var frameKey = html ? v.html.frameId + (v.html.scripts ? "+scripts" : "") : "";
    if (html && cv.frameId === frameKey && body.querySelector("iframe")) return;
    body.textContent = ""; cv.frameId = ""; cv.reopen = []; cv.used = Object.create(null);
    if (html) {
      var f = document.createElement("iframe");
      f.setAttribute("sandbox", v.html.scripts ? "allow-scripts" : ""); f.setAttribute("referrerpolicy", "no-referrer");
      f.title = v.html.title || "Canvas"; f.src = "/canvas/frame/" + encodeURIComponent(v.html.frameId);
      cv.frameId = frameKey; body.appendChild(f);
      return;
    }
    Object.keys(v.surfaces).forEach(function (sid) {
      var s = v.surfaces[sid]; if (!s.shownRoot) return;
      var box = document.createElement("div"); box.className = "a2-surface"; box.setAttribute("data-surface", sid);
      box.appendChild(cvNode(sid, s.shownRoot, null, [])); body.appendChild(box);
    });
    // web media the canvas no longer shows is let go
    Object.keys(cv.blobs).forEach(function (k) { if (!cv.used[k]) { URL.revokeObjectURL(cv.blobs[k]); delete cv.blobs[k]; } });
    cv.reopen.forEach(function (open) { open(); });
  }
  /** a new view of the shown chat's canvas (null: none); the user's edits stay where the agent did not change the value */
  function canvasShow(view) {
    var old = cv.view; cv.view = view;
    if (!view) cv.ui = Object.create(null);
    Object.keys(cv.edits).forEach(function (sid) {
      var now = view && has(view.surfaces, sid) ? view.surfaces[sid] : null, was = old && has(old.surfaces, sid) ? old.surfaces[sid] : null;
      if (!now || !was) { delete cv.edits[sid]; return; }
      Object.keys(cv.edits[sid]).forEach(function (k) {
        if (JSON.stringify(cvLookup(now.data, cvSegs(k))) !== JSON.stringify(cvLookup(was.data, cvSegs(k)))) delete cv.edits[sid][k];
      });
    });
    cvRender();
  }
  $("canvas-close").onclick = function () { $("canvas").hidden = true; document.body.classList.remove("with-canvas"); };
${CANVAS_WIDGETS_SCRIPT}
`;

/** The canvas panel's CSS (appended to page-style.ts). */
export const CANVAS_STYLE = String.raw`
#canvas { width: min(48vw, 680px); flex: none; display: flex; flex-direction: column; border-left: 1px solid var(--line); background: var(--bg); min-width: 0; }
#canvas[hidden] { display: none; }
#canvas header #canvas-title { font-weight: 600; flex: 1; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#canvas-close { border: none; background: none; color: var(--muted); font-size: 20px; cursor: pointer; padding: 0 4px; }
#canvas-body { flex: 1; overflow: auto; display: flex; flex-direction: column; }
#canvas-body iframe { flex: 1; width: 100%; border: none; background: #fff; }
.a2-surface { padding: 16px; }
.a2-surface + .a2-surface { border-top: 1px solid var(--line); }
.a2-surface h1, .a2-surface h2, .a2-surface h3, .a2-surface h4, .a2-surface h5, .a2-surface p { margin: 0; overflow-wrap: anywhere; }
.a2-surface small { color: var(--muted); font-size: 12.5px; }
.a2-box { display: flex; gap: 10px; min-width: 0; }
.a2-column { flex-direction: column; }
.a2-row { flex-direction: row; flex-wrap: wrap; align-items: center; }
.dist-start { justify-content: flex-start; } .dist-center { justify-content: center; } .dist-end { justify-content: flex-end; }
.dist-spaceBetween { justify-content: space-between; } .dist-spaceAround { justify-content: space-around; } .dist-spaceEvenly { justify-content: space-evenly; }
.align-start { align-items: flex-start; } .align-center { align-items: center; } .align-end { align-items: flex-end; } .align-stretch { align-items: stretch; }
.a2-card { border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; background: var(--panel); }
.a2-button { padding: 7px 14px; border-radius: 8px; border: 1px solid var(--line); background: var(--panel); color: var(--text); font: inherit; cursor: pointer; align-self: flex-start; }
.a2-button.primary { background: var(--accent); border-color: transparent; color: #fff; }
.a2-button:hover { border-color: var(--accent); }
.a2-button > * { margin: 0; color: inherit; }
.a2-field { display: flex; flex-direction: column; gap: 4px; font-size: 13px; color: var(--muted); }
.a2-field input, .a2-field textarea { padding: 7px 9px; border-radius: 8px; border: 1px solid var(--line); background: var(--panel); color: var(--text); font: inherit; font-size: 14px; }
.a2-field input:invalid { border-color: var(--bad); }
.a2-check { display: flex; gap: 8px; align-items: center; }
.a2-divider { border: none; border-top: 1px solid var(--line); margin: 2px 0; align-self: stretch; }
.a2-divider.vertical { border-top: none; border-left: 1px solid var(--line); margin: 0 2px; }
.a2-image img { display: block; max-width: 100%; border-radius: 6px; }
.a2-image.icon img { width: 24px; height: 24px; } .a2-image.avatar img { width: 40px; height: 40px; border-radius: 50%; object-fit: cover; }
.a2-image.smallFeature img { max-width: 120px; } .a2-image.mediumFeature img { max-width: 320px; }
.fit-contain { object-fit: contain; } .fit-cover { object-fit: cover; } .fit-fill { object-fit: fill; } .fit-none { object-fit: none; } .fit-scale-down { object-fit: scale-down; }
.a2-load { font: inherit; font-size: 13px; padding: 6px 10px; border: 1px dashed var(--line); border-radius: 8px; background: transparent; color: var(--muted); cursor: pointer; }
.a2-note { color: var(--muted); font-size: 12px; font-style: italic; }
@media (max-width: 900px) { #canvas { position: fixed; top: 0; right: 0; bottom: 0; width: 100%; z-index: 5; } }
${CANVAS_WIDGETS_STYLE}
`;
