/**
 * Whether the browser actor runs Chromium with Chromium's own sandbox: `browser.sandbox` when it
 * is set, else on unless the process runs as root (Chromium refuses its sandbox as root). One rule
 * for the launch (services/browser/chromium.ts), the actor's `$SRV.INFO` metadata
 * (`chromiumSandbox`) and `lurkbot security audit`.
 */
export function chromiumSandboxOn(sandbox: boolean | undefined, uid: number | undefined = process.getuid?.()): boolean {
  return sandbox ?? uid !== 0;
}
