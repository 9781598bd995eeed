/** Paths of the repository, resolved from the compiled file (dist/shared/scripts/...). */
import { fileURLToPath } from "node:url";
import { join, resolve } from "node:path";

/** the compiled tree this file is part of (`dist/`, or another --outDir directly under the repo) */
export const DIST_ROOT = resolve(fileURLToPath(new URL(".", import.meta.url)), "../..");
export const REPO_ROOT = resolve(DIST_ROOT, "..");
export const CONTRACT_JSON_PATH = join(REPO_ROOT, "shared", "contract", "lurkbot-contract.json");
export const NATS_CONF_PATH = join(REPO_ROOT, "nats.conf");
/** compiled JS of an actor's main */
export const actorMainPath = (actor: string) => join(DIST_ROOT, "services", actor, "main.js");
