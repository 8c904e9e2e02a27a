// Random names for things the server invents: ephemeral consumer names, snapshot and
// restore subjects. Letters and digits only, so they are valid subject tokens and paths.
import { randomBytes } from "node:crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

export function randomName(length: number): string {
  const b = randomBytes(length);
  let s = "";
  for (let i = 0; i < length; i++) s += ALPHABET[b[i]! % ALPHABET.length];
  return s;
}
