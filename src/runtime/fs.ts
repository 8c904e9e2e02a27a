// The determinism seam for disks. The file store only talks to this interface, so tests can
// swap in a simulated disk (test/helpers/simfs.ts) that loses unsynced writes on a "crash".
// Everything is synchronous except fsync: a write lands in the page cache in microseconds,
// while fsync can take milliseconds and must not stall the event loop (group commit relies
// on publishes arriving while an fsync is in flight).
import * as nfs from "node:fs";
import { join } from "node:path";

export interface FsStat {
  size: number;
  isDir: boolean;
}

export interface Fs {
  mkdirp(path: string): void;
  /** Names (not paths) in a directory; [] if it does not exist. */
  readdir(path: string): string[];
  stat(path: string): FsStat | null;
  /** "r" read only; "rw" read/write, created if missing, never truncated. */
  open(path: string, mode: "r" | "rw"): number;
  close(fd: number): void;
  fsize(fd: number): number;
  read(fd: number, buf: Buffer, off: number, len: number, pos: number): number;
  /** Writes all len bytes at pos. */
  write(fd: number, buf: Buffer, off: number, len: number, pos: number): void;
  truncate(fd: number, len: number): void;
  fsync(fd: number, cb: (err: Error | null) => void): void;
  fsyncSync(fd: number): void;
  /** Make renames, creations and unlinks inside dir durable. */
  fsyncDir(path: string, cb: (err: Error | null) => void): void;
  fsyncDirSync(path: string): void;
  rename(from: string, to: string): void;
  unlink(path: string): void;
  /** unlink off the event loop (freeing a big file's extents can take milliseconds); no
   *  error if missing. Optional: callers fall back to unlink. */
  unlinkAsync?(path: string, cb: (err: Error | null) => void): void;
  /** Remove a directory tree; no error if missing. */
  rmrf(path: string): void;
  readFile(path: string): Buffer | null;
}

/** Whole-file crash-safe replace on any Fs: temp file, fsync, rename, fsync the directory. */
export function writeFileAtomicSync(fs: Fs, dir: string, name: string, data: Buffer): void {
  const tmp = join(dir, `.${name}.tmp`);
  fs.unlink(tmp);
  const fd = fs.open(tmp, "rw");
  try {
    fs.truncate(fd, 0);
    fs.write(fd, data, 0, data.length, 0);
    fs.fsyncSync(fd);
  } finally {
    fs.close(fd);
  }
  fs.rename(tmp, join(dir, name));
  fs.fsyncDirSync(dir);
}

function isNoEnt(e: unknown): boolean {
  return typeof e === "object" && e !== null && (e as { code?: string }).code === "ENOENT";
}

export class NodeFs implements Fs {
  mkdirp(path: string): void {
    nfs.mkdirSync(path, { recursive: true });
  }
  readdir(path: string): string[] {
    try {
      return nfs.readdirSync(path);
    } catch (e) {
      if (isNoEnt(e)) return [];
      throw e;
    }
  }
  stat(path: string): FsStat | null {
    try {
      const s = nfs.statSync(path);
      return { size: s.size, isDir: s.isDirectory() };
    } catch (e) {
      if (isNoEnt(e)) return null;
      throw e;
    }
  }
  open(path: string, mode: "r" | "rw"): number {
    if (mode === "r") return nfs.openSync(path, "r");
    return nfs.openSync(path, nfs.constants.O_RDWR | nfs.constants.O_CREAT, 0o644);
  }
  close(fd: number): void {
    nfs.closeSync(fd);
  }
  fsize(fd: number): number {
    return nfs.fstatSync(fd).size;
  }
  read(fd: number, buf: Buffer, off: number, len: number, pos: number): number {
    let got = 0;
    while (got < len) {
      const n = nfs.readSync(fd, buf, off + got, len - got, pos + got);
      if (n === 0) break;
      got += n;
    }
    return got;
  }
  write(fd: number, buf: Buffer, off: number, len: number, pos: number): void {
    let done = 0;
    while (done < len) done += nfs.writeSync(fd, buf, off + done, len - done, pos + done);
  }
  truncate(fd: number, len: number): void {
    nfs.ftruncateSync(fd, len);
  }
  fsync(fd: number, cb: (err: Error | null) => void): void {
    nfs.fdatasync(fd, cb);
  }
  fsyncSync(fd: number): void {
    nfs.fdatasyncSync(fd);
  }
  fsyncDir(path: string, cb: (err: Error | null) => void): void {
    nfs.open(path, "r", (err, fd) => {
      if (err) return cb(err);
      nfs.fsync(fd, (e) => nfs.close(fd, () => cb(e)));
    });
  }
  fsyncDirSync(path: string): void {
    const fd = nfs.openSync(path, "r");
    try {
      nfs.fsyncSync(fd);
    } finally {
      nfs.closeSync(fd);
    }
  }
  rename(from: string, to: string): void {
    nfs.renameSync(from, to);
  }
  unlink(path: string): void {
    try {
      nfs.unlinkSync(path);
    } catch (e) {
      if (!isNoEnt(e)) throw e;
    }
  }
  unlinkAsync(path: string, cb: (err: Error | null) => void): void {
    nfs.unlink(path, (e) => cb(e === null || isNoEnt(e) ? null : e));
  }
  rmrf(path: string): void {
    nfs.rmSync(path, { recursive: true, force: true });
  }
  readFile(path: string): Buffer | null {
    try {
      return nfs.readFileSync(path);
    } catch (e) {
      if (isNoEnt(e)) return null;
      throw e;
    }
  }
}
