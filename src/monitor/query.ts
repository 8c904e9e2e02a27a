// Query-string decoding with nats-server's error texts; a bad value is a 400, not a default.

import { parseGoBool } from "./format.js";

export class BadRequest extends Error {
  readonly code = "BAD_REQUEST";
}

export type Query = URLSearchParams;

export function boolParam(q: Query, name: string, dflt = false): boolean {
  const v = q.get(name);
  if (v === null || v === "") return dflt;
  const b = parseGoBool(v);
  if (b === null) throw new BadRequest(`Error decoding boolean for '${name}': strconv.ParseBool: parsing "${v}": invalid syntax`);
  return b;
}

export function intParam(q: Query, name: string, dflt: number): number {
  const v = q.get(name);
  if (v === null || v === "") return dflt;
  if (!/^-?\d+$/.test(v)) throw new BadRequest(`Error decoding number for '${name}': strconv.Atoi: parsing "${v}": invalid syntax`);
  return Number(v);
}

export function strParam(q: Query, name: string): string {
  return q.get(name) ?? "";
}
