// The JetStream service: owns the streams of the (single, $G) account, the on-disk layout
// <store_dir>/jetstream/$G/streams/<name>/{meta.json, msgs/, obs/}, recovery on start, the
// account usage and limits, and the $JS.API subscriptions (routing is in api.ts).

import { join } from "node:path";
import { statfsSync } from "node:fs";
import { totalmem } from "node:os";
import type { JetStreamDeps } from "../contracts/jetstream.js";
import type { Bus, BusSubscribeOptions, InternalSubscription } from "../contracts/bus.js";
import type { EntryApplier, Proposer } from "../stream/entry.js";
import { writeFileAtomicSync, type Fs } from "../runtime/fs.js";
import { FileStreamStore, createMemoryStreamStore } from "../storage/index.js";
import type { StreamStore } from "../storage/types.js";
import type { RecoveryReport } from "../storage/index.js";
import type { StreamConfig } from "../contracts/wire.js";
import { ApiType } from "../contracts/wire.js";
import { configToWire, decodeStreamConfig, checkStreamConfig } from "../stream/config.js";
import { Stream, type StreamEnv } from "../stream/stream.js";
import { Sourcing, type RemoteFeed, type RemoteStart } from "../stream/sourcing.js";
import { ClusterRemoteFeed } from "./remote-source.js";
import type { StoredMsg } from "../storage/types.js";
import { directGetLastBySubject, directGetRequest } from "../stream/get.js";
import { rfc3339Ns } from "../stream/time.js";
import { ApiRouter, domainMapped } from "./api.js";
import { JS_API_LEVEL } from "../version.js";
import { randomBytes } from "node:crypto";
import { CryptFs, checkStoreEncryptionPaced } from "../storage/cryptfs.js";
import type { TimerHandle } from "../runtime/clock.js";
import type { Pacer } from "./pacer.js";
import { JsCluster } from "./cluster-api.js";
import type { ClusterMeta, ReplicaPrep } from "./cluster-types.js";

export const ACCOUNT = "$G";
/** How long a stream whose store stopped refuses publishes before it is reopened. */
export const REOPEN_DELAY_MS = 1000;
/** Subscribes or unsubscribes of a stream's subjects per step when they are worked on a
 *  pacer (a stream with thousands of subjects). */
const SUBS_PER_STEP = 64;

/** The stream a store's limit removals go to, once it exists. */
type StoreHold = ReplicaPrep["hold"];

interface StoredMeta {
  created: string;
  created_ns: number;
  config: Record<string, unknown>;
}

export class JetStreamService {
  readonly deps: JetStreamDeps;
  /** The Fs every store, meta file and snapshot goes through: a CryptFs over the disk when
   *  jetstream.key is set. */
  readonly fs: Fs;
  private readonly diskFs: Fs;
  private readonly crypt: CryptFs | null;
  readonly streams = new Map<string, Stream>();
  /** Each open store's hold (rewrapStream points its callbacks at the new Stream). */
  private readonly holds = new WeakMap<StreamStore, StoreHold>();
  readonly sourcing: Sourcing;
  readonly apiStats = { total: 0, errors: 0 };
  private readonly router: ApiRouter;
  private apiSubs: InternalSubscription[] = [];
  private started = false;
  /** Extra subscriptions per stream (direct get), removed with the stream. */
  private readonly directSubs = new Map<string, InternalSubscription[]>();
  /** Streams whose store stopped, waiting to be reopened: name -> timer. */
  private readonly reopening = new Map<string, TimerHandle>();
  /** The cluster's meta group on this server (src/jscluster/meta-group.ts), if clustered. */
  private clusterMeta: ClusterMeta | null = null;
  /** Clustered JetStream on this server (cluster-api.ts), with the meta group. */
  cluster: JsCluster | null = null;

  constructor(deps: JetStreamDeps) {
    this.deps = deps;
    this.diskFs = deps.fs;
    const o = deps.opts;
    this.crypt =
      o.key !== "" ? new CryptFs(this.diskFs, { cipher: o.cipher === "" ? "chachapoly" : o.cipher, key: o.key, prevKey: o.prevKey }) : null;
    this.fs = this.crypt ?? this.diskFs;
    this.streamBus = deps.bus;
    this.sourcing = new Sourcing(this);
    this.router = new ApiRouter(this);
  }

  get domain(): string {
    return this.deps.opts.domain;
  }

  streamsDir(): string {
    return join(this.deps.opts.storeDir, "jetstream", ACCOUNT, "streams");
  }

