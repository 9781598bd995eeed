/**
 * Listeners that count what reaches them, to prove a page sent nothing (or something) over the
 * network: a TCP server (every connection, e.g. an <img>, a preconnect, a meta refresh) and a
 * UDP socket (e.g. WebRTC's STUN binding requests), both on 127.0.0.1.
 */
import { createSocket } from "node:dgram";
import { createServer, type Socket } from "node:net";

export interface NetSink { tcpPort: number; udpPort: number; tcp: number; udp: number; close(): Promise<void> }

export async function netSink(): Promise<NetSink> {
  const sockets = new Set<Socket>();
  const sink = { tcpPort: 0, udpPort: 0, tcp: 0, udp: 0 } as NetSink;
  const server = createServer((socket) => {
    sink.tcp++;
    sockets.add(socket);
    socket.on("error", () => undefined);
    socket.on("close", () => sockets.delete(socket));
    socket.end("HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  sink.tcpPort = (server.address() as { port: number }).port;
  const udp = createSocket("udp4");
  udp.on("message", () => { sink.udp++; });
  await new Promise<void>((resolve) => udp.bind(0, "127.0.0.1", resolve));
  sink.udpPort = udp.address().port;
  sink.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await new Promise<void>((resolve) => udp.close(() => resolve()));
  };
  return sink;
}

/**
 * A presented document that tries every way out: scripts (fetch, WebRTC), a remote image, style
 * and preconnect, and (`refresh`) a meta refresh: a navigation, which a frame allowed to run
 * scripts may do anyway.
 */
export function leakyHtml(sink: NetSink, refresh = true): string {
  const at = `http://127.0.0.1:${sink.tcpPort}`;
  return `<!doctype html><html><head>
${refresh ? `<meta http-equiv="refresh" content="1;url=${at}/refresh">` : ""}
<link rel="stylesheet" href="${at}/style.css"><link rel="preconnect" href="${at}"><link rel="prefetch" href="${at}/prefetch">
<style>body { background: url(${at}/background.png); }</style>
</head><body><h1 id="t">static</h1><img src="${at}/image.png" alt="">
<script>
  document.getElementById("t").textContent = "from script";
  fetch("${at}/fetch").then(function () { document.body.setAttribute("data-net", "open"); }, function () { document.body.setAttribute("data-net", "blocked"); });
  try { document.body.setAttribute("data-parent", String(parent.document.title)); } catch (e) { document.body.setAttribute("data-parent", "denied"); }
  try {
    var pc = new RTCPeerConnection({ iceServers: [{ urls: "stun:127.0.0.1:${sink.udpPort}" }] });
    pc.createDataChannel("x");
    pc.createOffer().then(function (o) { return pc.setLocalDescription(o); });
    document.body.setAttribute("data-rtc", "tried");
  } catch (e) { document.body.setAttribute("data-rtc", "failed: " + e.message); }
</script></body></html>`;
}
