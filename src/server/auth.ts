// Client authentication: user/password (plain or bcrypt), token, a users list.
// Accounts and nkeys come later; this returns the authenticated user name, and
// permissionsOf() the permissions of a users-list entry (src/server/permissions.ts).

import bcrypt from "bcryptjs";
import type { AuthorizationOptions } from "./options.js";
import type { Permissions } from "./permissions.js";

export interface ConnectCredentials {
  user?: unknown;
  pass?: unknown;
  auth_token?: unknown;
}

export function authRequired(a: AuthorizationOptions): boolean {
  return a.user !== "" || a.token !== "" || a.users.length > 0;
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

/** Returns the user name ("" for token auth) on success, or null. */
export function authenticate(a: AuthorizationOptions, c: ConnectCredentials, noAuthUser: string): string | null {
  const user = typeof c.user === "string" ? c.user : "";
  const pass = typeof c.pass === "string" ? c.pass : "";
  const token = typeof c.auth_token === "string" ? c.auth_token : "";
  if (a.users.length > 0) {
    let name = user;
    if (name === "" && token === "" && noAuthUser !== "") {
      return a.users.some((u) => u.user === noAuthUser) ? noAuthUser : null;
    }
    for (const u of a.users) {
      if (u.user === name && passwordMatches(u.password, pass)) return name;
    }
    name = "";
    return null;
  }
  if (a.token !== "") return passwordMatches(a.token, token) ? "" : null;
  if (a.user !== "") {
    return user === a.user && passwordMatches(a.password, pass) ? user : null;
  }
  return "";
}

/** The permissions of an authenticated user: only users-list entries have any (nats-server
 *  applies none to the single user/password or token forms). */
export function permissionsOf(a: AuthorizationOptions, user: string): Permissions | null {
  if (a.users.length === 0) return null;
  for (const u of a.users) if (u.user === user) return u.permissions;
  return null;
}
