// Encryption at rest: an Fs that encrypts every file it writes and decrypts every file it
// reads, wrapping any other Fs (NodeFs, or the simulated disk in tests). The stores above it
// see plaintext and logical offsets; nothing else in them knows about encryption.
//
// Every file starts with a HEADER_BYTES header, hidden from the caller (fsize, stat, read,
// write and truncate are shifted by it):
//
//    0  "TSNC" magic, u8 version (1), u8 cipher (1 chachapoly, 2 aes), 2 bytes zero
//    8  12-byte random nonce for the key wrap
//   20  48 bytes: the file's random 32-byte data key and 16-byte stream IV, sealed (AEAD:
//       ChaCha20-Poly1305 or AES-256-GCM) under the key-encryption key; bytes 0..8 are the
//       additional authenticated data, so the cipher byte cannot be swapped
//   68  16-byte AEAD tag
//   84  12 bytes zero (reserved)
//   96  data, XORed with a seekable keystream under the data key: ChaCha20 (block counter
//       floor(p/64), 96-bit nonce from the IV) or AES-256-CTR (counter IV + floor(p/16))
//
// The key-encryption key is HMAC-SHA256(configured key, fixed label), as nats-server derives
// its key-encryption keys with HMAC-SHA256 over the configured key (it has no salt either:
// the configured key is meant to be a high-entropy secret). A wrong key fails the AEAD tag,
// so it is an error naming the file, never garbage served.
//
// Crash safety: the header is written when a file is created (opened "rw" while shorter than
// a header) before any data, so the first fsync of the file that makes data durable makes the
// header durable too. A file shorter than a header, or whose header bytes are all zero (a
// crash before anything was synced), holds nothing acknowledged and reads as empty; opened
// "rw" it gets a fresh header. Rotation (prev_key) rewrites only the header, with the same
// data key, and fsyncs it before the file is used. A file without the magic is plaintext
// from before encryption was configured: it is converted (temp file, fsync, rename, fsync
// the directory), so a crash leaves either the old plaintext or the new encrypted file.
//
// Holes read as unspecified bytes, not zeros (the keystream XORs them): a write past the end
// or a truncate that grows a file leaves them; the stores never do either.
//
// Per-write cost: each open fd keeps one running cipher for writes and one for reads with
// their positions; sequential appends (the publish path) and sequential reads continue the
// running keystream, any other position starts a new cipher at that block.
import { createCipheriv, createDecipheriv, createHmac, randomBytes, type Cipher, type CipherGCMTypes } from "node:crypto";
import { basename, dirname, join } from "node:path";
import type { Fs, FsStat } from "../runtime/fs.js";

export type StoreCipher = "chachapoly" | "aes";

export const HEADER_BYTES = 96;
const MAGIC = Buffer.from("TSNC", "latin1");
const VERSION = 1;
const CIPHER_ID: Record<StoreCipher, number> = { chachapoly: 1, aes: 2 };
const AAD_END = 8;
const WRAP_NONCE = 8;
const SEALED = 20;
const SEALED_LEN = 48;
const TAG = 68;
const TAG_LEN = 16;
const KEK_LABEL = "tsnats jetstream key-encryption-key v1";

export interface CryptFsOptions {
  cipher: StoreCipher;
  key: string;
  /** The previous key: files it opens are re-wrapped under `key`. "" = none. */
  prevKey?: string;
}

/** What prepare() found (and did) for one file. */
export type PrepareResult = "encrypted" | "rotated" | "converted" | "empty";

interface FileKey {
  cipher: StoreCipher;
  dataKey: Buffer;
  iv: Buffer;
}

interface OpenFile {
  /** null: the file is empty and has no header (opened read only). */
  key: FileKey | null;
  wc: Cipher | null;
  wpos: number;
  rc: Cipher | null;
  rpos: number;
}

type Parsed = { kind: "empty" } | { kind: "plain" } | { kind: "enc"; key: FileKey; rotated: boolean };

export class EncryptionKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EncryptionKeyError";
  }
}

function deriveKek(key: string): Buffer {
  return createHmac("sha256", key).update(KEK_LABEL).digest();
}

// Both AEADs take a 12-byte nonce and give a 16-byte tag; the typings name only the GCM
// modes for the tag-handling overload, so chacha20-poly1305 goes through the same type.
function aeadName(c: StoreCipher): CipherGCMTypes {
  return (c === "chachapoly" ? "chacha20-poly1305" : "aes-256-gcm") as CipherGCMTypes;
}

