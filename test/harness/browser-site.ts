/**
 * The web site the browser tests visit: `main` on 127.0.0.1 (allowed through
 * tools.web.allowPrivateHosts) with a home page (heading, link, form, popup link), a second
 * page, the form's answer, redirects and an image that lead to `secret` on 127.0.0.2 (a private
 * address that is not allowed; the home page also has a password field), a page of noise (a large screenshot) and a tall page. `secret`
 * counts its hits: a test proves the browser never reached it.
 */
import { readdirSync, readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface BrowserSite {
  /** http://127.0.0.1:<port> */
  main: string;
  /** http://127.0.0.2:<port> */
  secret: string;
  secretPort: number;
  /** requests that reached 127.0.0.2 */
  secretHits: string[];
  close(): Promise<void>;
}

const page = (title: string, body: string) => `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;
const escape = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

function listen(server: http.Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve((server.address() as AddressInfo).port));
  });
}

export async function startBrowserSite(): Promise<BrowserSite> {
  const secretHits: string[] = [];
  const secretServer = http.createServer((req, res) => {
    secretHits.push(req.url ?? "");
    res.setHeader("content-type", "text/html");
    res.end(page("Secret", "<h1>Internal admin</h1>"));
  });
  const secretPort = await listen(secretServer, "127.0.0.2");
  const secret = `http://127.0.0.2:${secretPort}`;
  const mainServer = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const html = (body: string, title: string) => {
      res.setHeader("content-type", "text/html; charset=utf-8");
      res.end(page(title, body));
    };
    switch (url.pathname) {
      case "/":
        return html(`<h1>Welcome</h1><nav><a href="/next">Go next</a> <a href="/next" target="_blank">Open in new tab</a></nav>
          <form action="/submit" method="get"><label>Your name <input name="name"></label>
          <label>Color <select name="color"><option value="red">Red</option><option value="blue">Blue</option></select></label>
          <button type="submit">Send</button></form>
          <button type="button" onclick="document.getElementById('out').textContent='clicked ' + (++window.n || (window.n = 1))">Count</button><p id="out">not clicked</p>
          <label>Password <input type="password"></label>`, "Home");
      case "/next":
        return html("<h1>Second page</h1><p>You followed the link.</p>", "Next");
      case "/submit":
        return html(`<h1>Thanks ${escape(url.searchParams.get("name") ?? "")}</h1><p>color: ${escape(url.searchParams.get("color") ?? "")}</p>`, "Done");
      case "/redirect-private":
        res.writeHead(302, { location: `${secret}/secret` });
        return res.end();
      case "/redirect-private-https":
        res.writeHead(302, { location: `https://127.0.0.2:${secretPort}/secret` });
        return res.end();
      case "/with-private-image":
        return html(`<h1>Pictures</h1><img alt="internal" src="${secret}/pixel.png">`, "Pictures");
      case "/noise":
        return html(`<canvas id="c" width="1280" height="800"></canvas><script>
          const c = document.getElementById('c').getContext('2d'); const img = c.createImageData(1280, 800);
          for (let i = 0; i < img.data.length; i++) img.data[i] = (i % 4 === 3) ? 255 : Math.random() * 256;
          c.putImageData(img, 0, 0);</script>`, "Noise");
      case "/tall":
        return html(`<h1>Tall</h1>${Array.from({ length: 200 }, (_, i) => `<p>paragraph ${i}</p>`).join("")}`, "Tall");
      default:
        res.writeHead(404, { "content-type": "text/plain" });
        return res.end("not found");
    }
  });
  const mainPort = await listen(mainServer, "127.0.0.1");
  return {
    main: `http://127.0.0.1:${mainPort}`,
    secret,
    secretPort,
    secretHits,
    async close() {
      for (const s of [mainServer, secretServer]) {
        s.closeAllConnections();
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
    },
  };
}

/** Chromium processes that are children of `pid` (the browser actor). */
export function chromiumChildren(pid: number): number[] {
  return readdirSync("/proc").filter((d) => /^\d+$/.test(d)).flatMap((d) => {
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      return ppid === pid && /chrom/i.test(stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"))) ? [Number(d)] : [];
    } catch {
      return [];
    }
  });
}
