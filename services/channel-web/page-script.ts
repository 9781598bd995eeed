/**
 * The chat page's script (inlined; plain ES2017, no build step, no dependencies). It keeps the
 * token in localStorage (taken once from `?token=` or the login form, then removed from the
 * address bar), reconnects with backoff, resends unacknowledged messages with their ids after a
 * reconnect (the channel processes each id once), and asks for the chat's entries after the
 * last seq it saw. When a different user signs in on the same browser, the previous user's
 * chat and unsent messages are dropped and the page reloads. Files (the 📎 button, paste or drop) are uploaded at once (`POST /upload`
 * with the token) and sent by ref with the next message; a chat's files are fetched with the
 * token (`GET /media/<ref>`): raster images shown inline, audio (a voice reply) with a player,
 * other files as download links. The canvas panel (page-canvas.ts, inlined here) shows the
 * open chat's canvas from `canvas` frames and sends Button presses as `canvas_action`.
 * Reactions: each message and reply shows the assistant's reactions and the user's own (a button
 * that takes it back), and a "☺+" button opening a small picker (arrow keys move, Escape closes);
 * a choice is a `react` frame, and the line is redrawn from the `update` that follows (a keyboard
 * user's focus kept on the line's "☺+" button).
 */
import { CANVAS_SCRIPT } from "./page-canvas.js";

