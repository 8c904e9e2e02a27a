// The subjects of a sequence index (seqindex.ts): each subject interned once as a SubjRec
// with a small id (the subject column holds ids, not strings), ids reused once a subject has
// no message left, and per wildcard filter a bitmap by id of which subjects match, filled
// lazily and kept for the last few filters.
import { filterMatcher } from "../subjects.js";
import { SplitMap } from "../../subjects/splitmap.js";

const MATCH_CACHE_MAX = 16;
const MATCH_YES = 1;
const MATCH_NO = 2;

export class SubjRec {
  readonly id: number;
  readonly name: string;
  /** UTF-8 length of name; ascii: one byte per char. No encoded copy is kept: a record's
   *  subject is written char by char (as fast as copying 15 bytes), which saves a Buffer
   *  object per subject (~100 B; a stream of 100,000 subjects holds 10 MB less). */
  readonly blen: number;
  readonly ascii: boolean;
  msgs = 0;
  first = 0;
  last = 0;
  // Removing a subject's first/last message leaves these as bounds to rescan from, lazily.
  firstStale = false;
  lastStale = false;
  constructor(id: number, name: string) {
    this.id = id;
    this.name = name;
    this.blen = Buffer.byteLength(name, "utf8");
    this.ascii = this.blen === name.length;
  }

  /** The subject's UTF-8 bytes into b at p (blen bytes). */
  writeTo(b: Buffer, p: number): void {
    const s = this.name;
    if (!this.ascii) {
      b.write(s, p, this.blen, "utf8");
      return;
    }
    for (let i = 0; i < s.length; i++) b[p + i] = s.charCodeAt(i);
  }

  /** Whether b[p, p + n) holds exactly this subject's UTF-8 bytes. */
  sameAs(b: Buffer, p: number, n: number): boolean {
    if (n !== this.blen) return false;
    const s = this.name;
    if (!this.ascii) return b.toString("utf8", p, p + n) === s;
    for (let i = 0; i < n; i++) if (b[p + i] !== s.charCodeAt(i)) return false;
    return true;
  }
}

export class SubjectTable {
  /** Split past 4,096 subjects (src/subjects/splitmap.ts): no publish rehashes the whole table. */
  readonly byName = new SplitMap<SubjRec>();
  /** By id; id 0 is no subject. */
  readonly byId: (SubjRec | undefined)[] = [undefined];
  private readonly freeIds: number[] = [];
  private readonly matchCache = new Map<string, Uint8Array>();
  /** filterMatcher of the filter idMatches was last asked about. */
  private matcherFilter = "";
  private matcher: (subject: string) => boolean = filterMatcher("");

  intern(subject: string): SubjRec {
    let rec = this.byName.get(subject);
    if (rec === undefined) {
      const id = this.freeIds.pop() ?? this.byId.length;
      rec = new SubjRec(id, subject);
      this.byName.set(subject, rec);
      if (id === this.byId.length) this.byId.push(rec);
      else this.byId[id] = rec;
    }
    return rec;
  }

  /** rec has no message left: its id may be reused. */
  free(rec: SubjRec): void {
    this.byName.delete(rec.name);
    this.byId[rec.id] = undefined;
    this.freeIds.push(rec.id);
    for (const bits of this.matchCache.values()) if (rec.id < bits.length) bits[rec.id] = 0;
  }

  clear(): void {
    this.byName.clear();
    this.byId.length = 1;
    this.freeIds.length = 0;
    this.matchCache.clear();
  }

  /** Match bitmap for a wildcard filter, by subject id, filled lazily and cached. */
  matchBits(filter: string): Uint8Array {
    let bits = this.matchCache.get(filter);
    if (bits === undefined || bits.length < this.byId.length) {
      const nb = new Uint8Array(Math.max(64, this.byId.length * 2));
      if (bits !== undefined) nb.set(bits);
      else if (this.matchCache.size >= MATCH_CACHE_MAX) {
        const oldest = this.matchCache.keys().next().value;
        if (oldest !== undefined) this.matchCache.delete(oldest);
      }
      bits = nb;
      this.matchCache.set(filter, bits);
    }
    return bits;
  }

  /** Whether subject id matches filter, bits being matchBits(filter). */
  idMatches(bits: Uint8Array, filter: string, id: number): boolean {
    let b = bits[id];
    if (b === 0) {
      const rec = this.byId[id];
      if (filter !== this.matcherFilter) {
        this.matcherFilter = filter;
        this.matcher = filterMatcher(filter);
      }
      b = rec !== undefined && this.matcher(rec.name) ? MATCH_YES : MATCH_NO;
      bits[id] = b;
    }
    return b === MATCH_YES;
  }
}
