// The determinism seam for randomness: Raft election timeouts, jittered backoffs and ids that
// a simulator must be able to replay take a Random, never Math.random.

export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
}

export const systemRandom: Random = {
  next: Math.random,
  int(n: number): number {
    return Math.floor(Math.random() * n);
  },
};

/** A seeded generator (mulberry32): the same seed gives the same sequence on every run. */
export class SeededRandom implements Random {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
}
