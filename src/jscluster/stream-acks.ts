// The PubAcks a replicated stream's leader owes (stream-group.ts): each publish it proposed
// that wants one, under its key (Raft index × KEY_SPAN + its place in its batch), in propose
// order; applying an entry takes the reply of its key. Two parallel arrays and a head, no
// allocation per publish.

/** Ack keys: Raft index × this + the publish's place in its batch. */
export const KEY_SPAN = 65536;

export class PendingAcks {
  private keys: number[] = [];
  private replies: string[] = [];
  private head = 0;

  push(key: number, reply: string): void {
    this.keys.push(key);
    this.replies.push(reply);
  }

  clear(): void {
    this.keys.length = 0;
    this.replies.length = 0;
    this.head = 0;
  }

  /** The reply of the publish proposed under key ("" none); earlier keys are dropped. */
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
}
