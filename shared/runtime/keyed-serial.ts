/**
 * Work under one key (a session, a browser tab) runs one after another, in arrival order;
 * different keys run side by side. A failed task does not stop the ones queued behind it.
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const mine = before.catch(() => undefined).then(fn);
    this.tails.set(key, mine);
    void mine.finally(() => {
      if (this.tails.get(key) === mine) this.tails.delete(key);
    }).catch(() => undefined);
    return mine;
  }
}
