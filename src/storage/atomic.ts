// Crash-safe small-file writes: temp file, fsync, rename, fsync the directory.
import { promises as fsp, openSync, writeSync, fsyncSync, closeSync, renameSync } from "node:fs";
import { dirname, join, basename } from "node:path";

export async function atomicWriteFile(path: string, data: string | Buffer): Promise<void> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.tmp`);
  const fh = await fsp.open(tmp, "w");
  try {
    await fh.writeFile(data);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fsp.rename(tmp, path);
  await fsyncDir(dir);
}

export function atomicWriteFileSync(path: string, data: string | Buffer): void {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.tmp`);
  const fd = openSync(tmp, "w");
  try {
    const buf = typeof data === "string" ? Buffer.from(data) : data;
    let off = 0;
    while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  fsyncDirSync(dir);
}

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export function fsyncDirSync(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
