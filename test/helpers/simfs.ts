// A simulated disk behind the Fs interface. File contents are durable only after fsync of the
// file; names (create, rename, unlink) are durable only after fsync of their directory.
// crash() throws away everything not durable; with tear, a random prefix of the unsynced
// writes survives and the next one is cut at a random byte, as a power cut can do.
// Handles opened before a crash fail afterwards, so a store left over from before the crash
// cannot scribble on the "rebooted" disk.
import { dirname } from "node:path";
import type { Fs, FsStat } from "../../src/runtime/fs.js";

interface Op {
  kind: "write" | "truncate";
  pos: number;
  bytes: Buffer | null;
  len: number;
}

class Inode {
  cur: Buffer = Buffer.alloc(0);
  len = 0;
  durable: Buffer = Buffer.alloc(0);
  ops: Op[] = []; // unsynced, in order
}

interface Handle {
  inode: Inode;
  epoch: number;
}

export interface CrashOptions {
  /** Keep a random prefix of unsynced writes and tear the next one at a random byte. */
  tear?: boolean;
  /** Deterministic randomness for tear, in [0, 1). */
  random?: () => number;
}

function ebadf(): Error {
  return Object.assign(new Error("EBADF: handle from before the crash"), { code: "EBADF" });
}

export class SimFs implements Fs {
  private live = new Map<string, Inode>();
  private durableNames = new Map<string, Inode>();
  private dirs = new Set<string>(["/"]);
  private fds = new Map<number, Handle>();
  private nextFd = 3;
  private epoch = 0;
  fsyncCount = 0;
  /** When set, the next fsync fails with this error (fault injection). */
  failNextFsync: Error | null = null;
  /** Bytes the live files may hold in all (a full disk): a write that would go past it writes
   *  what fits, then throws ENOSPC, as write(2) does. */
  capacityBytes = Infinity;

  mkdirp(path: string): void {
    let p = path;
    while (p !== "/" && p !== "." && !this.dirs.has(p)) {
      this.dirs.add(p);
      p = dirname(p);
    }
  }
  readdir(path: string): string[] {
    const out: string[] = [];
    const prefix = path.endsWith("/") ? path : `${path}/`;
    for (const k of this.live.keys()) if (k.startsWith(prefix) && !k.slice(prefix.length).includes("/")) out.push(k.slice(prefix.length));
    for (const d of this.dirs) if (d.startsWith(prefix) && d !== path && !d.slice(prefix.length).includes("/")) out.push(d.slice(prefix.length));
    return out;
  }
  stat(path: string): FsStat | null {
    const f = this.live.get(path);
    if (f) return { size: f.len, isDir: false };
    return this.dirs.has(path) ? { size: 0, isDir: true } : null;
  }
  open(path: string, mode: "r" | "rw"): number {
    let f = this.live.get(path);
    if (f === undefined) {
      if (mode === "r") throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
      if (!this.dirs.has(dirname(path))) throw Object.assign(new Error(`ENOENT: dir of ${path}`), { code: "ENOENT" });
      f = new Inode();
      this.live.set(path, f);
    }
    const fd = this.nextFd++;
    this.fds.set(fd, { inode: f, epoch: this.epoch });
    return fd;
  }
  private h(fd: number): Inode {
    const h = this.fds.get(fd);
    if (h === undefined || h.epoch !== this.epoch) throw ebadf();
    return h.inode;
  }
  close(fd: number): void {
    this.fds.delete(fd);
  }
  fsize(fd: number): number {
    return this.h(fd).len;
  }
  read(fd: number, buf: Buffer, off: number, len: number, pos: number): number {
    const f = this.h(fd);
    const n = Math.max(0, Math.min(len, f.len - pos));
    if (n > 0) f.cur.copy(buf, off, pos, pos + n); // past the end: 0 bytes, as pread(2)
    return n;
  }
  write(fd: number, buf: Buffer, off: number, len: number, pos: number): void {
    const f = this.h(fd);
    const grow = Math.max(0, pos + len - f.len);
    const room = this.capacityBytes - this.usedBytes();
    const fits = grow <= room ? len : Math.max(0, len - (grow - Math.max(0, room)));
    const bytes = Buffer.from(buf.subarray(off, off + fits));
    if (fits > 0) {
      applyWrite(f, pos, bytes);
      f.ops.push({ kind: "write", pos, bytes, len: fits });
    }
    if (fits < len) throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
  }
  /** Bytes held by the live files. */
  usedBytes(): number {
    let n = 0;
    for (const f of new Set(this.live.values())) n += f.len;
    return n;
  }
  truncate(fd: number, len: number): void {
    const f = this.h(fd);
    applyTruncate(f, len);
    f.ops.push({ kind: "truncate", pos: 0, bytes: null, len });
  }
  private commit(f: Inode, snapshot: Buffer, opsCovered: number): void {
    f.durable = snapshot;
    f.ops.splice(0, opsCovered);
  }
  fsync(fd: number, cb: (err: Error | null) => void): void {
    let f: Inode;
    try {
      f = this.h(fd);
    } catch (e) {
      setImmediate(cb, e as Error);
      return;
    }
    const injected = this.failNextFsync;
    this.failNextFsync = null;
    const snap = Buffer.from(f.cur.subarray(0, f.len));
    const n = f.ops.length;
    const epoch = this.epoch;
    setImmediate(() => {
      if (epoch !== this.epoch) return cb(ebadf());
      if (injected !== null) return cb(injected);
      this.fsyncCount++;
      this.commit(f, snap, n);
      cb(null);
    });
  }
  fsyncSync(fd: number): void {
    const f = this.h(fd);
    this.fsyncCount++;
    this.commit(f, Buffer.from(f.cur.subarray(0, f.len)), f.ops.length);
  }
  fsyncDir(path: string, cb: (err: Error | null) => void): void {
    const epoch = this.epoch;
    // names as of the call are what this fsync makes durable
    const snap = this.dirSnapshot(path);
    setImmediate(() => {
      if (epoch !== this.epoch) return cb(ebadf());
      this.applyDirSnapshot(path, snap);
      cb(null);
    });
  }
  fsyncDirSync(path: string): void {
    this.applyDirSnapshot(path, this.dirSnapshot(path));
  }
  private dirSnapshot(path: string): Map<string, Inode> {
    const m = new Map<string, Inode>();
    for (const [k, v] of this.live) if (dirname(k) === path) m.set(k, v);
    return m;
  }
  private applyDirSnapshot(path: string, snap: Map<string, Inode>): void {
    for (const k of [...this.durableNames.keys()]) if (dirname(k) === path) this.durableNames.delete(k);
    for (const [k, v] of snap) this.durableNames.set(k, v);
  }
  rename(from: string, to: string): void {
    const f = this.live.get(from);
    if (f === undefined) throw Object.assign(new Error(`ENOENT: ${from}`), { code: "ENOENT" });
    this.live.delete(from);
    this.live.set(to, f);
  }
  unlink(path: string): void {
    this.live.delete(path);
  }
  rmrf(path: string): void {
    const prefix = `${path}/`;
    for (const k of [...this.live.keys()]) if (k === path || k.startsWith(prefix)) this.live.delete(k);
    for (const k of [...this.durableNames.keys()]) if (k === path || k.startsWith(prefix)) this.durableNames.delete(k);
    for (const d of [...this.dirs]) if (d === path || d.startsWith(prefix)) this.dirs.delete(d);
  }
  readFile(path: string): Buffer | null {
    const f = this.live.get(path);
    return f === undefined ? null : Buffer.from(f.cur.subarray(0, f.len));
  }

