/** LurkBot's version (package.json), reported by every actor's service as its semver version. */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const packageJson = fileURLToPath(new URL("../../../package.json", import.meta.url));
export const LURKBOT_VERSION: string = (JSON.parse(readFileSync(packageJson, "utf8")) as { version: string }).version;