export const PAGE_SCRIPT = String.raw`
(function () {
  "use strict";
  var KEY_TOKEN = "lurkbot.web.token", KEY_CHAT = "lurkbot.web.chat", KEY_PENDING = "lurkbot.web.pending", KEY_USER = "lurkbot.web.user";
  var MAX_FILES = 8, IMAGE = /^image\/(png|jpeg|gif|webp)$/;
  /** the picker's emoji: 👍 👎 ❤️ 😂 🎉 🙏 */
  var REACTIONS = ["\uD83D\uDC4D", "\uD83D\uDC4E", "\u2764\uFE0F", "\uD83D\uDE02", "\uD83C\uDF89", "\uD83D\uDE4F"];
  var $ = function (id) { return document.getElementById(id); };
  var state = { ws: null, ready: false, chat: localStorage.getItem(KEY_CHAT) || "main", lastSeq: 0,
    pending: loadPending(), streams: {}, tools: {}, sessions: [], retry: 0, extraChats: [],
    uploads: [], maxFileBytes: 0, blobs: {} };

  function loadPending() { try { return JSON.parse(localStorage.getItem(KEY_PENDING) || "{}") || {}; } catch (e) { return {}; } }
  function savePending() { localStorage.setItem(KEY_PENDING, JSON.stringify(state.pending)); }
  function uuid() {
    var b = new Uint8Array(16); crypto.getRandomValues(b); b[6] = (b[6] & 15) | 64; b[8] = (b[8] & 63) | 128;
    var h = Array.prototype.map.call(b, function (x) { return (x + 256).toString(16).slice(1); }).join("");
    return h.slice(0, 8) + "-" + h.slice(8, 12) + "-" + h.slice(12, 16) + "-" + h.slice(16, 20) + "-" + h.slice(20);
  }
  function esc(s) { return String(s).replace(/[&<>"']/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]; }); }
  /** a small, safe markdown: code blocks, inline code, bold, italics, links, paragraphs */
  function md(text) {
    var parts = String(text).split(/\u0060\u0060\u0060/);
    return parts.map(function (part, i) {
      if (i % 2 === 1) return "<pre><code>" + esc(part.replace(/^[\w+-]*\n/, "")) + "</code></pre>";
      return part.split(/\n{2,}/).filter(function (p) { return p.trim(); }).map(function (p) {
        var h = esc(p)
          .replace(/\u0060([^\u0060\n]+)\u0060/g, "<code>$1</code>")
          .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
          .replace(/(^|[^*])\*([^*\n]+)\*/g, "$1<em>$2</em>")
          .replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g, '<a href="$2" target="_blank" rel="noopener noreferrer">$1</a>')
          .replace(/\n/g, "<br>");
        return "<p>" + h + "</p>";
      }).join("");
    }).join("");
  }
  function scroll() { var log = $("log"); log.scrollTop = log.scrollHeight; }
  function setStatus(text, cls) { var s = $("status"); s.textContent = text; s.className = cls; }
  function send(frame) { if (state.ws && state.ws.readyState === 1) state.ws.send(JSON.stringify(frame)); }
  function sendFrame(id, p) {
    return { type: "send", id: id, chat: p.chat, text: p.text, attachments: (p.files || []).map(function (f) { return { ref: f.ref }; }) };
  }
  function token() { return localStorage.getItem(KEY_TOKEN) || ""; }
  function fmtSize(n) { return n >= 1048576 ? (n / 1048576).toFixed(1) + " MB" : n >= 1024 ? (n / 1024).toFixed(1) + " KB" : n + " bytes"; }
  function notice(text) { var n = bubble("assistant", "error"); n.textContent = text; scroll(); }
  function errorOf(r) {
    return r.json().then(function (b) { return new Error(b && b.error ? b.error.message : "HTTP " + r.status); }, function () { return new Error("HTTP " + r.status); });
  }

  /** a chat file as a blob: URL (fetched once per ref, with the token) */
  function mediaUrl(ref) {
    if (!state.blobs[ref]) {
      state.blobs[ref] = fetch("/media/" + ref, { headers: { authorization: "Bearer " + token() } })
        .then(function (r) { return r.ok ? r.blob() : errorOf(r).then(function (e) { throw e; }); })
        .then(function (b) { return URL.createObjectURL(b); });
      state.blobs[ref].catch(function () { delete state.blobs[ref]; });
    }
    return state.blobs[ref];
  }
  function download(f, link) {
    mediaUrl(f.ref).then(function (u) {
      var a = document.createElement("a"); a.href = u; a.download = f.name; document.body.appendChild(a); a.click(); a.remove();
    }, function (e) { link.title = e.message; link.textContent = "\uD83D\uDCCE " + f.name + " (unavailable)"; });
  }
  function appendFiles(el, files) {
    (files || []).forEach(function (f) {
      var box = document.createElement("div"); box.className = "file";
      var link = document.createElement("a"); link.href = "#"; link.textContent = "\uD83D\uDCCE " + f.name;
      link.onclick = function (ev) { ev.preventDefault(); download(f, link); };
      var size = document.createElement("span"); size.className = "size"; size.textContent = " " + fmtSize(f.size);
      if (IMAGE.test(f.mime)) {
        var img = document.createElement("img"); img.alt = f.name; img.title = f.name;
        img.onclick = function () { download(f, link); };
        box.appendChild(img);
        mediaUrl(f.ref).then(function (u) { img.src = u; }, function (e) { img.remove(); link.title = e.message; });
      } else if (/^audio\//.test(f.mime)) {
        var audio = document.createElement("audio"); audio.controls = true; audio.title = f.name;
        box.appendChild(audio);
        mediaUrl(f.ref).then(function (u) { audio.src = u; }, function (e) { audio.remove(); link.title = e.message; });
      }
      box.appendChild(link); box.appendChild(size); el.appendChild(box);
    });
  }

  /** files to send with the next message: uploaded now, each a chip until sent or removed */
  function attachFiles(list) {
    Array.prototype.forEach.call(list || [], function (file) {
      var name = file.name || "pasted-file";
      if (state.uploads.length >= MAX_FILES) return notice("Not attached: " + name + " (at most " + MAX_FILES + " files per message)");
      if (state.maxFileBytes && file.size > state.maxFileBytes) return notice("Not attached: " + name + " is " + fmtSize(file.size) + ", above the " + fmtSize(state.maxFileBytes) + " cap");
      var u = { name: name, file: null };
      state.uploads.push(u); renderAttached();
      fetch("/upload?name=" + encodeURIComponent(name), { method: "POST", headers: { authorization: "Bearer " + token(), "content-type": file.type || "application/octet-stream" }, body: file })
        .then(function (r) { return r.ok ? r.json() : errorOf(r).then(function (e) { throw e; }); })
        .then(function (b) { u.file = b.attachment; renderAttached(); }, function (e) {
          var i = state.uploads.indexOf(u); if (i >= 0) state.uploads.splice(i, 1);
          renderAttached(); notice("Not attached: " + name + ": " + e.message);
        });
    });
  }
  function renderAttached() {
    var box = $("attached"); box.innerHTML = "";
    state.uploads.forEach(function (u) {
      var chip = document.createElement("span"); chip.className = "chip" + (u.file ? "" : " uploading");
      chip.textContent = u.name + (u.file ? " · " + fmtSize(u.file.size) : " · uploading…");
      var x = document.createElement("button"); x.type = "button"; x.textContent = "\u00d7"; x.title = "Remove";
      x.onclick = function () { var i = state.uploads.indexOf(u); if (i >= 0) state.uploads.splice(i, 1); renderAttached(); };
      chip.appendChild(x); box.appendChild(chip);
    });
    $("send").disabled = state.uploads.some(function (u) { return !u.file; });
  }

  function bubble(role, kind, id) {
    var el = document.createElement("div");
    el.className = "msg " + role + (kind && kind !== "message" && kind !== "reply" ? " " + kind : "");
    if (id) el.setAttribute("data-id", id);
    $("log").appendChild(el);
    return el;
  }
  function renderEntry(e) {
    var known = e.id && document.querySelector('[data-id="' + CSS.escape(e.id) + '"]');
    if (known) {
      known.classList.remove("pending");
      if (e.role === "user" && !e.deleted) drawReactions(known, e);
      return;
    }
    if (e.role === "assistant" && e.runId && state.streams[e.runId]) {
      state.streams[e.runId].remove(); delete state.streams[e.runId];
    }
    if (e.deleted) return;
    fillEntry(bubble(e.role, e.kind, e.id), e);
    scroll();
  }
  function fillEntry(el, e) {
    if (e.role === "user") el.textContent = e.text;
    else if (e.kind === "approval" && e.approval) renderApproval(el, e);
    else el.innerHTML = md(e.text);
    appendFiles(el, e.attachments);
    if (e.edited) { var ed = document.createElement("span"); ed.className = "edited"; ed.textContent = "(edited)"; el.appendChild(ed); }
    drawReactions(el, e);
  }
  /** the line's reactions: the assistant's (plain), the user's (each a button that takes it back), and the picker's button */
  function drawReactions(el, e) {
    var old = el.querySelector(":scope > .reactions"); if (old) old.remove();
    var canReact = e.seq > 0 && (e.kind === "message" || e.kind === "reply");
    var agent = e.reactions || [], mine = canReact ? e.userReactions || [] : [];
    if (!canReact && !agent.length) return;
    var row = document.createElement("div"); row.className = "reactions";
    agent.forEach(function (r) {
      var s = document.createElement("span"); s.className = "reaction agent"; s.textContent = r; s.title = "LurkBot's reaction"; row.appendChild(s);
    });
    mine.forEach(function (r) {
      var b = document.createElement("button"); b.type = "button"; b.className = "reaction mine"; b.textContent = r;
      b.title = "Your reaction (click to remove)"; b.setAttribute("aria-pressed", "true"); b.setAttribute("aria-label", "Remove your reaction " + r);
      b.onclick = function () { react(e, r, true); };
      row.appendChild(b);
    });
    if (canReact) {
      var add = document.createElement("button"); add.type = "button"; add.className = "react-add"; add.textContent = "\u263A+";
      add.title = "Add a reaction"; add.setAttribute("aria-label", "Add a reaction"); add.setAttribute("aria-haspopup", "true"); add.setAttribute("aria-expanded", "false");
      add.onclick = function () { togglePicker(row, add, e); };
      row.appendChild(add);
    }
    el.appendChild(row);
  }
  function react(e, emoji, remove) { send({ type: "react", chat: state.chat, seq: e.seq, emoji: emoji, remove: remove }); }
  function closePicker(p, add) { p.remove(); add.setAttribute("aria-expanded", "false"); add.focus(); }
  function togglePicker(row, add, e) {
    var open = row.querySelector(".react-picker");
    if (open) { closePicker(open, add); return; }
    var p = document.createElement("div"); p.className = "react-picker"; p.setAttribute("role", "group"); p.setAttribute("aria-label", "Pick a reaction");
    REACTIONS.forEach(function (r) {
      var on = (e.userReactions || []).indexOf(r) >= 0;
      var b = document.createElement("button"); b.type = "button"; b.textContent = r;
      b.setAttribute("aria-pressed", on ? "true" : "false"); b.setAttribute("aria-label", (on ? "Remove your reaction " : "React with ") + r);
      b.onclick = function () { closePicker(p, add); react(e, r, on); };
      p.appendChild(b);
    });
    p.onkeydown = function (ev) {
      var all = Array.prototype.slice.call(p.querySelectorAll("button")), i = all.indexOf(document.activeElement);
      if (ev.key === "Escape") { ev.preventDefault(); closePicker(p, add); }
      else if (ev.key === "ArrowRight" || ev.key === "ArrowLeft") { ev.preventDefault(); all[(i + (ev.key === "ArrowRight" ? 1 : all.length - 1)) % all.length].focus(); }
    };
    row.appendChild(p); add.setAttribute("aria-expanded", "true"); p.firstChild.focus();
  }
  /** a kept line changed (a reaction, an edit or a deletion): redraw it in place; focus in its reactions stays on the line (its "☺+" button) */
  function updateEntry(e) {
    var el = e.id && document.querySelector('[data-id="' + CSS.escape(e.id) + '"]');
    if (!el) return;
    if (e.deleted) { el.remove(); return; }
    var focused = el.contains(document.activeElement) && document.activeElement.closest(".reactions");
    el.innerHTML = ""; fillEntry(el, e);
    var add = focused && el.querySelector(":scope > .reactions > .react-add");
    if (add) add.focus();
  }
  function renderApproval(el, e) {
    el.classList.add("approval");
    el.innerHTML = md(e.text) + (e.approval.command ? '<div class="what">' + esc(e.approval.command) + "</div>" : "") +
      '<div class="actions"><button class="approve">Approve</button><button class="deny">Deny</button><span class="decided"></span></div>';
    var decide = function (verb) {
      el.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
      el.querySelector(".decided").textContent = verb === "approve" ? "approved" : "denied";
      submit("/" + verb + " " + e.approval.approvalId);
    };
    el.querySelector(".approve").onclick = function () { decide("approve"); };
    el.querySelector(".deny").onclick = function () { decide("deny"); };
  }
  function onDelta(f) {
    var el = state.streams[f.runId];
    if (!el) { el = bubble("assistant", "message"); el.classList.add("streaming"); el._text = ""; state.streams[f.runId] = el; }
    el._text += f.text; el.innerHTML = md(el._text); scroll();
  }
  function onTool(f) {
    var el = state.tools[f.toolCallId];
    if (!el) { el = document.createElement("div"); state.tools[f.toolCallId] = el; $("log").appendChild(el); }
    if (f.phase === "start") { el.className = "tool-line running"; el.textContent = f.name + " " + (f.detail || "") + " …"; }
    else { el.className = "tool-line " + (f.isError ? "failed" : "done"); el.textContent = f.name + (f.isError ? " failed" : "") + " (" + f.durationMs + " ms)" + (f.detail ? ": " + f.detail : ""); }
    var stream = state.streams[f.runId];
    if (stream) { if (!stream._text.trim()) stream.remove(); else stream.classList.remove("streaming"); delete state.streams[f.runId]; }
    scroll();
  }
  function renderSessions() {
    var ul = $("sessions"); ul.innerHTML = "";
    var chats = state.sessions.slice();
    var names = chats.map(function (s) { return s.chat; });
    if (names.indexOf("main") < 0) chats.push({ chat: "main", records: 0 });
    state.extraChats.concat([state.chat]).forEach(function (c) { if (names.indexOf(c) < 0 && c !== "main") { names.push(c); chats.unshift({ chat: c, records: 0 }); } });
    chats.forEach(function (s) {
      var li = document.createElement("li");
      li.setAttribute("data-chat", s.chat);
      if (s.chat === state.chat) li.className = "current";
      var when = s.updatedAt ? new Date(s.updatedAt).toLocaleString() : "new";
      li.innerHTML = '<span class="name">' + esc(s.label || (s.chat === "main" ? "Main session" : s.chat)) + '</span><span class="meta">' + esc(when) + (s.records ? " · " + s.records + " records" : "") + (s.active ? " · running" : "") + "</span>";
      li.onclick = function () { switchChat(s.chat); };
      ul.appendChild(li);
    });
  }
  function switchChat(chat) {
    if (chat === state.chat) return;
    state.chat = chat; localStorage.setItem(KEY_CHAT, chat);
    state.lastSeq = 0; state.streams = {}; state.tools = {};
    $("log").innerHTML = ""; $("chat-title").textContent = chat === "main" ? "Main session" : chat;
    canvasShow(null);
    renderSessions();
    send({ type: "open", chat: chat, since: 0 });
    showPending();
  }
  function showPending() {
    Object.keys(state.pending).forEach(function (id) {
      var p = state.pending[id];
      if (p.chat === state.chat && !document.querySelector('[data-id="' + CSS.escape(id) + '"]')) { var el = bubble("user", "message", id); el.textContent = p.text; appendFiles(el, p.files); el.classList.add("pending"); }
    });
  }
  function submit(text, files) {
    var id = uuid();
    state.pending[id] = { chat: state.chat, text: text, files: files || [] }; savePending();
    var el = bubble("user", "message", id); el.textContent = text; appendFiles(el, files); el.classList.add("pending"); scroll();
    send(sendFrame(id, state.pending[id]));
  }

${CANVAS_SCRIPT}
  function onFrame(f) {
    switch (f.type) {
      case "ready":
        // another user signed in on this browser: drop the previous user's chat and unsent messages, start afresh
        var before = localStorage.getItem(KEY_USER);
        localStorage.setItem(KEY_USER, f.userId);
        if (before && before !== f.userId) { localStorage.removeItem(KEY_PENDING); localStorage.removeItem(KEY_CHAT); location.reload(); return; }
        state.ready = true; state.retry = 0; state.maxFileBytes = f.maxFileBytes || 0; setStatus("connected", "online");
        send({ type: "open", chat: state.chat, since: state.lastSeq });
        send({ type: "sessions" });
        Object.keys(state.pending).forEach(function (id) { send(sendFrame(id, state.pending[id])); });
        break;
      case "history":
        if (f.chat !== state.chat) break;
        f.entries.forEach(function (e) { renderEntry(e); state.lastSeq = Math.max(state.lastSeq, e.seq); });
        break;
      case "entry":
        if (f.chat !== state.chat) break;
        renderEntry(f.entry); state.lastSeq = Math.max(state.lastSeq, f.entry.seq);
        break;
      case "update": if (f.chat === state.chat) updateEntry(f.entry); break;
      case "delta": if (f.chat === state.chat) onDelta(f); break;
      case "tool": if (f.chat === state.chat) onTool(f); break;
      case "canvas": if (f.chat === state.chat) canvasShow(f.canvas); break;
      case "run_end":
        if (f.chat === state.chat && state.streams[f.runId]) state.streams[f.runId].classList.remove("streaming");
        send({ type: "sessions" });
        break;
      case "ack":
        delete state.pending[f.id]; savePending();
        var mine = document.querySelector('[data-id="' + CSS.escape(f.id) + '"]'); if (mine) mine.classList.remove("pending");
        if (state.extraChats.indexOf(f.chat) < 0) state.extraChats.push(f.chat);
        break;
      case "nack":
        delete state.pending[f.id]; savePending();
        var bad = document.querySelector('[data-id="' + CSS.escape(f.id) + '"]');
        if (bad) { bad.classList.remove("pending"); bad.title = f.message; }
        var n = bubble("assistant", "error"); n.textContent = "Not sent: " + f.message; scroll();
        break;
      case "sessions": state.sessions = f.sessions; renderSessions(); break;
      case "error":
        if (f.about === "react") notice("Reaction not taken: " + f.message);
        else console.warn("channel-web:", f.code, f.message);
        break;
    }
  }

  function connect() {
    var token = localStorage.getItem(KEY_TOKEN);
    if (!token) { showLogin(""); return; }
    setStatus("connecting…", "offline");
    var ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
    state.ws = ws;
    ws.onopen = function () { ws.send(JSON.stringify({ type: "hello", token: token })); };
    ws.onmessage = function (ev) { try { onFrame(JSON.parse(ev.data)); } catch (e) { console.error(e); } };
    ws.onclose = function (ev) {
      state.ready = false; state.ws = null;
      if (ev.code === 4401) { localStorage.removeItem(KEY_TOKEN); setStatus("signed out", "offline"); showLogin("The token was refused."); return; }
      var wait = Math.min(10000, 500 * Math.pow(2, state.retry++));
      setStatus("offline, retrying…", "offline");
      setTimeout(connect, wait);
    };
  }
  function showLogin(err) { $("login").className = "shown"; $("login-err").textContent = err; $("token").focus(); }

  $("login-form").onsubmit = function (ev) {
    ev.preventDefault();
    var t = $("token").value.trim(); if (!t) return;
    localStorage.setItem(KEY_TOKEN, t); $("login").className = ""; connect();
  };
  $("composer").onsubmit = function (ev) {
    ev.preventDefault();
    if (state.uploads.some(function (u) { return !u.file; })) return;
    var text = $("input").value.trim(), files = state.uploads.map(function (u) { return u.file; });
    if (!text && !files.length) return;
    $("input").value = ""; state.uploads = []; renderAttached(); submit(text, files);
  };
  $("attach").onclick = function () { $("file").click(); };
  $("file").onchange = function () { attachFiles($("file").files); $("file").value = ""; };
  $("input").addEventListener("paste", function (ev) {
    var files = ev.clipboardData && ev.clipboardData.files;
    if (files && files.length) { ev.preventDefault(); attachFiles(files); }
  });
  var main = $("main");
  main.addEventListener("dragover", function (ev) {
    if (ev.dataTransfer && Array.prototype.indexOf.call(ev.dataTransfer.types, "Files") >= 0) { ev.preventDefault(); main.classList.add("dropping"); }
  });
  main.addEventListener("dragleave", function (ev) { if (!main.contains(ev.relatedTarget)) main.classList.remove("dropping"); });
  main.addEventListener("drop", function (ev) {
    main.classList.remove("dropping");
    if (ev.dataTransfer && ev.dataTransfer.files.length) { ev.preventDefault(); attachFiles(ev.dataTransfer.files); }
  });
  $("input").onkeydown = function (ev) { if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("composer").requestSubmit(); } };
  $("new-chat").onclick = function () {
    var chat = "chat-" + uuid().slice(0, 8);
    state.extraChats.push(chat); switchChat(chat); $("input").focus();
  };
  setInterval(function () { send({ type: "ping" }); }, 25000);

  var params = new URLSearchParams(location.search);
  if (params.get("token")) { localStorage.setItem(KEY_TOKEN, params.get("token")); history.replaceState(null, "", location.pathname); }
  $("chat-title").textContent = state.chat === "main" ? "Main session" : state.chat;
  renderSessions(); showPending(); connect();
})();
`;
