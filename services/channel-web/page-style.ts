/** The chat page's CSS (inlined in the page; light and dark follow the system; the canvas panel's from page-canvas.ts). */
import { CANVAS_STYLE } from "./page-canvas.js";

export const PAGE_STYLE = String.raw`
:root { --bg:#f6f7f9; --panel:#ffffff; --side:#eef0f4; --text:#1d2330; --muted:#6b7383; --line:#dde1e8;
  --me:#2f6fed; --me-text:#fff; --bot:#ffffff; --accent:#2f6fed; --ok:#1f9d55; --bad:#d64545; --code:#f0f2f6; }
@media (prefers-color-scheme: dark) { :root { --bg:#15181e; --panel:#1c2028; --side:#111419; --text:#e4e7ee; --muted:#8b93a3;
  --line:#2a303b; --me:#3b6fe0; --bot:#232833; --code:#2a2f3a; } }
* { box-sizing: border-box; }
html, body { height: 100%; margin: 0; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--text); display: flex; }
#side { width: 250px; flex: none; background: var(--side); border-right: 1px solid var(--line); display: flex; flex-direction: column; }
#side h1 { font-size: 17px; margin: 16px 16px 8px; letter-spacing: .3px; }
#side h1 span { color: var(--accent); }
#new-chat { margin: 4px 12px 10px; padding: 8px; border: 1px dashed var(--line); border-radius: 8px; background: transparent; color: var(--text); cursor: pointer; font: inherit; }
#new-chat:hover { border-color: var(--accent); color: var(--accent); }
#sessions { list-style: none; margin: 0; padding: 0 8px; overflow-y: auto; flex: 1; }
#sessions li { padding: 8px 10px; border-radius: 8px; cursor: pointer; margin-bottom: 2px; }
#sessions li:hover { background: var(--line); }
#sessions li.current { background: var(--accent); color: #fff; }
#sessions li .name { display: block; font-weight: 600; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#sessions li .meta { display: block; font-size: 12px; opacity: .75; }
#main { flex: 1; display: flex; flex-direction: column; min-width: 0; }
header { display: flex; align-items: center; gap: 10px; padding: 12px 18px; border-bottom: 1px solid var(--line); background: var(--panel); }
header #chat-title { font-weight: 600; flex: 1; }
#status { font-size: 12px; color: var(--muted); }
#status.online::before { content: "● "; color: var(--ok); }
#status.offline::before { content: "● "; color: var(--bad); }
#log { flex: 1; overflow-y: auto; padding: 18px; display: flex; flex-direction: column; gap: 10px; }
.msg { max-width: min(720px, 85%); padding: 9px 13px; border-radius: 14px; word-wrap: break-word; overflow-wrap: anywhere; }
.msg.user { align-self: flex-end; background: var(--me); color: var(--me-text); border-bottom-right-radius: 4px; white-space: pre-wrap; }
.msg.user.pending { opacity: .6; }
.msg.assistant { align-self: flex-start; background: var(--bot); border: 1px solid var(--line); border-bottom-left-radius: 4px; }
.msg.assistant.streaming p:last-child::after, .msg.assistant.streaming:empty::after { content: "▍"; color: var(--accent); animation: blink 1s steps(2) infinite; }
.msg .reactions { margin-top: 4px; font-size: 1.1em; white-space: normal; display: flex; flex-wrap: wrap; gap: 4px; align-items: center; }
.msg .reaction { padding: 0 6px; border-radius: 10px; background: var(--code); border: 1px solid var(--line); color: var(--text); font: inherit; line-height: 1.5; }
.msg button.reaction.mine { border-color: var(--accent); cursor: pointer; }
.msg .react-add { padding: 0 6px; border-radius: 10px; border: 1px solid transparent; background: transparent; color: inherit; font: inherit; font-size: 13px; line-height: 1.7; opacity: .5; cursor: pointer; }
.msg:hover .react-add, .msg .react-add:focus-visible, .msg .react-add[aria-expanded="true"] { opacity: 1; border-color: var(--line); }
.msg .react-picker { display: inline-flex; gap: 2px; padding: 2px 4px; border: 1px solid var(--line); border-radius: 12px; background: var(--panel); box-shadow: 0 2px 8px rgba(0,0,0,.15); }
.msg .react-picker button { border: none; background: transparent; font: inherit; padding: 0 4px; border-radius: 8px; cursor: pointer; }
.msg .react-picker button:hover, .msg .react-picker button[aria-pressed="true"] { background: var(--code); }
.msg .reactions button:focus-visible { outline: 2px solid var(--accent); outline-offset: 1px; }
.msg .edited { margin-left: 6px; font-size: .8em; opacity: .6; }
.msg.error { border-color: var(--bad); color: var(--bad); }
.msg.notice { align-self: center; background: transparent; border: none; color: var(--muted); font-size: 13px; }
.msg p { margin: 0 0 .5em; } .msg p:last-child { margin-bottom: 0; }
.msg pre { background: var(--code); padding: 8px 10px; border-radius: 8px; overflow-x: auto; font-size: 13px; }
.msg code { background: var(--code); padding: 1px 4px; border-radius: 4px; font-size: 13px; }
.msg pre code { background: none; padding: 0; }
.tool-line { align-self: flex-start; font-size: 12.5px; color: var(--muted); font-family: ui-monospace, Menlo, Consolas, monospace; padding: 0 6px; }
.tool-line.done::before { content: "✓ "; color: var(--ok); }
.tool-line.failed::before { content: "✗ "; color: var(--bad); }
.tool-line.running::before { content: "⚙ "; }
.approval { border: 1px solid var(--accent) !important; }
.approval .what { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; background: var(--code); padding: 6px 8px; border-radius: 6px; margin: 6px 0; white-space: pre-wrap; }
.approval button { margin-right: 8px; padding: 6px 14px; border-radius: 8px; border: none; cursor: pointer; font: inherit; color: #fff; }
.approval button.approve { background: var(--ok); }
.approval button.deny { background: var(--bad); }
.approval button:disabled { opacity: .5; cursor: default; }
.approval .decided { font-size: 13px; color: var(--muted); }
#composer { display: flex; gap: 10px; padding: 12px 18px; border-top: 1px solid var(--line); background: var(--panel); }
#input { flex: 1; resize: none; min-height: 44px; max-height: 200px; padding: 10px 12px; border-radius: 10px; border: 1px solid var(--line); background: var(--bg); color: var(--text); font: inherit; }
#input:focus { outline: 2px solid var(--accent); border-color: transparent; }
#attach { padding: 0 12px; border: 1px solid var(--line); border-radius: 10px; background: var(--bg); color: var(--text); font-size: 18px; cursor: pointer; }
#attach:hover { border-color: var(--accent); }
#attached { display: flex; flex-wrap: wrap; gap: 6px; padding: 0 18px; background: var(--panel); }
#attached:not(:empty) { padding-top: 8px; border-top: 1px solid var(--line); }
#attached .chip { font-size: 13px; padding: 3px 8px; border-radius: 8px; background: var(--code); display: flex; gap: 6px; align-items: center; }
#attached .chip.uploading { opacity: .6; }
#attached .chip button { border: none; background: none; color: var(--muted); cursor: pointer; font: inherit; padding: 0; }
#main.dropping #log { outline: 2px dashed var(--accent); outline-offset: -8px; }
.msg .file { margin-top: 6px; }
.msg .file:first-child { margin-top: 0; }
.msg .file img { display: block; max-width: 100%; max-height: 320px; border-radius: 8px; cursor: pointer; }
.msg .file a { color: inherit; text-decoration: underline; }
.msg .file audio { display: block; max-width: 100%; margin-bottom: 4px; }
.msg .file .size { opacity: .7; font-size: 12px; }
#send { padding: 0 20px; border: none; border-radius: 10px; background: var(--accent); color: #fff; font: inherit; font-weight: 600; cursor: pointer; }
#send:disabled { opacity: .5; }
#login { position: fixed; inset: 0; background: rgba(0,0,0,.45); display: none; align-items: center; justify-content: center; }
#login.shown { display: flex; }
#login form { background: var(--panel); padding: 24px; border-radius: 14px; width: 360px; display: flex; flex-direction: column; gap: 10px; }
#login input { padding: 9px 11px; border-radius: 8px; border: 1px solid var(--line); background: var(--bg); color: var(--text); font: inherit; }
#login .err { color: var(--bad); font-size: 13px; min-height: 1em; }
#login button { padding: 9px; border: none; border-radius: 8px; background: var(--accent); color: #fff; font: inherit; cursor: pointer; }
@keyframes blink { 50% { opacity: 0; } }
@media (max-width: 700px) { #side { display: none; } }
${CANVAS_STYLE}`;
