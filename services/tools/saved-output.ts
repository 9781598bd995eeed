/**
 * The full output of a tool whose reply was cut at the output cap, kept in the workspace as
 * `.lurkbot/outputs/<toolCallId>.txt` for `read` to page through (exec, web_fetch). The command
 * or anything else may have planted symlinks there: the directories must be real ones
 * (lurkbot-dir.ts), the file is created new (O_EXCL, O_NOFOLLOW), and the opened fd must be
 * inside the workspace.
 */
import { constants } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { LurkError } from "../../shared/contract/index.js";
import type { ConfinedFs } from "./fs-confined.js";
import { createNewFile, fileStem, lurkbotDir } from "./lurkbot-dir.js";

export const OUTPUTS_DIR = ".lurkbot/outputs";

/** Writes `chunks` to a new file in the outputs directory; its workspace-relative path. */
export async function saveOutput(fs: ConfinedFs, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, toolCallId: string): Promise<string> {
  const dir = await lurkbotDir(fs.realRoot, "outputs");
  const stem = fileStem(toolCallId) || "output";
  for (let n = 0; n < 100; n++) {
    const name = n === 0 ? `${stem}.txt` : `${stem}-${n}.txt`;
    let handle: FileHandle;
    try {
      handle = await createNewFile(fs.realRoot, dir, name, constants.O_WRONLY);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") continue;
      throw err;
    }
    try {
      for await (const chunk of chunks) await handle.write(chunk);
    } finally {
      await handle.close();
    }
    return `${OUTPUTS_DIR}/${name}`;
  }
  throw new LurkError("CONFLICT", "too many saved outputs with this name");
}
