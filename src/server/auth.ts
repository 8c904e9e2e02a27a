// Client authentication: user/password (plain or bcrypt), token, a users list whose entries
// are user/password or nkey users. Accounts come later; this returns the authenticated user
// name (an nkey user's name is its public key), and permissionsOf() the permissions of a
// users-list entry (src/server/permissions.ts).

import { randomBytes } from "node:crypto";
import bcrypt from "bcryptjs";
import { fromPublic } from "@nats-io/nkeys";
import type { AuthorizationOptions, UserEntry } from "./options.js";
import type { Permissions } from "./permissions.js";

export interface ConnectCredentials {
  user?: unknown;
  pass?: unknown;
  auth_token?: unknown;
  nkey?: unknown;
  sig?: unknown;
}

/** nats-server nonceRawLen: 11 random bytes, 15 characters once base64 (raw URL) encoded. */
const NONCE_RAW_BYTES = 11;
const ED25519_SIG_BYTES = 64;

export function authRequired(a: AuthorizationOptions): boolean {
  return a.user !== "" || a.token !== "" || a.users.length > 0;
}

function isNkeyUser(u: UserEntry): boolean {
  return u.nkey !== undefined && u.nkey !== "";
}

/** INFO carries a nonce (a challenge for nkey users to sign) when any are configured. */
export function nonceRequired(a: AuthorizationOptions): boolean {
  return a.users.some(isNkeyUser);
}

export function newNonce(): string {
  return randomBytes(NONCE_RAW_BYTES).toString("base64url");
}

/** A public user nkey ("U...", with a valid checksum): what nats-server accepts in config. */
export function isValidPublicUserKey(k: string): boolean {
  if (k.charCodeAt(0) !== 85) return false;
  try {
    fromPublic(k);
    return true;
  } catch {
    return false;
  }
}

/** Whether sig (base64 raw URL, or standard base64 as nats-server also accepts) is nkey's
 *  signature of the nonce. */
export function nkeySignatureValid(nkey: string, nonce: string, sig: string): boolean {
  if (nonce === "" || sig === "") return false;
  // Node's base64 decoder takes both alphabets, padded or not.
  const sigBytes = Buffer.from(sig, "base64");
  if (sigBytes.length !== ED25519_SIG_BYTES) return false;
  try {
    return fromPublic(nkey).verify(Buffer.from(nonce, "latin1"), sigBytes);
  } catch {
    return false;
  }
}

function passwordMatches(stored: string, given: string): boolean {
  if (stored.startsWith("$2")) {
    try {
      return bcrypt.compareSync(given, stored);
    } catch {
      return false;
    }
  }
  return stored === given;
}

/** Returns the user name ("" for token auth, the nkey for nkey users) on success, or null.
 *  nonce: the one this client's INFO carried ("" when none was sent). The order is
 *  nats-server's: an nkey in CONNECT is looked up among the nkey users when there are any;
 *  otherwise the password users (and no_auth_user) decide. */
export function authenticate(a: AuthorizationOptions, c: ConnectCredentials, noAuthUser: string, nonce: string): string | null {
  const user = typeof c.user === "string" ? c.user : "";
  const pass = typeof c.pass === "string" ? c.pass : "";
  const token = typeof c.auth_token === "string" ? c.auth_token : "";
  if (a.users.length > 0) {
    const nkey = typeof c.nkey === "string" ? c.nkey : "";
    if (nkey !== "" && a.users.some(isNkeyUser)) {
      const entry = a.users.find((u) => u.nkey === nkey);
      if (entry === undefined) return null;
      return nkeySignatureValid(nkey, nonce, typeof c.sig === "string" ? c.sig : "") ? nkey : null;
    }
    if (user === "" && pass === "" && token === "" && noAuthUser !== "") {
      return noAuthUserEntry(a, noAuthUser) !== null ? noAuthUser : null;
    }
    for (const u of a.users) {
      if (!isNkeyUser(u) && u.user === user && passwordMatches(u.password, pass)) return user;
    }
    return null;
  }
  if (a.token !== "") return passwordMatches(a.token, token) ? "" : null;
  if (a.user !== "") {
    return user === a.user && passwordMatches(a.password, pass) ? user : null;
  }
  return "";
}

/** The password user no_auth_user names, if any (nats-server looks it up among those only). */
export function noAuthUserEntry(a: AuthorizationOptions, noAuthUser: string): UserEntry | null {
  if (noAuthUser === "") return null;
  return a.users.find((u) => !isNkeyUser(u) && u.user === noAuthUser) ?? null;
}

/** Whether a client authenticated as `user` (by its nkey when `byNkey`) still is one under
 *  `a` (config reload). */
export function userStillExists(a: AuthorizationOptions, user: string, byNkey: boolean): boolean {
  return a.users.some((u) => (byNkey ? u.nkey === user : !isNkeyUser(u) && u.user === user));
}

/** allowed_connection_types: may `user` (an nkey when byNkey) connect over `type`
 *  ("STANDARD" for the client port, "WEBSOCKET")? Users without the list may use any. */
export function connectionTypeAllowed(a: AuthorizationOptions, user: string, type: string): boolean {
  for (const u of a.users) {
    if (isNkeyUser(u) ? u.nkey !== user : u.user !== user) continue;
    return u.connectionTypes === undefined || u.connectionTypes.length === 0 || u.connectionTypes.includes(type);
  }
  return true;
}

/** The permissions of an authenticated user: only users-list entries have any (nats-server
 *  applies none to the single user/password or token forms). */
export function permissionsOf(a: AuthorizationOptions, user: string): Permissions | null {
  if (a.users.length === 0) return null;
  for (const u of a.users) if (isNkeyUser(u) ? u.nkey === user : u.user === user) return u.permissions;
  return null;
}
