/**
 * The browser actor's files (`browser` in config.json; services/browser/README.md):
 *  - the Chromium profile directory (browserProfileDir: `browser.profileDir`, else
 *    `<dataDir>/browser/profile`; cookies, saved logins, storage) open to group or others:
 *    warning, critical when writable (another user could swap its files: cookies, preferences,
 *    extensions); `--fix` chmods it to 700 (never through a symlink), as the actor creates it;
 *  - a persistent profile inside an agent's workspace, where the file tools, exec and the
 *    model (and whatever steers it) read the cookies and logins;
 *  - the Chromium binary (`browser.executablePath`) another local user could replace: the file
 *    or its directory writable by group or others (a sticky directory excepted), or owned by
 *    another user than root and this one.
 * Nothing when browser.enabled is false.
 */
import { lstatSync, realpathSync, statSync, type Stats } from "node:fs";
import { dirname, isAbsolute, relative, resolve } from "node:path";
import { agentWorkspace, type LurkConfig } from "../../../shared/runtime/config.js";
import { browserProfileDir } from "../../../shared/runtime/config-browser.js";
import { finding, type AuditContext, type AuditFinding } from "./finding.js";
import { octal } from "./fix.js";

export function browserFileChecks({ config }: AuditContext): AuditFinding[] {
  if (!config.browser.enabled) return [];
  const profile = browserProfileDir(config.browser, config.home, config.dataDir);
  return [...profileModeChecks(profile, config.browser.persistentProfile), ...profileInWorkspaceChecks(config, profile), ...executableChecks(config.browser.executablePath)];
}

function profileModeChecks(profile: string, persistent: boolean): AuditFinding[] {
  let own: Stats;
  let st: Stats;
  try {
    own = lstatSync(profile);
    st = own.isSymbolicLink() ? statSync(profile) : own;
  } catch {
    return [];
  }
  if (!st.isDirectory() || (st.mode & 0o077) === 0) return [];
  const link = own.isSymbolicLink();
  const writable = (st.mode & 0o022) !== 0;
  return [finding({
    id: "fs.browser-profile.permissions", level: writable ? "critical" : "warning",
    title: `${profile}${link ? " (a symlink)" : ""}, the browser's profile, is open to other users (mode ${octal(st.mode)})`,
    detail: `It holds Chromium's cookies, saved logins and site storage${persistent ? " (browser.persistentProfile: kept between starts)" : " (browser.persistentProfile is false, but what an earlier persistent profile left is still there)"}. Other local users can ${writable ? "replace what is in it — cookies, preferences, extensions — and so act in the sites you are signed in to" : "list it, and read every file in it that is not mode 600 (Chromium writes its own files 600)"}.${link ? " It is a symlink, which --fix does not follow." : ""}`,
    fix: `chmod 700 ${link ? `"$(readlink -f ${profile})"` : profile}`,
    ...(link ? {} : { repair: { path: profile, mode: 0o700 } }),
  })];
}

/** The real path of `path` when it exists, else its absolute form. */
function realOrAbsolute(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

function isInside(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

function profileInWorkspaceChecks(config: LurkConfig, profile: string): AuditFinding[] {
  if (!config.browser.persistentProfile) return [];
  const real = realOrAbsolute(profile);
  const agents = config.agents.filter((a) => isInside(real, realOrAbsolute(agentWorkspace(config, a))));
  if (agents.length === 0) return [];
  return [finding({
    id: "browser.profile-in-workspace", level: "warning",
    title: "the browser's profile is inside an agent's workspace",
    detail: `${profile} (browser.profileDir) is in the workspace of ${agents.map((a) => a.id).join(", ")}: read, exec and the other file tools reach it, so the model — and any page or message that steers it — can read the cookies and saved logins of the sites the browser is signed in to, or change them.`,
    fix: "remove browser.profileDir from config.json (the profile then lives in <dataDir>/browser/profile, mode 700) or point it outside every workspace; move or delete the old directory",
  })];
}

function executableChecks(path: string): AuditFinding[] {
  let file: Stats;
  let dir: Stats;
  try {
    file = statSync(path);
    dir = statSync(dirname(realpathSync(path)));
  } catch {
    return []; // a missing Chromium is not a security matter: calls say how to install it
  }
  const me = process.getuid?.();
  const problems: string[] = [];
  if ((file.mode & 0o022) !== 0) problems.push(`it is writable by ${file.mode & 0o002 ? "every user" : "its group"} (mode ${octal(file.mode)})`);
  if ((dir.mode & 0o022) !== 0 && (dir.mode & 0o1000) === 0) problems.push(`its directory is writable by ${dir.mode & 0o002 ? "every user" : "its group"} (mode ${octal(dir.mode)}), so the file can be swapped`);
  if (me !== undefined && file.uid !== 0 && file.uid !== me) problems.push(`it belongs to another user (uid ${file.uid})`);
  if (problems.length === 0) return [];
  return [finding({
    id: "browser.executable.replaceable", level: "critical",
    title: "another local user can replace the Chromium LurkBot runs",
    detail: `browser.executablePath is ${path}: ${problems.join("; ")}. Whoever replaces it runs their program as the browser actor's user the next time the browser starts, with LurkBot's home and credentials in reach.`,
    fix: `install Chromium from the system's packages (\`sudo apt-get install chromium\`) and set browser.executablePath to /usr/bin/chromium, or make ${path} and its directory owned by root or you and not writable by others (chmod go-w)`,
  })];
}
