// The payload of one PUB/HPUB (client parser) or RMSG/HMSG/LMSG (route parser) frame, with
// its trailing CRLF, read from one or more reads. Shared by both hot-path parsers: a payload
// that lies whole in the read is handed out as a view of the read itself; only one that spans
// reads is copied, into a buffer of exactly its size, once.

const CR = 13;
const LF = 10;

export class PayloadReader {
  /** Payload bytes (headers included), without the trailing CRLF. */
  size = 0;
  // Set by take() once the payload is complete: data[start, end); done() hands it out.
  private data: Buffer | null = null;
  start = 0;
  end = 0;
  // The part of a payload that spans reads, and how much of it (CRLF included) is there.
  private spill: Buffer | null = null;
  private have = 0;

  /** A new payload of `size` bytes follows. */
  begin(size: number): void {
    this.size = size;
    this.spill = null;
    this.have = 0;
    this.data = null;
  }

  /**
   * Takes payload bytes from buf[i, n): returns the index after them, or -1 when the payload
   * is not followed by CRLF (a protocol error). Then done() says whether the payload is
   * complete; if not, every byte of the read was taken and more must come.
   */
  take(buf: Buffer, i: number, n: number): number {
    const size = this.size;
    const need = size + 2;
    if (this.spill === null) {
      if (n - i >= need) {
        const end = i + size;
        if (buf[end] !== CR || buf[end + 1] !== LF) return -1;
        this.data = buf;
        this.start = i;
        this.end = end;
        return end + 2;
      }
      this.spill = Buffer.allocUnsafe(need);
      this.have = 0;
    }
    const spill = this.spill;
    const take = Math.min(need - this.have, n - i);
    buf.copy(spill, this.have, i, i + take);
    this.have += take;
    if (this.have < need) return n;
    this.spill = null;
    if (spill[size] !== CR || spill[size + 1] !== LF) return -1;
    this.data = spill;
    this.start = 0;
    this.end = size;
    return i + take;
  }

  /** After take(): the buffer that holds the whole payload at [start, end), once (it is
   *  forgotten here), or null while more must come. */
  done(): Buffer | null {
    const d = this.data;
    this.data = null;
    return d;
  }

  /** Forgets the payload (the parser stopped, or the payload was delivered). */
  clear(): void {
    this.spill = null;
    this.data = null;
  }
}
