/**
 * Display names seen in member events (`<roomId> <userId>` -> name), for the sender name of an
 * inbound message: bounded, least recently used first out, so a busy homeserver (or members
 * renaming themselves in a loop) cannot grow it without limit. A name not kept is only missing
 * from the message's sender (the user id stays).
 */

export const MAX_NAMES = 5_000;

export class DisplayNames {
  private readonly names = new Map<string, string>();

  constructor(private readonly max = MAX_NAMES) {}

  get size(): number {
    return this.names.size;
  }

  set(roomId: string, userId: string, name: string): void {
    const key = `${roomId} ${userId}`;
    this.names.delete(key);
    this.names.set(key, name.slice(0, 200));
    while (this.names.size > this.max) this.names.delete(this.names.keys().next().value!);
  }

  get(roomId: string, userId: string): string | undefined {
    const key = `${roomId} ${userId}`;
    const name = this.names.get(key);
    if (name !== undefined) {
      this.names.delete(key);
      this.names.set(key, name);
    }
    return name;
  }

  /** A member left (or the bot left the room): their names go. */
  forget(roomId: string, userId?: string): void {
    if (userId !== undefined) {
      this.names.delete(`${roomId} ${userId}`);
      return;
    }
    for (const key of [...this.names.keys()]) if (key.startsWith(`${roomId} `)) this.names.delete(key);
  }
}
