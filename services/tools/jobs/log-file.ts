/**
 * The output file of a background job: `<workspace>/.lurkbot/jobs/<jobId>.log`. The sandboxed
 * command can write the workspace and may have planted symlinks there, so the directories must
 * be real ones, the file is created new (O_EXCL, O_NOFOLLOW), and the opened fd must be inside
 * the workspace (/proc/self/fd). Everything after that goes through the fd: appends are
 * serialized positional writes, reads are positional, so renaming or replacing the path later
 * changes nothing for us.
 */
import { constants } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { join, relative } from "node:path";
import { LurkError } from "../../../shared/contract/index.js";
import { readAt } from "../fs-confined.js";
import { createNewFile, fileStem, lurkbotDir } from "../lurkbot-dir.js";

export const JOBS_DIR = ".lurkbot/jobs";

export interface JobLog {
  /** workspace-relative path, for `read` */
  path: string;
  /** bytes written */
  readonly size: number;
  /** bytes queued for writing */
  readonly pending: number;
  append(chunk: Buffer): void;
  /** resolves when every queued chunk is written */
  flush(): Promise<void>;
  read(offset: number, length: number): Promise<Buffer>;
  close(): Promise<void>;
}

export async function openJobLog(workspace: string, jobId: string): Promise<JobLog> {
  const dir = await lurkbotDir(workspace, "jobs");
  const name = `${fileStem(jobId)}.log`;
  let handle: FileHandle;
  try {
    handle = await createNewFile(workspace, dir, name, constants.O_RDWR);
  } catch (err) {
    if (err instanceof LurkError) throw err;
    throw new LurkError("TOOL_FAILED", `cannot create the job's log file ${JOBS_DIR}/${name}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }

  let size = 0;
  let pending = 0;
  let chain: Promise<void> = Promise.resolve();
  let closed = false;
  return {
    path: relative(workspace, join(dir, name)),
    get size() {
      return size;
    },
    get pending() {
      return pending;
    },
    append(chunk) {
      if (closed) return;
      pending += chunk.length;
      const data = Buffer.from(chunk);
      chain = chain.then(async () => {
        try {
          if (!closed) {
            let written = 0;
            while (written < data.length) written += (await handle.write(data, written, data.length - written, size + written)).bytesWritten;
            size += data.length;
          }
        } catch {
          // a full disk: the chunk is lost, the job goes on
        } finally {
          pending -= data.length;
        }
      });
    },
    flush: () => chain,
    async read(offset, length) {
      await chain;
      const end = Math.min(size, offset + length);
      if (end <= offset) return Buffer.alloc(0);
      return readAt(handle, offset, end - offset);
    },
    async close() {
      await chain;
      closed = true;
      await handle.close().catch(() => undefined);
    },
  };
}