const ZEROS = Buffer.alloc(64);

function isZero(b: Buffer, n: number): boolean {
  for (let i = 0; i < n; i++) if (b[i] !== 0) return false;
  return true;
}

/** A keystream cipher positioned at byte pos of the file's data. */
function keystreamAt(k: FileKey, pos: number): Cipher {
  let c: Cipher;
  let skip: number;
  if (k.cipher === "chachapoly") {
    const iv = Buffer.allocUnsafe(16);
    iv.writeUInt32LE(Math.floor(pos / 64) >>> 0, 0);
    k.iv.copy(iv, 4, 4, 16);
    c = createCipheriv("chacha20", k.dataKey, iv);
    skip = pos % 64;
  } else {
    // 128-bit big-endian IV + block index, mod 2^128 (as OpenSSL's CTR increments it)
    const iv = Buffer.from(k.iv);
    let add = Math.floor(pos / 16);
    let carry = 0;
    for (let i = 15; i >= 0 && (add > 0 || carry > 0); i--) {
      const s = (iv[i] as number) + (add % 256) + carry;
      iv[i] = s & 0xff;
      carry = s >> 8;
      add = Math.floor(add / 256);
    }
    c = createCipheriv("aes-256-ctr", k.dataKey, iv);
    skip = pos % 16;
  }
  if (skip > 0) c.update(ZEROS.subarray(0, skip));
  return c;
}

/** True when buf (the first bytes of a file) starts with an encryption header's magic. */
export function hasCryptMagic(buf: Buffer): boolean {
  return buf.length >= HEADER_BYTES && buf.subarray(0, MAGIC.length).equals(MAGIC);
}

export class CryptFs implements Fs {
  readonly inner: Fs;
  readonly cipher: StoreCipher;
  private readonly kek: Buffer;
  private readonly prevKek: Buffer | null;
  private readonly files = new Map<number, OpenFile>();
  /** Names are not encrypted: unlinking off the loop is the inner Fs's, when it has it. */
  readonly unlinkAsync?: (path: string, cb: (err: Error | null) => void) => void;

  constructor(inner: Fs, opts: CryptFsOptions) {
    if (opts.key === "") throw new Error("CryptFs needs a key");
    this.inner = inner;
    if (inner.unlinkAsync !== undefined) this.unlinkAsync = (path, cb) => inner.unlinkAsync!(path, cb);
    this.cipher = opts.cipher;
    this.kek = deriveKek(opts.key);
    this.prevKek = opts.prevKey !== undefined && opts.prevKey !== "" ? deriveKek(opts.prevKey) : null;
  }

  // ---------- header ----------

  private seal(k: FileKey): Buffer {
    const h = Buffer.alloc(HEADER_BYTES);
    MAGIC.copy(h, 0);
    h[4] = VERSION;
    h[5] = CIPHER_ID[k.cipher];
    const nonce = randomBytes(12);
    nonce.copy(h, WRAP_NONCE);
    const c = createCipheriv(aeadName(k.cipher), this.kek, nonce, { authTagLength: TAG_LEN });
    c.setAAD(h.subarray(0, AAD_END));
    const sealed = Buffer.concat([c.update(Buffer.concat([k.dataKey, k.iv])), c.final()]);
    sealed.copy(h, SEALED);
    c.getAuthTag().copy(h, TAG);
    return h;
  }

  private unseal(h: Buffer, kek: Buffer, cipher: StoreCipher): FileKey | null {
    try {
      const d = createDecipheriv(aeadName(cipher), kek, h.subarray(WRAP_NONCE, WRAP_NONCE + 12), { authTagLength: TAG_LEN });
      d.setAAD(h.subarray(0, AAD_END));
      d.setAuthTag(h.subarray(TAG, TAG + TAG_LEN));
      const plain = Buffer.concat([d.update(h.subarray(SEALED, SEALED + SEALED_LEN)), d.final()]);
      return { cipher, dataKey: plain.subarray(0, 32), iv: plain.subarray(32, 48) };
    } catch {
      return null;
    }
  }

  private freshKey(): FileKey {
    const iv = randomBytes(16);
    return { cipher: this.cipher, dataKey: randomBytes(32), iv };
  }

