/**
 * How many canvas media fetches (canvas-image.ts) may run at once: each buffers its file (up to
 * 20 MiB for a video) before it answers, so at most `perUser` for one user and `total` for the
 * whole channel (2 and 4: at most 80 MiB of video in memory); one more is refused
 * (HTTP 429) rather than queued. A slot is held from the check to the answer, and given back
 * whatever the outcome.
 */

export class CanvasMediaSlots {
  private readonly perUser = 2;
  private readonly total = 4;
  private readonly byUser = new Map<string, number>();
  private inUse = 0;

  /** A slot for `userId`, or why there is none; `release` gives it back (once). */
  take(userId: string): { release: () => void } | { refused: string } {
    const mine = this.byUser.get(userId) ?? 0;
    if (mine >= this.perUser) return { refused: `you are loading ${mine} canvas images, videos or audio files already (at most ${this.perUser} at once per user): wait for one to finish, then click again` };
    if (this.inUse >= this.total) return { refused: `the web channel is loading ${this.inUse} canvas images, videos or audio files already (at most ${this.total} at once): wait a moment, then click again` };
    this.byUser.set(userId, mine + 1);
    this.inUse++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.inUse--;
        const left = (this.byUser.get(userId) ?? 1) - 1;
        if (left > 0) this.byUser.set(userId, left);
        else this.byUser.delete(userId);
      },
    };
  }
}