  private syncIntervalMs(): number {
    const s = this.deps.opts.syncIntervalMs;
    return s === "always" ? 0 : s;
  }

  async start(): Promise<void> {
    if (this.started) return;
    await this.checkEncryption();
    this.started = true;
    const dir = this.streamsDir();
    this.fs.mkdirp(dir);
    // Recovery is chunked on the API's pacer (nothing else uses it before the API subscribes):
    // a turn of the loop at most about a slice, then the monitor port (and whatever else is
    // up) is served; a stream's block files and subjects, and the consumers one by one.
    const pacer = this.router.pacer;
    pacer.begin();
    for (const name of this.fs.readdir(dir).sort()) {
      if (name.startsWith(".")) continue;
      try {
        await this.recoverStreamPaced(join(dir, name), pacer);
      } catch (e) {
        this.deps.log.error(`JetStream could not recover stream '${ACCOUNT} > ${name}': ${(e as Error).message}`);
      }
      await pacer.breathe();
    }
    await this.router.loadConsumerApi();
    await this.router.recoverAllConsumers(pacer);
    this.apiSubs = this.router.subscribe();
    if (this.domain !== "") {
      // nats-server's domain mappings: $JS.<domain>.API.<rest> is the request $JS.API.<rest>
      // (streams, consumers, direct gets, pulls), and a KV or object store client bound to
      // the domain writes to $JS.<domain>.API.$KV.> / .$OBJ.>, the buckets' own subjects.
      const from = `$JS.${this.domain}.API.`;
      this.deps.bus.mapSubjects?.(from, (subject) => domainMapped(subject, from.length));
    }
    this.sourcing.start();
    const n = this.streams.size;
    this.deps.log.info(`JetStream started: ${n} stream${n === 1 ? "" : "s"} recovered from ${dir}`);
  }

  /** Before anything is opened: every file must open under the configured key (re-wrapped
   *  when it opens under prev_key, encrypted when it is plaintext), and without a key no file
   *  may be encrypted. Throws (the server does not start) otherwise; nothing is changed then. */
  private async checkEncryption(): Promise<void> {
    const o = this.deps.opts;
    if (o.key === "" && o.cipher !== "") throw new Error(`JetStream cipher ${o.cipher} is set but no encryption key is configured`);
    if (o.key === "" && o.prevKey !== "") throw new Error("JetStream prev_key is set but no encryption key is configured");
    const jsDir = join(o.storeDir, "jetstream");
    const pacer = this.router.pacer;
    pacer.begin();
    const r = await checkStoreEncryptionPaced(this.diskFs, jsDir, this.crypt, () => pacer.breathe());
    if (this.crypt !== null) {
      this.deps.log.info(`JetStream encryption at rest: ${this.crypt.cipher}, ${r.files} file${r.files === 1 ? "" : "s"} checked`);
      if (r.converted > 0) this.deps.log.warn(`JetStream encrypted ${r.converted} plaintext file${r.converted === 1 ? "" : "s"} found in ${jsDir}`);
      if (r.rotated > 0) this.deps.log.info(`JetStream re-keyed ${r.rotated} file${r.rotated === 1 ? "" : "s"} from prev_key to key`);
    }
  }

  /** Clustered JetStream: the meta group decides which streams this server holds (the
   *  streams recovered from directories at start are closed, and the ones assigned here
   *  opened again as the meta log applies), the API is routed to the server that answers
   *  (cluster-api.ts); the meta group reports in /jsz and stops with this service. */
  attachClusterMeta(m: ClusterMeta): void {
    this.clusterMeta = m;
    this.streamBus = clusterBus(this.deps.bus);
    this.router.useBus(this.streamBus);
    this.cluster = new JsCluster(this, this.router, m);
    // Subscribed already (JetStream started before the cluster): again, as the clustered
    // API's queue group.
    if (this.apiSubs.length > 0) {
      for (const s of this.apiSubs) s.unsubscribe();
      this.apiSubs = this.router.subscribe();
    }
  }

  /** Close a stream without deleting anything (clustered: not assigned here, or a restart
   *  of the local copy). */
  async closeStream(st: Stream): Promise<void> {
    if (this.streams.get(st.name) === st) this.streams.delete(st.name);
    this.removeDirect(st.name);
    this.sourcing.detach(st);
    st.detach();
    await st.drainAcks();
    await st.stopConsumers(false);
    await st.store.close();
  }

  /** /healthz's JetStream check ("" healthy). A single server's streams were recovered at
   *  start; clustered, JsCluster.healthError. */
  healthError(): string {
    return this.cluster?.healthError() ?? "";
  }