  /** Classify a file from its first bytes (up to HEADER_BYTES) and its raw size. */
  private parse(path: string, head: Buffer, rawSize: number): Parsed {
    if (rawSize === 0) return { kind: "empty" };
    if (rawSize < HEADER_BYTES) {
      // A torn header write leaves a prefix of the header (or zeros): nothing was synced.
      // Anything else this short is a small plaintext file.
      const n = Math.min(rawSize, MAGIC.length);
      if (head.subarray(0, n).equals(MAGIC.subarray(0, n)) || isZero(head, rawSize)) return { kind: "empty" };
      return { kind: "plain" };
    }
    if (!head.subarray(0, MAGIC.length).equals(MAGIC)) {
      // All zeros: the header never reached the disk, so no fsync of this file completed
      // (an fsync covers the header written before any data) and nothing in it counts.
      return isZero(head, HEADER_BYTES) ? { kind: "empty" } : { kind: "plain" };
    }
    const cid = head[5];
    const cipher: StoreCipher | null = cid === 1 ? "chachapoly" : cid === 2 ? "aes" : null;
    if (head[4] !== VERSION || cipher === null) {
      throw new EncryptionKeyError(`unsupported encryption header (version ${head[4]}, cipher ${cid}) in ${path}`);
    }
    const k = this.unseal(head, this.kek, cipher);
    if (k !== null) return { kind: "enc", key: k, rotated: false };
    if (this.prevKek !== null) {
      const pk = this.unseal(head, this.prevKek, cipher);
      if (pk !== null) return { kind: "enc", key: pk, rotated: true };
    }
    throw new EncryptionKeyError(
      `JetStream encryption key does not match ${path}` +
        (this.prevKek !== null ? " (neither key nor prev_key opens it" : " (the key does not open it") +
        ", or its header is damaged)",
    );
  }

  private readHead(fd: number): { head: Buffer; size: number } {
    const size = this.inner.fsize(fd);
    const head = Buffer.alloc(HEADER_BYTES);
    if (size > 0) this.inner.read(fd, head, 0, Math.min(size, HEADER_BYTES), 0);
    return { head, size };
  }

  /** Re-wrap a file's header under the current key (same data key), durably. */
  private rewrap(path: string, k: FileKey, fd: number | null): void {
    const h = this.seal(k);
    const own = fd === null;
    const f = fd ?? this.inner.open(path, "rw");
    try {
      this.inner.write(f, h, 0, h.length, 0);
      this.inner.fsyncSync(f);
    } finally {
      if (own) this.inner.close(f);
    }
  }

  /** Encrypt a plaintext file in place: temp file, fsync, rename, fsync the directory. */
  private convert(path: string): void {
    const plain = this.inner.readFile(path) ?? Buffer.alloc(0);
    const dir = dirname(path);
    const tmp = join(dir, `.${basename(path)}.crypt.tmp`);
    this.inner.unlink(tmp);
    const k = this.freshKey();
    const fd = this.inner.open(tmp, "rw");
    try {
      this.inner.truncate(fd, 0);
      const h = this.seal(k);
      this.inner.write(fd, h, 0, h.length, 0);
      if (plain.length > 0) {
        const enc = keystreamAt(k, 0).update(plain);
        this.inner.write(fd, enc, 0, enc.length, HEADER_BYTES);
      }
      this.inner.fsyncSync(fd);
    } finally {
      this.inner.close(fd);
    }
    this.inner.rename(tmp, path);
    this.inner.fsyncDirSync(dir);
  }

  /** What a file needs at start, without changing it: throws EncryptionKeyError when no key
   *  opens it. "rotate": opens under prev_key only; "convert": plaintext; "empty": no header
   *  (reads as empty, gets a header when opened for writing). */
  inspect(path: string): "encrypted" | "rotate" | "convert" | "empty" {
    const fd = this.inner.open(path, "r");
    try {
      const { head, size } = this.readHead(fd);
      const p = this.parse(path, head, size);
      if (p.kind === "plain") return "convert";
      if (p.kind === "enc") return p.rotated ? "rotate" : "encrypted";
      return "empty";
    } finally {
      this.inner.close(fd);
    }
  }

