// The body side of the $JS.API router (api.ts): JSON request bodies decoded by Go's
// encoding/json rules (an invalid body is 10025 with Go's message), the error a handler
// throws (Fail), a response body already serialized (RawBody), and each request's response
// type and the extra fields nats-server sends next to an error.

import { jsErr, type ApiError, type JsErrName } from "../contracts/errors.js";
import { ApiType } from "../contracts/wire.js";
import { goInt, goJsonType, parseApiJson, type GoIntKind } from "../contracts/json.js";

export type Body = Record<string, unknown>;

export class Fail extends Error {
  constructor(readonly apiError: ApiError) {
    super(apiError.description);
  }
}

export function fail(name: JsErrName, args?: Record<string, string | number>): never {
  throw new Fail(jsErr(name, args));
}

/** JSON body as an object; empty bodies decode to null. Throws 10025 on bad JSON. */
export function parseBody(payload: Buffer, emptyIsError: boolean): Body | null {
  const text = payload.toString("utf8").trim();
  if (text.length === 0) {
    if (emptyIsError) fail("JSInvalidJSONErr", { err: "unexpected end of JSON input" });
    return null;
  }
  let v: unknown;
  try {
    v = parseApiJson(text);
  } catch (e) {
    fail("JSInvalidJSONErr", { err: (e as Error).message });
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    if (v === null) return null;
    fail("JSInvalidJSONErr", { err: `json: cannot unmarshal ${goJsonType(v)} into Go value` });
  }
  return v as Body;
}

/** An integer field of the request struct `struct`, by encoding/json's rules for `kind`. */
export function optInt(b: Body | null, k: string, kind: GoIntKind, struct: string): number {
  return goInt(b?.[k], kind, `${struct}.${k}`, (err) => fail("JSInvalidJSONErr", { err }));
}

export function optStr(b: Body | null, k: string): string {
  const v = b?.[k];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") fail("JSInvalidJSONErr", { err: `json: cannot unmarshal ${goJsonType(v)} into Go struct field .${k}` });
  return v;
}

export function optBool(b: Body | null, k: string): boolean {
  const v = b?.[k];
  if (v === undefined || v === null) return false;
  if (typeof v !== "boolean") fail("JSInvalidJSONErr", { err: `json: cannot unmarshal ${goJsonType(v)} into Go struct field .${k}` });
  return v;
}

/** A response body already serialized (a JSON object's text, without the "type" field that
 *  dispatch puts first). */
export class RawBody {
  constructor(readonly json: string) {}
}

/** Go's non-omitempty fields that nats-server still sends next to an error. */
export const ERROR_EXTRAS: Record<string, Record<string, unknown>> = {
  [ApiType.StreamPurge]: { purged: 0 },
  [ApiType.StreamInfo]: { total: 0, offset: 0, limit: 0 },
  [ApiType.StreamNames]: { total: 0, offset: 0, limit: 0, streams: null },
  [ApiType.StreamList]: { total: 0, offset: 0, limit: 0, streams: null },
};

export function responseType(t: string[]): string {
  const [a, b, c] = t;
  if (a === "INFO") return ApiType.AccountInfo;
  if (a === "SERVER") return ApiType.MetaServerRemove;
  switch (b ?? "") {
    case "CREATE":
      return ApiType.StreamCreate;
    case "UPDATE":
      return ApiType.StreamUpdate;
    case "DELETE":
      return ApiType.StreamDelete;
    case "INFO":
      return ApiType.StreamInfo;
    case "NAMES":
      return ApiType.StreamNames;
    case "LIST":
      return ApiType.StreamList;
    case "PURGE":
      return ApiType.StreamPurge;
    case "MSG":
      return c === "DELETE" ? ApiType.StreamMsgDelete : ApiType.StreamMsgGet;
    case "SNAPSHOT":
      return ApiType.StreamSnapshot;
    case "RESTORE":
      return ApiType.StreamRestore;
    case "LEADER":
      return ApiType.StreamLeaderStepdown;
    case "PEER":
      return ApiType.StreamRemovePeer;
    default:
      return ApiType.ApiError;
  }
}
