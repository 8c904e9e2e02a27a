// Client authentication: user/password (plain or bcrypt), token, a users list.
// Accounts, nkeys and permissions come later; this returns the authenticated user name.

import bcrypt from "bcryptjs";
import type { AuthorizationOptions } from "./options.js";

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
