// `permissions { publish, subscribe, allow_responses }` blocks of the config file, read like
// nats-server's parseUserPermissions / parseVariablePermissions / parseAllowResponses
// (opts.go), with its error texts.

import { isValidSubject } from "../../subjects/subject.js";
import {
  DEFAULT_RESPONSE_EXPIRES_MS,
  DEFAULT_RESPONSE_MAX_MSGS,
  type Permissions,
  type ResponsePermission,
  type SubjectPermission,
} from "../permissions.js";
import { parseDurationMs } from "./duration.js";
import { type ConfigMap, type ConfigValue, wasUsedAsVariable } from "./parser.js";

/** What the mapping context (to-options.ts) offers for reporting. */
export interface PermCtx {
  error(container: object, key: string | number, reason: string): void;
}

function isMap(v: ConfigValue | undefined): v is ConfigMap {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function goType(v: ConfigValue | undefined): string {
  if (Array.isArray(v)) return "[]interface {}";
  if (isMap(v)) return "map[string]interface {}";
  if (typeof v === "number") return Number.isInteger(v) ? "int64" : "float64";
  if (typeof v === "boolean") return "bool";
  return typeof v;
}

/** permissions block at parent[key]; undefined after recording an error. */
export function permissionsBlock(ctx: PermCtx, parent: ConfigMap, key: string): Permissions | undefined {
  const m = parent[key];
  if (!isMap(m)) {
    ctx.error(parent, key, `Expected permissions to be a map/struct, got ${JSON.stringify(m)}`);
    return undefined;
  }
  const p: Permissions = { publish: null, subscribe: null, response: null };
  let ok = true;
  for (const k of Object.keys(m)) {
    switch (k.toLowerCase()) {
      case "pub":
      case "publish":
      case "import": {
        const sp = subjectPermission(ctx, m, k, false);
        if (sp === undefined) ok = false;
        else p.publish = sp;
        break;
      }
      case "sub":
      case "subscribe":
      case "export": {
        const sp = subjectPermission(ctx, m, k, true);
        if (sp === undefined) ok = false;
        else p.subscribe = sp;
        break;
      }
      case "publish_allow_responses":
      case "allow_responses": {
        const v = m[k];
        if (typeof v === "boolean") {
          if (v) p.response = { maxMsgs: DEFAULT_RESPONSE_MAX_MSGS, expiresMs: DEFAULT_RESPONSE_EXPIRES_MS };
        } else {
          const rp = allowResponses(ctx, m, k);
          if (rp === undefined) ok = false;
          else p.response = rp;
        }
        break;
      }
      default:
        if (!wasUsedAsVariable(m, k)) {
          ctx.error(m, k, `Unknown field "${k}" parsing permissions`);
          ok = false;
        }
    }
  }
  // Responses turn off the blanket publish allow: only replies (and whatever an allow list
  // names) may be published. nats-server does this while it reads the keys, in Go's map
  // order; done after all keys here so the key order does not matter.
  if (p.response !== null) {
    if (p.publish === null) p.publish = { allow: [], deny: [] };
    else if (p.publish.allow === null) p.publish.allow = [];
  }
  return ok ? p : undefined;
}

/** A map {allow, deny} (new style) or a subject / array of subjects (the allow list).
 *  null: an empty map (no permission); undefined: error recorded. */
function subjectPermission(ctx: PermCtx, parent: ConfigMap, key: string, allowQueue: boolean): SubjectPermission | null | undefined {
  const v = parent[key];
  if (!isMap(v)) {
    const list = permSubjects(ctx, parent, key, allowQueue);
    if (list === undefined) return undefined;
    return { allow: list.length > 0 ? list : null, deny: [] };
  }
  const keys = Object.keys(v);
  if (keys.length === 0) return null;
  const sp: SubjectPermission = { allow: null, deny: [] };
  let ok = true;
  for (const k of keys) {
    switch (k.toLowerCase()) {
      case "allow": {
        const list = permSubjects(ctx, v, k, allowQueue);
        if (list === undefined) ok = false;
        else sp.allow = list.length > 0 ? list : null;
        break;
      }
      case "deny": {
        const list = permSubjects(ctx, v, k, allowQueue);
        if (list === undefined) ok = false;
        else sp.deny = list;
        break;
      }
      default:
        if (!wasUsedAsVariable(v, k)) {
          ctx.error(v, k, `Unknown field name "${k}" parsing subject permissions, only 'allow' or 'deny' are permitted`);
          ok = false;
        }
    }
  }
  return ok ? sp : undefined;
}

function permSubjects(ctx: PermCtx, parent: ConfigMap, key: string, allowQueue: boolean): string[] | undefined {
  const v = parent[key];
  let list: string[];
  if (typeof v === "string") list = [v];
  else if (Array.isArray(v)) {
    list = [];
    for (let i = 0; i < v.length; i++) {
      const s = v[i];
      if (typeof s !== "string") {
        ctx.error(v, i, "Subject in permissions array cannot be cast to string");
        return undefined;
      }
      list.push(s);
    }
  } else {
    ctx.error(parent, key, `Expected subject permissions to be a subject, or array of subjects, got ${goType(v)}`);
    return undefined;
  }
  const bad = checkPermSubjects(list, allowQueue);
  if (bad !== null) {
    ctx.error(parent, key, bad);
    return undefined;
  }
  return list;
}

/** nats-server checkPermSubjectArray: the reason for the first bad entry, or null. */
export function checkPermSubjects(list: string[], allowQueue: boolean): string | null {
  for (const s of list) {
    if (isValidSubject(s)) continue;
    if (!allowQueue) return `subject "${s}" is not a valid subject`;
    const parts = s.trim().split(/\s+/).filter((x) => x !== "");
    if (parts.length !== 2) return `subject "${s}" is not a valid subject`;
    if (!isValidSubject(parts[0]!)) return `subject "${parts[0]!}" is not a valid subject`;
    if (!isValidSubject(parts[1]!)) return `queue "${parts[1]!}" is not a valid queue`;
  }
  return null;
}

function allowResponses(ctx: PermCtx, parent: ConfigMap, key: string): ResponsePermission | undefined {
  const m = parent[key];
  if (!isMap(m)) {
    ctx.error(parent, key, "error parsing response permissions, expected a boolean or a map");
    return undefined;
  }
  const rp: ResponsePermission = { maxMsgs: DEFAULT_RESPONSE_MAX_MSGS, expiresMs: DEFAULT_RESPONSE_EXPIRES_MS };
  for (const k of Object.keys(m)) {
    const v = m[k];
    switch (k.toLowerCase()) {
      case "max":
      case "max_msgs":
      case "max_messages":
      case "max_responses":
        if (typeof v !== "number" || !Number.isInteger(v)) {
          ctx.error(m, k, `error parsing response permissions, expected an integer for "${k}"`);
          return undefined;
        }
        // 0 keeps the default; a negative number means unlimited.
        if (v !== 0) rp.maxMsgs = v;
        break;
      case "expires":
      case "expiration":
      case "ttl": {
        if (typeof v !== "string") {
          ctx.error(m, k, "error parsing expires, not a duration string");
          return undefined;
        }
        let ms: number;
        try {
          ms = parseDurationMs(v);
        } catch (err) {
          ctx.error(m, k, `error parsing expires: ${(err as Error).message}`);
          return undefined;
        }
        if (ms !== 0) rp.expiresMs = ms;
        break;
      }
      default:
        if (!wasUsedAsVariable(m, k)) {
          ctx.error(m, k, `Unknown field "${k}" parsing permissions`);
          return undefined;
        }
    }
  }
  return rp;
}
