// The same $JS.API requests against nats-server and tsnats; JSON replies compared after
// normalising times and versions. Fields newer than the reference nats-server are allowed
// on our side (we implement 2.11); every field nats-server sends must match. Error replies
// are compared by code and err_code (description wording moves between releases).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { headers as mkHeaders, type NatsConnection, type Msg } from "@nats-io/transport-node";
import { covers as coversWith, haveNatsServer as haveNats, normTimes as norm, startJsPair, type JsPair } from "../helpers/interop-js.js";

let pair: JsPair | null = null;
let ncRef: NatsConnection;
let ncOurs: NatsConnection;

before(async () => {
  if (!haveNats) return;
  pair = await startJsPair("tsnats-interop-js-");
  ({ ncRef, ncOurs } = pair);
});

after(async () => {
  await pair?.close();
});

function covers(got: unknown, refv: unknown, path: string, skip: Set<string>): void {
  coversWith(got, refv, path, { skip });
}

interface Reply {
  status: number;
  description: string;
  headers: Record<string, string>;
  body: string;
}

async function req(nc: NatsConnection, subject: string, body: unknown, hdr?: Record<string, string>): Promise<Reply | null> {
  const data = typeof body === "string" ? body : JSON.stringify(body);
  const opts: { timeout: number; headers?: ReturnType<typeof mkHeaders> } = { timeout: 1500 };
  if (hdr) {
    const h = mkHeaders();
    for (const [k, v] of Object.entries(hdr)) h.set(k, v);
    opts.headers = h;
  }
  let m: Msg;
  try {
    m = await nc.request(subject, data, opts);
  } catch {
    return null;
  }
  const headers: Record<string, string> = {};
  if (m.headers) for (const [k, v] of m.headers) headers[k] = v[v.length - 1] ?? "";
  return { status: m.headers?.code ?? 0, description: m.headers?.description ?? "", headers, body: m.string() };
}

// Fields whose values legitimately differ: server-specific or newer than the reference.
const SKIP = new Set(["created", "ts", "cluster", "leader", "api", "total_api_calls", "id", "server_id"]);

async function same(subject: string, body: unknown = "", hdr?: Record<string, string>): Promise<void> {
  const a = await req(ncRef, subject, body, hdr);
  const b = await req(ncOurs, subject, body, hdr);
  if (a === null) {
    assert.equal(b, null, `${subject}: nats-server did not answer, tsnats did: ${b?.body}`);
    return;
  }
  assert.ok(b !== null, `${subject}: tsnats did not answer (nats-server: ${a.body})`);
  assert.equal(b.status, a.status, `${subject} status`);
  assert.equal(b.description.toLowerCase(), a.description.toLowerCase(), `${subject} status text`);
  if (a.body.startsWith("{")) {
    covers(norm(JSON.parse(b.body)), norm(JSON.parse(a.body)), subject, SKIP);
  } else {
    assert.equal(b.body, a.body, `${subject} body`);
  }
}

const t = haveNats ? test : test.skip;

void t("stream create / info / names / list / update / delete replies match", async () => {
  await same("$JS.API.STREAM.CREATE.S", { name: "S", subjects: ["s.>"], max_msgs_per_subject: 5, allow_direct: true });
  await same("$JS.API.STREAM.CREATE.S", { name: "S", subjects: ["s.>"], max_msgs_per_subject: 5, allow_direct: true });
  await same("$JS.API.STREAM.CREATE.S", { name: "S", subjects: ["other"] });
  await same("$JS.API.STREAM.CREATE.T", { name: "T", subjects: ["s.a"] });
  await same("$JS.API.STREAM.CREATE.T", { name: "T", num_replicas: 3 });
  await same("$JS.API.STREAM.CREATE.T", "{bad");
  await same("$JS.API.STREAM.CREATE.T", { name: "U" });
  await same("$JS.API.STREAM.CREATE.T", { name: "T", subjects: ["t.*", "t.a"] });
  await same("$JS.API.STREAM.CREATE.T", { name: "T", max_age: 1000 });
  await same("$JS.API.STREAM.CREATE.T", { name: "T", deny_purge: true, allow_rollup_hdrs: true });
  await same("$JS.API.STREAM.CREATE.T", { name: "T", mirror: { name: "S" }, subjects: ["x"] });
  await same("$JS.API.STREAM.CREATE.T", { name: "T", sealed: true });
  await same("$JS.API.STREAM.CREATE.T", { name: "T", unknown_field: 1, storage: "memory", max_msgs: 7 });
  await same("$JS.API.STREAM.CREATE.a.b", { name: "a.b" });
  await same("$JS.API.STREAM.INFO.S");
  await same("$JS.API.STREAM.INFO.NOPE");
  await same("$JS.API.STREAM.NAMES");
  await same("$JS.API.STREAM.NAMES", { subject: "s.x" });
  await same("$JS.API.STREAM.NAMES", { subject: "nothing" });
  await same("$JS.API.STREAM.LIST");
  await same("$JS.API.STREAM.UPDATE.S", { name: "S", subjects: ["s.>"], storage: "memory" });
  await same("$JS.API.STREAM.UPDATE.S", { name: "S", subjects: ["s.>"], retention: "workqueue" });
  await same("$JS.API.STREAM.UPDATE.S", { name: "S", subjects: ["s.>", "z"], max_msgs_per_subject: 5, allow_direct: true });
  await same("$JS.API.STREAM.UPDATE.NOPE", { name: "NOPE" });
  await same("$JS.API.STREAM.DELETE.T");
  await same("$JS.API.STREAM.DELETE.NOPE");
});