  /** Lame duck / shutdown: clustered, leadership goes to caught-up peers first. */
  async transferLeaders(boundMs: number): Promise<void> {
    await this.cluster?.transferLeaders(boundMs);
  }

  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    this.cluster?.stop();
    this.cluster = null;
    this.clusterMeta?.close();
    this.clusterMeta = null;
    for (const s of this.apiSubs) s.unsubscribe();
    this.apiSubs = [];
    if (this.domain !== "") this.deps.bus.mapSubjects?.("", null);
    this.sourcing.stop();
    for (const t of this.reopening.values()) this.deps.clock.clearTimer(t);
    this.reopening.clear();
    this.router.snapshots.stop();
    await this.router.idle();
    for (const st of [...this.streams.values()]) {
      this.removeDirect(st.name);
      st.detach();
      await st.drainAcks();
      await st.stopConsumers(false);
      await st.store.close();
    }
    this.streams.clear();
  }

  // ---------- streams ----------

  /** The bus streams, direct gets and consumers subscribe on: clustered, one whose
   *  subscriptions are announced over routes (a publish, pull or ack on any server of the
   *  cluster reaches the server that holds the stream or consumer). */
  streamBus: Bus;

  private env(proposer?: (applier: EntryApplier) => Proposer): StreamEnv {
    return {
      bus: this.streamBus,
      ...(proposer !== undefined ? { proposer } : {}),
      clock: this.deps.clock,
      log: this.deps.log,
      domain: this.domain,
      serverName: this.deps.serverName,
      wouldExceedAccount: (storage, bytes) => this.wouldExceed(storage, bytes),
      canAddConsumer: () => true,
      syncIntervalMs: this.syncIntervalMs(),
      storeFailed: (st, err) => this.storeFailed(st, err),
      nextTurn: (fn) => this.deps.sched.nextTurn(fn),
    };
  }

  /** A file store stopped after a failed write or fsync (most often a full disk). Publishes to
   *  the stream are refused (10077) meanwhile; after REOPEN_DELAY_MS the stream is closed,
   *  its block files cut back to what was acknowledged, and it is opened again from disk with
   *  its consumers, as a restart would, so it takes messages again once there is space. The
   *  server and every other stream carry on. */
  private storeFailed(st: Stream, err: Error): void {
    if (!this.started || this.reopening.has(st.name) || this.streams.get(st.name) !== st || st.dir === null) return;
    const outOfSpace = /no space left/i.test(err.message) || (err as { code?: string }).code === "ENOSPC";
    this.deps.log.error(
      `JetStream stream '${ACCOUNT} > ${st.name}' stopped storing: ${err.message}; ` +
        `messages not yet acknowledged are dropped, and the stream reopens from disk in ${REOPEN_DELAY_MS} ms`,
    );
    if (outOfSpace) {
      this.advisory("$JS.EVENT.ADVISORY.SERVER.OUT_OF_STORAGE", {
        type: "io.nats.jetstream.advisory.v1.server_out_of_space",
        server: this.deps.serverName,
        server_id: this.deps.serverId,
        stream: st.name,
        cluster: "",
      });
    }
    this.scheduleReopen(st, st.dir);
  }

  private scheduleReopen(st: Stream, dir: string): void {
    const timer = this.deps.clock.setTimer(() => {
      void this.reopenStream(st, dir);
    }, REOPEN_DELAY_MS);
    this.reopening.set(st.name, timer);
  }

  private async reopenStream(st: Stream, dir: string): Promise<void> {
    const name = st.name;
    try {
      if (this.streams.get(name) === st) {
        this.removeDirect(name);
        this.sourcing.detach(st);
        st.detach();
        await st.drainAcks();
        await st.stopConsumers(false);
        await st.store.close();
        if (this.streams.get(name) === st) this.streams.delete(name);
      }
      if (!this.started || this.streams.has(name)) {
        this.reopening.delete(name);
        return;
      }
      const nst = this.router.openStreamDir(dir);
      this.reopening.delete(name);
      this.deps.log.info(`JetStream stream '${ACCOUNT} > ${name}' reopened with ${nst.store.state().msgs} messages`);
    } catch (e) {
      // Not open now (its directory could not be read back): try again later.
      this.deps.log.error(`JetStream could not reopen stream '${ACCOUNT} > ${name}': ${(e as Error).message}`);
      if (this.started && !this.streams.has(name)) this.scheduleReopen(st, dir);
      else this.reopening.delete(name);
    }
  }

  /** Open a stream directory as recovery does (a restored snapshot lands this way). */
  loadStreamDir(dir: string): Stream {
    const st = this.recoverStream(dir);
    if (st === null) throw new Error(`no stream in ${dir}`);
    return st;
  }

  writeStreamMeta(dir: string, cfg: StreamConfig, createdNs: number): void {
    this.writeMeta(dir, cfg, createdNs);
  }

  private recoverStream(dir: string): Stream | null {
    const cfg = this.recoveredConfig(dir);
    if (cfg === null) return null;
    const st = this.openStream(cfg.cfg, cfg.createdNs, dir, true);
    this.logRestored(st);
    return st;
  }

  /** recoverStream at start: block files, then subjects, a slice at a time on the pacer. */
  private async recoverStreamPaced(dir: string, pacer: Pacer): Promise<void> {
    const c = this.recoveredConfig(dir);
    if (c === null) return;
    const { cfg, createdNs } = c;
    const hold: StoreHold = { stream: null };
    const store = this.newStore(cfg, dir, hold);
    if (store instanceof FileStreamStore) this.reportRecovery(cfg, await store.openPaced(() => pacer.breathe()));
    const st = this.finishOpen(cfg, store, hold, createdNs, dir, true, true);
    await pacer.run(() => st.syncSubscriptions(SUBS_PER_STEP));
    this.logRestored(st);
  }

  private recoveredConfig(dir: string): { cfg: StreamConfig; createdNs: number } | null {
    const raw = this.fs.readFile(join(dir, "meta.json"));
    if (raw === null) {
      this.deps.log.warn(`JetStream skipping stream directory without meta.json: ${dir}`);
      return null;
    }
    const meta = JSON.parse(raw.toString("utf8")) as StoredMeta;
    const cfg = checkStreamConfig(decodeStreamConfig(meta.config), { get: (n) => this.streams.get(n)?.cfg }, false);
    return { cfg, createdNs: meta.created_ns };
  }

  private logRestored(st: Stream): void {
    const state = st.store.state();
    const ids = st.rebuildDedup();
    this.deps.log.info(
      `  Restored ${state.msgs} messages for stream '${ACCOUNT} > ${st.cfg.name}'` +
        (ids > 0 ? ` (${ids} message ids in the duplicate window)` : ""),
    );
  }

  /** What recovery of a file store dropped or cut, as warnings. */
  private reportRecovery(cfg: StreamConfig, report: RecoveryReport): void {
    if (report.dropped.length === 0 && report.truncatedBytes === 0) return;
    for (const d of report.dropped) {
      this.deps.log.warn(
        `JetStream stream '${ACCOUNT} > ${cfg.name}' recovery dropped ${d.bytes} bytes at ${d.file}:${d.offset} ` +
          `(${d.reason}, after seq ${d.afterSeq})`,
      );
    }
    if (report.truncatedBytes > 0) {
      this.deps.log.warn(`JetStream stream '${ACCOUNT} > ${cfg.name}' recovery truncated ${report.truncatedBytes} bytes`);
    }
  }

  /** The store of a stream being opened (not opened yet): its limit removals go to the
   *  stream once there is one. */
  private newStore(cfg: StreamConfig, dir: string | null, hold: StoreHold): StreamStore {
    const callbacks = {
      onLimitRemove: (seq: number, subject: string): void => hold.stream?.onLimitRemove(seq, subject),
    };
    const store =
      cfg.storage === "file" && dir !== null
        ? new FileStreamStore({
            dir: join(dir, "msgs"),
            fs: this.fs,
            clock: this.deps.clock,
            limits: Stream.storeLimits(cfg),
            callbacks,
            syncIntervalMs: this.syncIntervalMs(),
          })
        : createMemoryStreamStore(Stream.storeLimits(cfg), callbacks);
    this.holds.set(store, hold);
    return store;
  }

  /** Clustered, STREAM.UPDATE of the replicas: the same store under a new Stream, with a
   *  Raft group's proposer (a plain stream becoming replicated) or none (a replicated one
   *  becoming plain). The old Stream stops (ingest, direct gets, sourcing, timers); its
   *  consumers and queued PubAcks are the caller's to stop first. Nothing stored changes. */
  rewrapStream(old: Stream, proposer?: (applier: EntryApplier) => Proposer): Stream {
    if (this.streams.get(old.name) === old) this.streams.delete(old.name);
    this.removeDirect(old.name);
    this.sourcing.detach(old);
    old.detach();
    const hold = this.holds.get(old.store) ?? { stream: null };
    const st = this.finishOpen(old.cfg, old.store, hold, old.createdNs, old.dir, true, false, proposer);
    st.rebuildDedup();
    return st;
  }

  /** sliced: the stream's subjects are subscribed by the caller (syncSubscriptions). */
  private openStream(
    cfg: StreamConfig,
    createdNs: number,
    dir: string | null,
    recovering: boolean,
    sliced = false,
    proposer?: (applier: EntryApplier) => Proposer,
  ): Stream {
    const hold: StoreHold = { stream: null };
    const store = this.newStore(cfg, dir, hold);
    if (store instanceof FileStreamStore) {
      const report = store.open();
      if (recovering) this.reportRecovery(cfg, report);
    }
    return this.finishOpen(cfg, store, hold, createdNs, dir, recovering, sliced, proposer);
  }

  private finishOpen(
    cfg: StreamConfig,
    store: StreamStore,
    hold: StoreHold,
    createdNs: number,
    dir: string | null,
    recovering: boolean,
    sliced: boolean,
    proposer?: (applier: EntryApplier) => Proposer,
  ): Stream {
    if (!recovering && cfg.first_seq > 1 && store.state().lastSeq === 0) store.compact(cfg.first_seq);
    const st = new Stream(cfg, store, dir, this.env(proposer), createdNs);
    hold.stream = st;
    this.streams.set(cfg.name, st);
    // A replica takes publishes only while it leads (its group turns ingest on).
    if (proposer !== undefined) st.setIngest(false);
    st.start(sliced);
    this.installDirect(st);
    this.sourcing.attach(st);
    return st;
  }

  /** A replicated stream's local copy (clustered), built with its group's proposer, not
   *  taking publishes until the group says it leads: a file stream on the store
   *  prepareReplica opened (its directory as a restart left it, else a new one), a memory
   *  stream on a new store. */
  openReplica(cfg: StreamConfig, createdNs: number, proposer: (applier: EntryApplier) => Proposer, prep: ReplicaPrep): Stream {
    if (prep.store !== null) return this.finishOpen(cfg, prep.store, prep.hold, createdNs, prep.dir, prep.recovering, false, proposer);
    return this.openStream(cfg, createdNs, null, false, false, proposer);
  }

  /**
   * Before a replica of a file stream opens: open its store and check what recovery found.
   * Records that failed their checksum (not a torn tail) mean this copy is missing messages
   * its peers hold: the message directory is moved aside (msgs.corrupt-<n>, kept for
   * inspection) and the replica starts empty, its group blank, to re-sync from its peers
   * (`resync` says why). The store opened here is the one openReplica then uses.
   */
  async prepareReplica(cfg: StreamConfig, createdNs: number): Promise<ReplicaPrep> {
    if (cfg.storage !== "file") return { store: null, hold: { stream: null }, dir: null, recovering: false, resync: "" };
    const dir = join(this.streamsDir(), cfg.name);
    const recovering = this.fs.readFile(join(dir, "meta.json")) !== null;
    this.fs.mkdirp(join(dir, "msgs"));
    this.fs.mkdirp(join(dir, "obs"));
    this.writeMeta(dir, cfg, createdNs);
    let hold: StoreHold = { stream: null };
    let store = this.newStore(cfg, dir, hold) as FileStreamStore;
    const report = store.open();
    if (recovering) this.reportRecovery(cfg, report);
    const bad = report.dropped.find((d) => d.reason === "checksum");
    if (bad === undefined) return { store, hold, dir, recovering, resync: "" };
    await store.close();
    this.holds.delete(store);
    let n = 1;
    while (this.fs.stat(join(dir, `msgs.corrupt-${n}`)) !== null) n++;
    this.fs.rename(join(dir, "msgs"), join(dir, `msgs.corrupt-${n}`));
    this.fs.mkdirp(join(dir, "msgs"));
    this.fs.fsyncDirSync(dir);
    hold = { stream: null };
    store = this.newStore(cfg, dir, hold) as FileStreamStore;
    store.open();
    return { store, hold, dir, recovering, resync: `store damaged (${bad.reason} at ${bad.file}:${bad.offset}, after seq ${bad.afterSeq}; its messages kept in msgs.corrupt-${n})` };
  }

  /** Create a stream from a checked config (the API handles one request at a time). With a
   *  pacer, its subjects are subscribed a slice at a time on it (meta.json is written first,
   *  as before: a failed write leaves nothing half made). */
  async createStream(cfg: StreamConfig, pacer?: Pacer, created?: number): Promise<Stream> {
    const createdNs = created ?? this.deps.clock.nowNs();
    let dir: string | null = null;
    if (cfg.storage === "file") {
      dir = join(this.streamsDir(), cfg.name);
      this.fs.mkdirp(join(dir, "msgs"));
      this.fs.mkdirp(join(dir, "obs"));
      this.writeMeta(dir, cfg, createdNs);
    }
    const st = this.openStream(cfg, createdNs, dir, false, pacer !== undefined);
    if (pacer !== undefined) await pacer.run(() => st.syncSubscriptions(SUBS_PER_STEP));
    this.advisory(`$JS.EVENT.ADVISORY.STREAM.CREATED.${cfg.name}`, {
      type: ApiType.StreamAction,
      stream: cfg.name,
      action: "create",
    });
    return st;
  }

  private writeMeta(dir: string, cfg: StreamConfig, createdNs: number): void {
    const meta: StoredMeta = { created: rfc3339Ns(createdNs), created_ns: createdNs, config: configToWire(cfg, false) };
    writeFileAtomicSync(this.fs, dir, "meta.json", Buffer.from(JSON.stringify(meta, null, 2)));
  }

  /** With a pacer, subscriptions on subjects added or removed are made a slice at a time. */
  async updateStream(st: Stream, cfg: StreamConfig, pacer?: Pacer, quiet = false): Promise<void> {
    if (st.dir !== null) this.writeMeta(st.dir, cfg, st.createdNs);
    const directChanged = st.cfg.allow_direct !== cfg.allow_direct || st.cfg.mirror_direct !== cfg.mirror_direct;
    st.update(cfg, pacer !== undefined);
    if (directChanged) {
      this.removeDirect(st.name);
      this.installDirect(st);
    }
    this.sourcing.attach(st);
    if (pacer !== undefined) await pacer.run(() => st.syncSubscriptions(SUBS_PER_STEP));
    if (!quiet) {
      this.advisory(`$JS.EVENT.ADVISORY.STREAM.UPDATED.${cfg.name}`, {
        type: ApiType.StreamAction,
        stream: cfg.name,
        action: "modify",
      });
    }
  }

  /** With a pacer, the stream's subscriptions are removed a slice at a time (it stores
   *  nothing meanwhile). */
  /** quiet: no advisory (clustered: only one replica announces). */
  async deleteStream(st: Stream, pacer?: Pacer, quiet = false): Promise<void> {
    this.streams.delete(st.name);
    this.removeDirect(st.name);
    this.sourcing.detach(st);
    st.detach(pacer !== undefined);
    if (pacer !== undefined) await pacer.run(() => st.syncSubscriptions(SUBS_PER_STEP));
    await st.drainAcks();
    await st.stopConsumers(true);
    await st.store.delete();
    if (st.dir !== null) this.fs.rmrf(st.dir);
    if (!quiet) {
      this.advisory(`$JS.EVENT.ADVISORY.STREAM.DELETED.${st.name}`, {
        type: ApiType.StreamAction,
        stream: st.name,
        action: "delete",
      });
    }
  }

  private installDirect(st: Stream): void {
    const bus = this.streamBus;
    const subs: InternalSubscription[] = [];
    const maxPending = 64 * 1024 * 1024;
    const add = (name: string): void => {
      const base = `$JS.API.DIRECT.GET.${name}`;
      const keyStart = base.length + 1;
      subs.push(
        bus.subscribe(
          base,
          (_s, reply, _h, payload) => {
            if (reply === "" || !this.streams.has(st.name)) return;
            if (this.router.refuseApiLevel(_h, reply, true)) return;
            directGetRequest(bus, st.store, st.name, reply, payload, maxPending);
          },
          "_sys_",
        ),
      );
      subs.push(
        bus.subscribe(
          base + ".>",
          (subject, reply, _h, payload) => {
            if (reply === "" || !this.streams.has(st.name)) return;
            if (this.router.refuseApiLevel(_h, reply, true)) return;
            directGetLastBySubject(bus, st.store, st.name, reply, subject.slice(keyStart), payload, maxPending);
          },
          "_sys_",
        ),
      );
    };
    if (st.cfg.allow_direct) add(st.name);
    if (st.cfg.mirror !== null && st.cfg.mirror_direct) add(st.cfg.mirror.name);
    this.directSubs.set(st.name, subs);
  }

  private removeDirect(name: string): void {
    for (const s of this.directSubs.get(name) ?? []) s.unsubscribe();
    this.directSubs.delete(name);
  }

  // ---------- accounting ----------

  usage(): { memory: number; storage: number; reservedMemory: number; reservedStorage: number; consumers: number } {
    let memory = 0;
    let storage = 0;
    let reservedMemory = 0;
    let reservedStorage = 0;
    let consumers = 0;
    for (const st of this.streams.values()) {
      const s = st.store.state();
      const reserve = st.cfg.max_bytes > 0 ? st.cfg.max_bytes : 0;
      if (st.cfg.storage === "memory") {
        memory += s.bytes;
        reservedMemory += reserve;
      } else {
        storage += s.bytes;
        reservedStorage += reserve;
      }
      consumers += st.consumerCount();
    }
    return { memory, storage, reservedMemory, reservedStorage, consumers };
  }

  private usedBytes(storage: "file" | "memory"): number {
    let n = 0;
    for (const st of this.streams.values()) if (st.cfg.storage === storage) n += st.store.state().bytes;
    return n;
  }

  private wouldExceed(storage: "file" | "memory", bytes: number): boolean {
    const limit = storage === "memory" ? this.deps.opts.maxMemoryStoreBytes : this.deps.opts.maxFileStoreBytes;
    if (limit < 0) return false;
    return this.usedBytes(storage) + bytes > limit;
  }

  private defaultLimits: { memory: number; file: number } | null = null;

  /** The server's capacity when the configuration sets none, as nats-server computes it at
   *  start (jetstream.go): 75% of the machine's memory, 75% of the disk space available to
   *  the store directory (1 TB when that cannot be read). Read once. */
  private serverDefaultLimit(storage: "file" | "memory"): number {
    if (this.defaultLimits === null) {
      let file = 1024 ** 4;
      try {
        const fs = statfsSync(this.deps.opts.storeDir === "" ? "." : this.deps.opts.storeDir);
        file = Math.floor((fs.bavail * fs.bsize) / 4) * 3;
      } catch {
        // keep the 1 TB guess
      }
      this.defaultLimits = { memory: Math.floor(totalmem() / 4) * 3, file };
    }
    return this.defaultLimits[storage];
  }

  /** Reservation check when a stream with max_bytes is created or grows (10028/10047):
   *  the reserved max_bytes of the other streams of that storage plus this one must fit the
   *  configured limit, or without one the server's capacity (so max_bytes 1e18 is refused). */
  reservationError(cfg: StreamConfig, except: string): "JSMemoryResourcesExceededErr" | "JSStorageResourcesExceededErr" | null {
    const configured = cfg.storage === "memory" ? this.deps.opts.maxMemoryStoreBytes : this.deps.opts.maxFileStoreBytes;
    const limit = configured >= 0 ? configured : this.serverDefaultLimit(cfg.storage);
    let reserved = 0;
    for (const st of this.streams.values()) {
      if (st.name !== except && st.cfg.storage === cfg.storage && st.cfg.max_bytes > 0) reserved += st.cfg.max_bytes;
    }
    const add = cfg.max_bytes > 0 ? cfg.max_bytes : 1;
    if (reserved + add > limit) {
      return cfg.storage === "memory" ? "JSMemoryResourcesExceededErr" : "JSStorageResourcesExceededErr";
    }
    return null;
  }

  limits(): Record<string, unknown> {
    return {
      max_memory: this.deps.opts.maxMemoryStoreBytes,
      max_storage: this.deps.opts.maxFileStoreBytes,
      max_streams: -1,
      max_consumers: -1,
      max_ack_pending: -1,
      memory_max_stream_bytes: -1,
      storage_max_stream_bytes: -1,
      max_bytes_required: false,
    };
  }

  /** Body of $JS.API.INFO. */
  accountInfo(): object {
    const u = this.usage();
    const o: Record<string, unknown> = {
      type: ApiType.AccountInfo,
      memory: u.memory,
      storage: u.storage,
      reserved_memory: u.reservedMemory,
      reserved_storage: u.reservedStorage,
      streams: this.streams.size,
      consumers: u.consumers,
      limits: this.limits(),
    };
    if (this.domain !== "") o["domain"] = this.domain;
    o["api"] = { level: JS_API_LEVEL, total: this.apiStats.total, errors: this.apiStats.errors };
    return o;
  }

  /** /jsz body. opts: accounts, streams, consumers, config (booleans). */
  jsz(opts?: Record<string, unknown>): object {
    const u = this.usage();
    let messages = 0;
    let bytes = 0;
    for (const st of this.streams.values()) {
      const s = st.store.state();
      messages += s.msgs;
      bytes += s.bytes;
    }
    const si = this.deps.opts.syncIntervalMs;
    // What /jsz and its account_details both show.
    const usage = {
      memory: u.memory,
      storage: u.storage,
      reserved_memory: u.reservedMemory,
      reserved_storage: u.reservedStorage,
      accounts: 1,
      ha_assets: this.cluster?.haAssets() ?? 0,
      api: { level: JS_API_LEVEL, total: this.apiStats.total, errors: this.apiStats.errors },
    };
    const o: Record<string, unknown> = {
      server_id: this.deps.serverId,
      now: rfc3339Ns(this.deps.clock.nowNs()),
      config: {
        max_memory: this.deps.opts.maxMemoryStoreBytes,
        max_storage: this.deps.opts.maxFileStoreBytes,
        store_dir: join(this.deps.opts.storeDir, "jetstream"),
        sync_interval: si === "always" ? 0 : si * 1_000_000,
        sync_always: si === "always",
        ...(this.domain !== "" ? { domain: this.domain } : {}),
      },
      ...usage,
      streams: this.streams.size,
      consumers: u.consumers,
      messages,
      bytes,
    };
    if (this.clusterMeta !== null) o["meta_cluster"] = this.clusterMeta.jszInfo();
    const wantAccounts = opts?.["accounts"] === true || opts?.["streams"] === true || opts?.["consumers"] === true;
    if (wantAccounts) {
      const streamDetail = opts?.["streams"] === true || opts?.["consumers"] === true;
      o["account_details"] = [
        {
          name: ACCOUNT,
          id: ACCOUNT,
          ...usage,
          ...(streamDetail
            ? {
                stream_detail: [...this.streams.values()].map((st) => ({
                  name: st.name,
                  created: rfc3339Ns(st.createdNs),
                  cluster: this.cluster?.clusterBlock(st.name) ?? { leader: this.deps.serverName },
                  ...(opts?.["config"] === true ? { config: st.wireConfig() } : {}),
                  state: st.state(),
                })),
              }
            : {}),
        },
      ];
    }
    return o;
  }

  advisory(subject: string, body: Record<string, unknown>): void {
    const bus = this.deps.bus;
    if (!bus.hasInterest(subject)) return;
    const full: Record<string, unknown> = {
      type: body["type"],
      id: randomBytes(11).toString("hex").toUpperCase().slice(0, 22),
      timestamp: rfc3339Ns(this.deps.clock.nowNs()),
    };
    for (const [k, v] of Object.entries(body)) if (k !== "type") full[k] = v;
    if (this.domain !== "") full["domain"] = this.domain;
    bus.publish(subject, "", null, Buffer.from(JSON.stringify(full)));
  }

  getStream(name: string): Stream | undefined {
    return this.streams.get(name);
  }

  /** SourcingHost: clustered, a mirror's or source's origin held on other servers is read
   *  through an internal consumer on it (remote-source.ts). */
  openRemote(origin: string, start: RemoteStart, sink: (m: StoredMsg) => void): RemoteFeed | null {
    if (this.cluster === null) return null;
    return new ClusterRemoteFeed({ bus: this.streamBus, clock: this.deps.clock, log: this.deps.log }, origin, start, sink);
  }
}

/** A bus whose subscriptions are announced over routes (Bus.subscribe opts.cluster): what a
 *  clustered server's streams, direct gets and consumers subscribe on. */
function clusterBus(b: Bus): Bus {
  const o: BusSubscribeOptions = { cluster: true };
  const out: Bus = {
    subscribe: (subject, handler, queue, borrow) => b.subscribe(subject, handler, queue, borrow, o),
    publish: (subject, reply, hdr, payload) => b.publish(subject, reply, hdr, payload),
    hasInterest: (subject) => b.hasInterest(subject),
  };
  if (b.subscribeAck !== undefined) out.subscribeAck = (prefix, handler, onBytes) => b.subscribeAck!(prefix, handler, onBytes, o);
  if (b.publishRange !== undefined) out.publishRange = b.publishRange.bind(b);
  if (b.deliverAs !== undefined) out.deliverAs = b.deliverAs.bind(b);
  if (b.deliverAck !== undefined) out.deliverAck = b.deliverAck.bind(b);
  if (b.mapSubjects !== undefined) out.mapSubjects = b.mapSubjects.bind(b);
  if (b.hasQueueInterest !== undefined) out.hasQueueInterest = b.hasQueueInterest.bind(b);
  return out;
}
