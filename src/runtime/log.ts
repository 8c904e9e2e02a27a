// Logging in nats-server's style: "[pid] 2026/12/02 18:31:20.123456 [INF] text".

export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
  fatal(msg: string): void;
  debug(msg: string): void;
  trace(msg: string): void;
  readonly debugEnabled: boolean;
  readonly traceEnabled: boolean;
}

export interface LogSink {
  write(line: string): void;
}

function pad(n: number, w: number): string {
  return String(n).padStart(w, "0");
}

function stamp(d: Date): string {
  return (
    `${d.getFullYear()}/${pad(d.getMonth() + 1, 2)}/${pad(d.getDate(), 2)} ` +
    `${pad(d.getHours(), 2)}:${pad(d.getMinutes(), 2)}:${pad(d.getSeconds(), 2)}.` +
    pad(d.getMilliseconds() * 1000, 6)
  );
}

export class StdLogger implements Logger {
  constructor(
    private readonly sink: LogSink,
    readonly debugEnabled: boolean,
    readonly traceEnabled: boolean,
    private readonly withTime = true,
  ) {}
  private line(level: string, msg: string): void {
    const t = this.withTime ? stamp(new Date()) + " " : "";
    this.sink.write(`[${process.pid}] ${t}[${level}] ${msg}\n`);
  }
  info(msg: string): void {
    this.line("INF", msg);
  }
  warn(msg: string): void {
    this.line("WRN", msg);
  }
  error(msg: string): void {
    this.line("ERR", msg);
  }
  fatal(msg: string): void {
    this.line("FTL", msg);
  }
  debug(msg: string): void {
    if (this.debugEnabled) this.line("DBG", msg);
  }
  trace(msg: string): void {
    if (this.traceEnabled) this.line("TRC", msg);
  }
}

export const nullLogger: Logger = {
  info() {},
  warn() {},
  error() {},
  fatal() {},
  debug() {},
  trace() {},
  debugEnabled: false,
  traceEnabled: false,
};
