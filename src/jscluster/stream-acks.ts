// The PubAcks a stream leader owes: the reply subject of each publish it proposed, by key
// (Raft index × KEY_SPAN + the publish's place in its batch), in propose order. Entries apply
// in that order, so a cursor walks the list once (no map, no per-publish allocation beyond
// the two array slots).

/** Ack keys: Raft index × this + the publish's place in its batch. */
export const KEY_SPAN = 65536;

export class AckKeys {
  private keys: number[] = [];
  private replies: string[] = [];
  private head = 0;

  add(key: number, reply: string): void {
    this.keys.push(key);
    this.replies.push(reply);
  }

  /** The reply of the publish proposed under key ("" none); keys before it are passed. */
  take(key: number): string {
    const idx = this.keys;
    let h = this.head;
    while (h < idx.length && idx[h]! < key) h++;
    let reply = "";
    if (h < idx.length && idx[h] === key) reply = this.replies[h++]!;
    if (h === idx.length) {
      idx.length = 0;
      this.replies.length = 0;
      h = 0;
    } else if (h > 1024 && h * 2 > idx.length) {
      idx.splice(0, h);
      this.replies.splice(0, h);
      h = 0;
    }
    this.head = h;
    return reply;
  }

  clear(): void {
    this.keys.length = 0;
    this.replies.length = 0;
    this.head = 0;
  }
}
