// Tracing a client's inbound bytes as lines, with secrets redacted (only when tracing).

import { redactSecrets } from "./redact.js";

// The longest unfinished line kept between reads to be redacted whole.
const TRACE_CARRY_MAX_CHARS = 64 * 1024;

/** Cuts a connection's reads into the lines to trace. The unfinished last line of a read is
 *  kept for the next, so that a line (a CONNECT with a password) is redacted whole even when
 *  it arrives in pieces. Bounded: a longer line is traced by its start and the rest
 *  skipped. */
export class InboundTrace {
  private carry = "";
  private skip = false;

  /** The complete lines of this read (and of what was carried), redacted. */
  lines(chunk: Buffer): string[] {
    const out: string[] = [];
    const lines = (this.carry + chunk.toString("latin1")).split("\r\n");
    const carry = lines.pop() ?? "";
    for (const line of lines) {
      if (this.skip) {
        this.skip = false; // the end of a line already traced by its start
        continue;
      }
      if (line.length > 0) out.push(redactSecrets(line));
    }
    if (carry.length <= TRACE_CARRY_MAX_CHARS) {
      this.carry = carry;
      return out;
    }
    if (!this.skip) out.push(redactSecrets(carry));
    this.skip = true;
    this.carry = "";
    return out;
  }
}