  /** Make a file what inspect() said it needs: encrypt a plaintext file in place, or re-wrap
   *  the header of one under prev_key (durably). */
  prepare(path: string): PrepareResult {
    const fd = this.inner.open(path, "r");
    let p: Parsed;
    try {
      const { head, size } = this.readHead(fd);
      p = this.parse(path, head, size);
    } finally {
      this.inner.close(fd);
    }
    if (p.kind === "plain") {
      this.convert(path);
      return "converted";
    }
    if (p.kind === "enc" && p.rotated) {
      this.rewrap(path, p.key, null);
      return "rotated";
    }
    return p.kind === "enc" ? "encrypted" : "empty";
  }

  // ---------- Fs ----------

  mkdirp(path: string): void {
    this.inner.mkdirp(path);
  }
  readdir(path: string): string[] {
    return this.inner.readdir(path);
  }
  stat(path: string): FsStat | null {
    const s = this.inner.stat(path);
    if (s === null || s.isDir) return s;
    if (s.size < HEADER_BYTES) return { size: 0, isDir: false };
    const fd = this.inner.open(path, "r");
    try {
      const head = Buffer.alloc(MAGIC.length);
      this.inner.read(fd, head, 0, MAGIC.length, 0);
      // without the magic: a zero header reads as empty, plaintext is converted when opened
      if (!head.equals(MAGIC)) return { size: isZero(head, MAGIC.length) ? 0 : s.size, isDir: false };
    } finally {
      this.inner.close(fd);
    }
    return { size: s.size - HEADER_BYTES, isDir: false };
  }
  open(path: string, mode: "r" | "rw"): number {
    for (let attempt = 0; ; attempt++) {
      const fd = this.inner.open(path, mode);
      let p: Parsed;
      try {
        const { head, size } = this.readHead(fd);
        p = this.parse(path, head, size);
        if (p.kind === "empty") {
          if (mode === "r") {
            this.files.set(fd, { key: null, wc: null, wpos: -1, rc: null, rpos: -1 });
            return fd;
          }
          const k = this.freshKey();
          const h = this.seal(k);
          this.inner.truncate(fd, 0);
          this.inner.write(fd, h, 0, h.length, 0);
          this.files.set(fd, { key: k, wc: null, wpos: -1, rc: null, rpos: -1 });
          return fd;
        }
        if (p.kind === "enc") {
          if (p.rotated) this.rewrap(path, p.key, mode === "rw" ? fd : null);
          this.files.set(fd, { key: p.key, wc: null, wpos: -1, rc: null, rpos: -1 });
          return fd;
        }
      } catch (e) {
        this.inner.close(fd);
        throw e;
      }
      // plaintext from before encryption was configured
      this.inner.close(fd);
      if (attempt > 0) throw new Error(`could not encrypt ${path}`);
      this.convert(path);
    }
  }
  private f(fd: number): OpenFile {
    const f = this.files.get(fd);
    if (f === undefined) throw Object.assign(new Error("EBADF: not opened through CryptFs"), { code: "EBADF" });
    return f;
  }
  close(fd: number): void {
    this.files.delete(fd);
    this.inner.close(fd);
  }
  fsize(fd: number): number {
    const f = this.f(fd);
    if (f.key === null) return 0;
    return Math.max(0, this.inner.fsize(fd) - HEADER_BYTES);
  }
  read(fd: number, buf: Buffer, off: number, len: number, pos: number): number {
    const f = this.f(fd);
    if (f.key === null || len === 0) return 0;
    const got = this.inner.read(fd, buf, off, len, pos + HEADER_BYTES);
    if (got === 0) return 0;
    if (f.rc === null || f.rpos !== pos) f.rc = keystreamAt(f.key, pos);
    const plain = f.rc.update(buf.subarray(off, off + got));
    plain.copy(buf, off);
    f.rpos = pos + got;
    return got;
  }
  write(fd: number, buf: Buffer, off: number, len: number, pos: number): void {
    const f = this.f(fd);
    if (f.key === null) throw Object.assign(new Error("EBADF: file opened read only"), { code: "EBADF" });
    if (len === 0) return;
    if (f.wc === null || f.wpos !== pos) f.wc = keystreamAt(f.key, pos);
    const enc = f.wc.update(buf.subarray(off, off + len));
    f.wpos = pos + len;
    this.inner.write(fd, enc, 0, len, pos + HEADER_BYTES);
  }
  truncate(fd: number, len: number): void {
    const f = this.f(fd);
    if (f.key === null) throw Object.assign(new Error("EBADF: file opened read only"), { code: "EBADF" });
    this.inner.truncate(fd, len + HEADER_BYTES);
  }
  fsync(fd: number, cb: (err: Error | null) => void): void {
    this.inner.fsync(fd, cb);
  }
  fsyncSync(fd: number): void {
    this.inner.fsyncSync(fd);
  }
  fsyncDir(path: string, cb: (err: Error | null) => void): void {
    this.inner.fsyncDir(path, cb);
  }
  fsyncDirSync(path: string): void {
    this.inner.fsyncDirSync(path);
  }
  rename(from: string, to: string): void {
    this.inner.rename(from, to);
  }
  unlink(path: string): void {
    this.inner.unlink(path);
  }
  rmrf(path: string): void {
    this.inner.rmrf(path);
  }
  readFile(path: string): Buffer | null {
    const raw = this.inner.readFile(path);
    if (raw === null) return null;
    const p = this.parse(path, raw.subarray(0, HEADER_BYTES), raw.length);
    if (p.kind === "empty") return Buffer.alloc(0);
    if (p.kind === "plain") {
      this.convert(path);
      return raw;
    }
    if (p.rotated) this.rewrap(path, p.key, null);
    return keystreamAt(p.key, 0).update(raw.subarray(HEADER_BYTES));
  }
}