  /** Power cut: only durable names and durable bytes remain; old handles die. */
  crash(opts: CrashOptions = {}): void {
    const rnd = opts.random ?? Math.random;
    this.epoch++;
    this.fds.clear();
    const inodes = new Set(this.durableNames.values());
    for (const f of new Set([...this.live.values(), ...inodes])) {
      const ops = f.ops;
      f.ops = [];
      f.cur = Buffer.from(f.durable);
      f.len = f.durable.length;
      if (opts.tear === true && ops.length > 0) {
        const keep = Math.floor(rnd() * (ops.length + 1));
        for (let k = 0; k < keep && k < ops.length; k++) replay(f, ops[k] as Op);
        const torn = ops[keep];
        if (torn !== undefined && torn.kind === "write" && torn.bytes !== null) {
          const cut = Math.floor(rnd() * torn.bytes.length);
          applyWrite(f, torn.pos, torn.bytes.subarray(0, cut));
        }
      }
      f.durable = Buffer.from(f.cur.subarray(0, f.len));
    }
    this.live = new Map(this.durableNames);
  }

  /** Flip one byte of a file in place (durably), for corruption tests. */
  corrupt(path: string, offset: number, xor = 0xff): void {
    const f = this.live.get(path);
    if (f === undefined) throw new Error(`no file ${path}`);
    f.cur[offset] = (f.cur[offset] as number) ^ xor;
    f.durable = Buffer.from(f.cur.subarray(0, f.len));
  }
}

function replay(f: Inode, op: Op): void {
  if (op.kind === "write" && op.bytes !== null) applyWrite(f, op.pos, op.bytes);
  else applyTruncate(f, op.len);
}

function applyWrite(f: Inode, pos: number, bytes: Buffer): void {
  const end = pos + bytes.length;
  if (end > f.cur.length) {
    const nb = Buffer.alloc(Math.max(end, f.cur.length * 2));
    f.cur.copy(nb, 0, 0, f.len);
    f.cur = nb;
  }
  if (pos > f.len) f.cur.fill(0, f.len, pos);
  bytes.copy(f.cur, pos);
  if (end > f.len) f.len = end;
}

function applyTruncate(f: Inode, len: number): void {
  if (len < f.len) {
    f.len = len;
  } else if (len > f.len) {
    applyWrite(f, f.len, Buffer.alloc(len - f.len));
  }
}
