// A string-keyed map that never rehashes more than a small part of itself at once.
//
// A Map grows by rehashing every entry in one call: ~15 ms at 2^16 entries, ~100 ms at 2^19,
// while every other client waits (Go's maps grow a little on each write). Tables that one
// client can grow without bound (a stream's subjects, a sublist level under a '>' of unique
// tokens, a connection's subscriptions by sid) use this instead: one Map while small, and
// SHARDS of them once past SPLIT_AT (split once, never merged back), so each rehash is 1/64
// of the table. A big table pays a hash of the key per lookup (tens of ns).
// Iteration order is by shard, then by insertion.

/** Past this many entries a SplitMap splits into SHARDS maps. */
const SPLIT_AT = 4096;
const SHARDS = 64;

export class SplitMap<V> {
  /** The map while small. At the split its entries stay here (moving them took 2 ms warm and
   *  14 ms cold, every SplitMap's first split being cold; a walk that deletes as it goes was
   *  slower still): it never takes a new key again, so it never grows, and every new key
   *  goes to a shard. */
  private one = new Map<string, V>();
  private shards: Map<string, V>[] | null = null;
  size = 0;

  private shardFor(sh: Map<string, V>[], k: string): Map<string, V> {
    let h = k.length;
    for (let i = 0; i < k.length; i++) h = (Math.imul(h, 31) + k.charCodeAt(i)) | 0;
    return sh[(h ^ (h >>> 15)) & (SHARDS - 1)]!;
  }

  get(k: string): V | undefined {
    const sh = this.shards;
    if (sh === null) return this.one.get(k);
    if (this.one.size > 0) {
      const v = this.one.get(k);
      if (v !== undefined) return v;
    }
    return this.shardFor(sh, k).get(k);
  }

  has(k: string): boolean {
    const sh = this.shards;
    if (sh === null) return this.one.has(k);
    return (this.one.size > 0 && this.one.has(k)) || this.shardFor(sh, k).has(k);
  }

  set(k: string, v: V): void {
    const sh = this.shards;
    const one = this.one;
    if (sh === null) {
      const n = one.size;
      one.set(k, v);
      if (one.size !== n && ++this.size > SPLIT_AT) this.shards = Array.from({ length: SHARDS }, () => new Map<string, V>());
      return;
    }
    if (one.size > 0 && one.has(k)) {
      one.set(k, v); // an existing key: no growth
      return;
    }
    const m = this.shardFor(sh, k);
    const n = m.size;
    m.set(k, v);
    if (m.size !== n) this.size++;
  }

  delete(k: string): boolean {
    const sh = this.shards;
    if (sh === null || this.one.size > 0) {
      if (this.one.delete(k)) {
        this.size--;
        return true;
      }
      if (sh === null) return false;
    }
    if (!this.shardFor(sh, k).delete(k)) return false;
    this.size--;
    return true;
  }

  clear(): void {
    this.one = new Map<string, V>();
    this.shards = null;
    this.size = 0;
  }

  values(): IterableIterator<V> {
    return this.shards === null ? this.one.values() : this.allValues(this.shards);
  }

  entries(): IterableIterator<[string, V]> {
    return this.shards === null ? this.one.entries() : this.allEntries(this.shards);
  }

  private *allValues(shards: Map<string, V>[]): IterableIterator<V> {
    yield* this.one.values();
    for (const m of shards) yield* m.values();
  }

  private *allEntries(shards: Map<string, V>[]): IterableIterator<[string, V]> {
    yield* this.one.entries();
    for (const m of shards) yield* m.entries();
  }
}