void t("publish acks, expected headers, msg get/delete, purge and direct get replies match", async () => {
  const pub = async (subj: string, hdr?: Record<string, string>): Promise<void> => {
    const a = await req(ncRef, subj, "payload", hdr);
    const b = await req(ncOurs, subj, "payload", hdr);
    assert.ok(a !== null && b !== null, subj);
    // nats-server 2.9 writes `{"stream":"S", "seq":1}`; compare as JSON.
    covers(JSON.parse(b.body), JSON.parse(a.body), `pub ${subj}`, new Set());
  };
  await pub("s.a", { "Nats-Msg-Id": "1" });
  await pub("s.a", { "Nats-Msg-Id": "1" });
  await pub("s.b", { "Nats-Expected-Last-Sequence": "1" });
  await pub("s.b", { "Nats-Expected-Last-Sequence": "1" });
  await pub("s.b", { "Nats-Expected-Stream": "X" });
  await pub("s.c", { "Nats-Expected-Last-Subject-Sequence": "0" });
  await pub("s.c", { "Nats-Expected-Last-Subject-Sequence": "0" });
  await pub("s.c", { "Nats-Expected-Last-Msg-Id": "nope" });
  await pub("s.c", { "Nats-Rollup": "sub" });
  for (let i = 0; i < 7; i++) await pub("s.many");
  await same("$JS.API.STREAM.INFO.S", { subjects_filter: ">" });
  await same("$JS.API.STREAM.MSG.GET.S", { seq: 1 });
  await same("$JS.API.STREAM.MSG.GET.S", { last_by_subj: "s.b" });
  await same("$JS.API.STREAM.MSG.GET.S", { seq: 1, next_by_subj: "s.c" });
  await same("$JS.API.STREAM.MSG.GET.S", { seq: 999 });
  await same("$JS.API.STREAM.MSG.GET.S", "");
  await same("$JS.API.STREAM.MSG.GET.S", { seq: 1, last_by_subj: "s.a" });
  await same("$JS.API.DIRECT.GET.S", { seq: 2 });
  await same("$JS.API.DIRECT.GET.S", { seq: 999 });
  await same("$JS.API.DIRECT.GET.S", "");
  await same("$JS.API.DIRECT.GET.S", "{x");
  await same("$JS.API.DIRECT.GET.S", { seq: 1, last_by_subj: "s.a" });
  await same("$JS.API.DIRECT.GET.S.s.c", "");
  await same("$JS.API.STREAM.MSG.DELETE.S", { seq: 1 });
  await same("$JS.API.STREAM.MSG.DELETE.S", { seq: 999 });
  await same("$JS.API.STREAM.INFO.S", { deleted_details: true });
  await same("$JS.API.STREAM.PURGE.S", { seq: 2, keep: 1 });
  await same("$JS.API.STREAM.PURGE.S", { filter: "s.many", keep: 2 });
  await same("$JS.API.STREAM.PURGE.S", { seq: 3 });
  await same("$JS.API.STREAM.PURGE.S");
  await same("$JS.API.STREAM.INFO.S");
  await same("$JS.API.STREAM.PURGE.NOPE");
});
