// Refusals of a replicated stream's leader, held until a quorum confirms it still leads.
//
// A leader refuses a publish from its own state, without the log: a wrong expected sequence,
// a message id in process, discard new, ... A leader that was paused (SIGSTOP) or cut off does
// not know that another replica leads by now and took writes; answering from its stale state
// can tell a client "wrong last sequence" for a compare-and-set that the new leader stored,
// when the request reached both (the servers route it to every replica with interest while
// the old one's subscription lingers). So a refusal made at time r is sent only once a
// leadership confirmation (Raft ReadIndex: a heartbeat round a quorum answers) that started at
// or after r succeeds: no other leader existed at r then, and the state the refusal read was
// the stream's. If the confirmation fails (deposed), the refusals are dropped unanswered, like
// a publish that was never taken: the client retries, or hears from the new leader.
//
// Refusals made while a round is in flight wait for the next one; at most one round runs,
// and it covers every refusal made before it started. Accepted publishes are not held: their
// PubAck comes after commit, which already proves leadership.

export class RefusalGate {
  /** Made before the running round started: sent when it succeeds. */
  private covered: Array<[string, Buffer]> = [];
  /** Made while it runs: wait for the next round. */
  private next: Array<[string, Buffer]> = [];
  private running = false;
  private epoch = 0;

  constructor(
    private readonly confirm: () => Promise<void>,
    private readonly send: (reply: string, body: Buffer) => void,
  ) {}

  hold(reply: string, body: Buffer): void {
    this.next.push([reply, body]);
    if (!this.running) this.round();
  }

  /** Leadership changed or the stream closed: drop what is held (any round in flight ends
   *  without sending). */
  clear(): void {
    this.epoch++;
    this.covered = [];
    this.next = [];
    this.running = false;
  }

  get held(): number {
    return this.covered.length + this.next.length;
  }

  private round(): void {
    this.covered = this.next;
    this.next = [];
    this.running = true;
    const epoch = this.epoch;
    this.confirm().then(
      () => {
        if (epoch !== this.epoch) return;
        const out = this.covered;
        this.covered = [];
        this.running = false;
        for (const [reply, body] of out) this.send(reply, body);
        if (this.next.length > 0) this.round();
      },
      () => {
        if (epoch !== this.epoch) return;
        // Not (or no longer confirmed as) the leader: nothing held may be answered.
        this.covered = [];
        this.next = [];
        this.running = false;
      },
    );
  }
}
