/**
 * The web site of the browser's download and upload tests: `main` on 127.0.0.1 (allowed through
 * tools.web.allowPrivateHosts; `other` is the same site on another port, so another origin) and
 * `secret` on 127.0.0.2 (a private address that is not).
 *  - /files: links to a CSV report (Content-Disposition attachment), a file whose suggested
 *    name climbs out of the folder and is hidden, a 3 MB file streamed slowly (over a 1 MB cap),
 *    and a file on `secret`;
 *  - /file/report.csv, /file/evil, /big, /page (an HTML page, not a file);
 *  - /upload-form: a visible file input (multiple) in a form, and a button that opens the file
 *    chooser of a hidden input whose form sends itself on change; POST /upload keeps what it
 *    received (`uploads`: field, file name, bytes) and answers "Received ...";
 *  - /spoof-upload: a file input whose `ownerDocument` (and its `location`) the page redefined to
 *    claim it is on TRUSTED_SPOOF;
 *  - /auto-download?after=ms: a page whose script starts a download on its own after `ms`.
 * `secretHits` lists the requests that reached 127.0.0.2.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedFile {
  field: string;
  filename: string;
  bytes: Buffer;
}

export interface FilesSite {
  main: string;
  /** the same site on another port: another origin */
  other: string;
  secret: string;
  secretHits: string[];
  uploads: ReceivedFile[];
  /** the report's bytes */
  report: Buffer;
  close(): Promise<void>;
}

export const BIG_BYTES = 3 * 1024 * 1024;
/** the origin /spoof-upload's file input claims to be on */
export const TRUSTED_SPOOF = "https://accounts.trusted-bank.example";

const page = (title: string, body: string) => `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`;

function listen(server: http.Server, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, () => resolve((server.address() as AddressInfo).port));
  });
}

/** The file parts of a multipart/form-data body. */
export function parseMultipart(body: Buffer, contentType: string): ReceivedFile[] {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(contentType);
  if (!boundary) return [];
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const files: ReceivedFile[] = [];
  let at = body.indexOf(delimiter);
  while (at >= 0) {
    const start = at + delimiter.length;
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    const part = body.subarray(start + 2, next - 2); // after CRLF, before CRLF
    const split = part.indexOf("\r\n\r\n");
    if (split >= 0) {
      const headers = part.subarray(0, split).toString("utf8");
      const field = /name="([^"]*)"/.exec(headers)?.[1];
      const filename = /filename="([^"]*)"/.exec(headers)?.[1];
      if (field !== undefined && filename !== undefined && filename !== "") files.push({ field, filename, bytes: Buffer.from(part.subarray(split + 4)) });
    }
    at = next;
  }
  return files;
}

export async function startFilesSite(): Promise<FilesSite> {
  const secretHits: string[] = [];
  const secretServer = http.createServer((req, res) => {
    secretHits.push(req.url ?? "");
    res.writeHead(200, { "content-type": "application/octet-stream", "content-disposition": 'attachment; filename="secret.bin"' });
    res.end("internal secret");
  });
  const secretPort = await listen(secretServer, "127.0.0.2");
  const secret = `http://127.0.0.2:${secretPort}`;
  const report = Buffer.from(Array.from({ length: 2000 }, (_, i) => `${i},item ${i},${(i * 7919) % 1000}\n`).join(""));
  const uploads: ReceivedFile[] = [];
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://x");
    const html = (title: string, body: string) => {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(page(title, body));
    };
    switch (url.pathname) {
      case "/files":
        return html("Files", `<h1>Files</h1><ul>
          <li><a href="/file/report.csv">Get the report</a></li>
          <li><a href="/file/evil">Get the settings</a></li>
          <li><a href="/big">Get the big file</a></li>
          <li><a href="${secret}/secret.bin" download>Get the internal file</a></li>
          <li><a href="/page">Read more</a></li></ul>`);
      case "/page":
        return html("Just a page", "<h1>Not a file</h1>");
      case "/file/report.csv":
        res.writeHead(200, { "content-type": "text/csv; charset=utf-8", "content-disposition": 'attachment; filename="report.csv"', "content-length": report.length });
        return res.end(report);
      case "/file/evil":
        // a name that climbs out of the folder and is hidden, with a control character
        res.writeHead(200, { "content-type": "text/plain", "content-disposition": "attachment; filename*=UTF-8''..%2F..%2F..%2F.bashrc%0A" });
        return res.end("echo owned\n");
      case "/big": {
        res.writeHead(200, { "content-type": "application/octet-stream", "content-disposition": 'attachment; filename="big.bin"', "content-length": BIG_BYTES });
        // slowly enough that the cap is met while it runs
        const chunk = Buffer.alloc(64 * 1024, 7);
        let sent = 0;
        const send = () => {
          if (sent >= BIG_BYTES || res.destroyed) return void res.end();
          sent += chunk.length;
          res.write(chunk, () => setTimeout(send, 10));
        };
        return send();
      }
      case "/upload-form":
        return html("Upload", `<h1>Upload</h1>
          <form method="post" enctype="multipart/form-data" action="/upload"><label>Document <input type="file" name="doc" multiple></label>
          <button type="submit">Send the document</button></form>
          <button type="button" onclick="document.getElementById('picture').click()">Choose a picture</button>
          <form method="post" enctype="multipart/form-data" action="/upload"><input id="picture" type="file" name="picture" style="display:none" onchange="this.form.submit()"></form>`);
      case "/spoof-upload":
        // a page that lies about where its file input is: ownerDocument (and so location) redefined on the element
        return html("Statement", `<h1>Send your statement</h1>
          <form method="post" enctype="multipart/form-data" action="/upload"><label>Statement <input id="statement" type="file" name="statement"></label>
          <button type="submit">Send the statement</button></form>
          <script>
            const real = document;
            Object.defineProperty(document.getElementById("statement"), "ownerDocument", {
              get: () => ({ documentElement: real.documentElement, defaultView: window, location: { href: "${TRUSTED_SPOOF}/login", origin: "${TRUSTED_SPOOF}" } }),
            });
          </script>`);
      case "/auto-download":
        // a page whose script starts a download on its own, `after` ms after it loaded (no model action)
        return html("Later", `<h1>Wait for it</h1><script>setTimeout(() => { location.href = "/file/report.csv"; }, ${Number(url.searchParams.get("after") ?? 6000)});</script>`);
      case "/upload": {
        const chunks: Buffer[] = [];
        req.on("data", (d: Buffer) => chunks.push(d));
        req.on("end", () => {
          const files = parseMultipart(Buffer.concat(chunks), req.headers["content-type"] ?? "");
          uploads.push(...files);
          html("Received", `<h1>Received ${files.length} file${files.length === 1 ? "" : "s"}</h1><ul>${files.map((f) => `<li>${f.field}: ${f.filename} (${f.bytes.length} bytes)</li>`).join("")}</ul>`);
        });
        return;
      }
      default:
        res.writeHead(404, { "content-type": "text/plain" });
        return res.end("not found");
    }
  };
  const mainServer = http.createServer(handler);
  const otherServer = http.createServer(handler);
  const mainPort = await listen(mainServer, "127.0.0.1");
  const otherPort = await listen(otherServer, "127.0.0.1");
  return {
    main: `http://127.0.0.1:${mainPort}`,
    other: `http://127.0.0.1:${otherPort}`,
    secret,
    secretHits,
    uploads,
    report,
    async close() {
      for (const s of [mainServer, otherServer, secretServer]) {
        s.closeAllConnections();
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
    },
  };
}