/** Every regular file under dir, depth first (paths); yields after each directory. */
function* walk(fs: Fs, dir: string, out: string[]): Generator<void, void, void> {
  for (const name of fs.readdir(dir).sort()) {
    const p = join(dir, name);
    const s = fs.stat(p);
    if (s === null) continue;
    if (s.isDir) yield* walk(fs, p, out);
    else out.push(p);
  }
  yield;
}

/** Leftovers of an interrupted replace: the stores delete them, nothing reads them. */
function isTemp(path: string): boolean {
  return path.endsWith(".tmp") || path.endsWith(".new");
}

export interface StoreCheck {
  files: number;
  rotated: number;
  converted: number;
}

/** The start-up check of a JetStream store directory, before anything is opened.
 *  With crypt: every file must open under key (or prev_key, then it is re-wrapped under key),
 *  plaintext files are encrypted; a file no key opens throws EncryptionKeyError naming it.
 *  Without: an encrypted file throws, so ciphertext is never served as data. */
export function checkStoreEncryption(inner: Fs, dir: string, crypt: CryptFs | null): StoreCheck {
  const it = checkSteps(inner, dir, crypt);
  for (;;) {
    const n = it.next();
    if (n.done === true) return n.value;
  }
}

/** checkStoreEncryption with `breathe` awaited between directories and files (a store of
 *  thousands of streams is thousands of files to look at). */
export async function checkStoreEncryptionPaced(inner: Fs, dir: string, crypt: CryptFs | null, breathe: () => Promise<void>): Promise<StoreCheck> {
  const it = checkSteps(inner, dir, crypt);
  for (;;) {
    const n = it.next();
    if (n.done === true) return n.value;
    await breathe();
  }
}

function* checkSteps(inner: Fs, dir: string, crypt: CryptFs | null): Generator<void, StoreCheck, void> {
  const paths: string[] = [];
  yield* walk(inner, dir, paths);
  const r: StoreCheck = { files: 0, rotated: 0, converted: 0 };
  const todo: string[] = [];
  // First look at every file, changing none: a wrong key leaves the store as it was.
  for (const p of paths) {
    if (isTemp(p)) continue;
    r.files++;
    if (crypt === null) {
      const fd = inner.open(p, "r");
      try {
        const head = Buffer.alloc(HEADER_BYTES);
        const n = inner.read(fd, head, 0, HEADER_BYTES, 0);
        if (hasCryptMagic(head.subarray(0, n))) {
          throw new EncryptionKeyError(`JetStream store is encrypted (${p}) but no jetstream encryption key is configured`);
        }
      } finally {
        inner.close(fd);
      }
      yield;
      continue;
    }
    const need = crypt.inspect(p);
    if (need === "rotate" || need === "convert") todo.push(p);
    yield;
  }
  for (const p of todo) {
    const res = (crypt as CryptFs).prepare(p);
    if (res === "rotated") r.rotated++;
    else if (res === "converted") r.converted++;
    yield;
  }
  return r;
}
