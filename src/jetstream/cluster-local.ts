// This server's copies of the streams the meta group assigned (ARCHITECTURE.md "Replicated
// JetStream"): as the meta log applies, a stream assigned here is opened (R1: a plain local
// stream; R>1: a member of its Raft group, built by the meta group's openStreamGroup), updated,
// given new members, or removed; a replicated stream's consumers run on its group's leader.
// Local work runs in meta-log order, one change at a time (`later`).

import { join } from "node:path";
import { jsErr } from "../contracts/errors.js";
import { ApiType, type StreamConfig } from "../contracts/wire.js";
import { checkStreamConfig, decodeStreamConfig, sameConfig } from "../stream/config.js";
import type { EntryApplier, Proposer } from "../stream/entry.js";
import type { Stream } from "../stream/stream.js";
import type { ApiRouter } from "./api.js";
import type { JetStreamCore } from "./core.js";
import type { Pacer } from "./pacer.js";
import { consumerSeeds, dropConsumer, durableConfigs, ensureDurable, holdConsumers, restoreConsumers, restoreReplicatedConsumers } from "./consumer-api.js";
import type { ClusterChange, ClusterMeta, ClusterOp, ClusterStreamAssignment, ClusterStreamGroup, ReplicaPrep } from "./cluster-types.js";
import type { ConsumerSeed } from "../contracts/jetstream.js";
import { joinVoters, scaleStep, updateAnswerer } from "./scale.js";

/** How long the meta leader waits for its proposal to apply before giving up on the reply. */
export const PROPOSE_TIMEOUT_MS = 5000;
/** FWD subject of a meta proposal a server asks the meta leader to make (not an API subject). */
export const PROPOSE_SUBJECT = "$JSC.META.PROPOSE";
/** A removed replica that leads waits this long for its own removal to commit. */
const LEAVE_BOUND_MS = 5000;

/** What the clustered side needs of the JetStream service beyond JetStreamCore. */
export interface ClusterServiceHost extends JetStreamCore {
  createStream(cfg: StreamConfig, pacer?: Pacer, created?: number): Promise<Stream>;
  /** The same store under a new Stream: with a group's proposer, or plain (none). */
  rewrapStream(old: Stream, proposer?: (applier: EntryApplier) => Proposer): Stream;
  openReplica(cfg: StreamConfig, createdNs: number, proposer: (applier: EntryApplier) => Proposer, prep: ReplicaPrep): Stream;
  prepareReplica(cfg: StreamConfig, createdNs: number): Promise<ReplicaPrep>;
  deleteStream(st: Stream, pacer?: Pacer, quiet?: boolean): Promise<void>;
  updateStream(st: Stream, cfg: StreamConfig, pacer?: Pacer, quiet?: boolean): Promise<void>;
  closeStream(st: Stream): Promise<void>;
}

/** A replicated stream's group, or null for R1 (a plain local stream). */
export interface LocalCopy {
  sa: ClusterStreamAssignment;
  group: ClusterStreamGroup<Stream> | null;
  /** This replica leads and has brought its consumers back (R>1). */
  consumersUp: boolean;
}

/** A create or update answered once the stream's (new) leader takes publishes. */
interface PendingAnswer {
  reply: string;
  type: string;
  didCreate: boolean;
}

export function configOf(sa: ClusterStreamAssignment): StreamConfig {
  return decodeStreamConfig(sa.config);
}

export class LocalCopies {
  /** Local stream work (open, update, remove) in meta-log order, one at a time. */
  private chain: Promise<void> = Promise.resolve();
  readonly copies = new Map<string, LocalCopy>();
  /** Replicated streams created by a live op whose reply waits for the first leader: the
   *  member that becomes leader answers. */
  private readonly pendingCreate = new Map<string, PendingAnswer>();
  stopped = false;

  constructor(
    private readonly svc: ClusterServiceHost,
    private readonly router: ApiRouter,
    private readonly meta: ClusterMeta,
  ) {
    meta.onChange = (op, change, live) => this.applied(op, change, live);
    meta.onReset = () => this.later(() => this.reconcile());
    // A durable recorded through a meta leader that then lost its leadership may be missing:
    // the stream leaders here record theirs again with the new one.
    meta.onLeader = (leader) => {
      if (leader === "") return;
      this.later(() => {
        for (const c of this.copies.values()) if (c.group !== null && c.consumersUp) this.syncDurables(c);
      });
    };
    // The streams recovered from directories at start are closed: the meta log says which
    // ones this server holds, and they are opened again as it applies.
    this.later(async () => {
      for (const st of [...svc.streams.values()]) await svc.closeStream(st);
    });
  }

  stop(): void {
    this.stopped = true;
    for (const c of this.copies.values()) void c.group?.close();
    this.copies.clear();
  }

  private get self(): string {
    return this.meta.serverName;
  }

  private later(fn: () => Promise<void> | void): void {
    this.chain = this.chain.then(fn).catch((e: unknown) => {
      this.svc.deps.log.error(`JetStream cluster: ${(e as Error).stack ?? String(e)}`);
    });
  }

  /** Resolves once the local work queued so far is done (tests). */
  settled(): Promise<void> {
    return this.chain;
  }

  /** On a replicated stream's leader: record its durable consumers' configs in the meta
   *  state (assign_consumer), and drop the ones deleted here (remove_consumer). */
  syncDurables(copy: LocalCopy): void {
    const name = copy.sa.config.name;
    const st = this.svc.streams.get(name);
    if (st === undefined) return;
    const local = durableConfigs(st);
    const have = new Set<string>();
    for (const d of local) {
      have.add(d.name);
      const ca = this.meta.state.consumer(name, d.name);
      if (ca !== undefined && JSON.stringify(ca.config) === JSON.stringify(d.config)) continue;
      const group = { name: ca?.group.name ?? `C-${copy.sa.group.name.slice(2)}-${d.name}`, peers: [...copy.sa.group.peers], store: copy.sa.group.store };
      this.proposeToMeta({ op: "assign_consumer", ca: { stream: name, name: d.name, config: d.config, group, created: d.created } });
    }
    for (const c of this.meta.state.consumerNames(name)) if (!have.has(c)) this.proposeToMeta({ op: "remove_consumer", stream: name, name: c });
  }

  private proposeToMeta(op: ClusterOp): void {
    if (this.meta.isLeader) {
      void this.meta.proposeWait(op, PROPOSE_TIMEOUT_MS);
      return;
    }
    const leader = this.meta.leaderName;
    if (leader === "") return;
    this.meta.forward(leader, { subject: PROPOSE_SUBJECT, reply: "", hdr: null, payload: Buffer.from(JSON.stringify(op)), hops: 1, local: true });
  }

  // ---------- applying the meta log here ----------

  /** The member that answers a create or update: R1 its server, else the preferred peer. */
  private responder(sa: ClusterStreamAssignment): string {
    return sa.group.peers.length === 1 ? sa.group.peers[0]! : (sa.group.preferred ?? sa.group.peers[0]!);
  }

  private applied(_op: ClusterOp, change: ClusterChange, live: boolean): void {
    switch (change.kind) {
      case "stream_added": {
        const sa = change.sa;
        if (!sa.group.peers.includes(this.self)) break;
        this.later(async () => {
          // A restart replaying the meta log: a later op of this replay opens the copy as it is
          // now (a plain copy opened here could take publishes before it became replicated).
          if (!live && this.superseded(sa)) return;
          const replicated = sa.group.peers.length > 1;
          const answer = live && sa.reply !== undefined && sa.reply !== "" && (replicated || this.responder(sa) === this.self);
          try {
            if (answer && replicated) this.pendingCreate.set(sa.config.name, { reply: sa.reply!, type: ApiType.StreamCreate, didCreate: true });
            const st = await this.openLocal(sa);
            if (answer && !replicated) this.router.replyInfo(sa.reply!, ApiType.StreamCreate, st, true);
            const g = this.copies.get(sa.config.name)?.group;
            if (answer && replicated && g != null && g.leader !== "") this.groupLeader(sa.config.name, g.leader);
          } catch (e) {
            this.svc.deps.log.warn(`Stream create failed for '$G > ${sa.config.name}': ${(e as Error).message}`);
            if (answer) this.router.respond(sa.reply!, { type: ApiType.StreamCreate, error: jsErr("JSStreamCreateErrF", { err: (e as Error).message }) });
          }
        });
        break;
      }
      case "stream_updated": {
        const { sa, before } = change;
        const mine = sa.group.peers.includes(this.self);
        if (!mine && !before.group.peers.includes(this.self)) break;
        const step = scaleStep(before.group.peers, sa.group.peers, this.self);
        this.later(async () => {
          const name = sa.config.name;
          const st = this.svc.streams.get(name);
          const copy0 = this.copies.get(name);
          const g0 = copy0?.group ?? null;
          const leader0 = g0 !== null ? g0.leader : "";
          // Every replica learns the new members; the group's leader changes the voters.
          g0?.setPeers?.(sa.group.peers);
          if (!mine) {
            // Removed from the group: a leader hands over first (bounded), then the copy goes.
            if (g0 !== null && g0.leave !== undefined) await g0.leave(LEAVE_BOUND_MS);
            // The new assignment decides who announces (not this server: no delete advisory).
            const c0 = this.copies.get(name);
            if (c0 !== undefined) c0.sa = sa;
            if (st !== undefined) await this.removeLocal(name);
            return;
          }
          if (!live && this.superseded(sa)) return;
          const answerer = g0 !== null ? updateAnswerer(leader0, sa.group.peers) : this.responder(sa);
          const answer = live && sa.reply !== undefined && sa.reply !== "" && answerer === this.self && step !== "join";
          if (step === "seed" && st !== undefined && copy0 !== undefined && g0 === null) return this.toGroup(sa, st, answer);
          if (step === "unseed" && g0 !== null) return this.awaitSole(name, sa, answer);
          if (copy0 !== undefined && st !== undefined && JSON.stringify(before.config) === JSON.stringify(sa.config)) {
            // Only the members changed (peer removal).
            copy0.sa = sa;
            return;
          }
          try {
            let out: Stream;
            if (st === undefined) {
              out = await this.openLocal(sa, { join: joinVoters(before.group.peers, this.self), seed: step === "seed" });
            } else {
              const cfg = checkStreamConfig(configOf(sa), this.localOthers(st.name), false);
              await this.svc.updateStream(st, cfg, undefined, !answer);
              const copy = this.copies.get(st.name);
              if (copy !== undefined) copy.sa = sa;
              out = st;
            }
            if (answer) this.router.replyInfo(sa.reply!, ApiType.StreamUpdate, out, false);
          } catch (e) {
            if (answer) this.router.respond(sa.reply!, { type: ApiType.StreamUpdate, error: jsErr("JSStreamUpdateErrF", { err: (e as Error).message }) });
          }
        });
        break;
      }
      case "stream_removed": {
        const sa = change.sa;
        if (!sa.group.peers.includes(this.self)) break;
        this.later(() => this.removeLocal(sa.config.name));
        break;
      }
      case "consumer_added":
      case "consumer_removed": {
        // The stream leader makes or drops it when it has not already (the op may come from
        // an earlier leader of the stream).
        const ca = change.ca;
        const copy = this.copies.get(ca.stream);
        if (copy === undefined || copy.group === null || !copy.consumersUp) break;
        const added = change.kind === "consumer_added";
        this.later(() => {
          const st = this.svc.streams.get(ca.stream);
          if (st === undefined || !copy.consumersUp) return;
          // A last_per_subject start over many subjects is built over turns; the consumer is
          // made then only if the meta state still lists it and this server still leads.
          if (added) ensureDurable(this.router.ctx, st, ca.name, ca.config, () => copy.consumersUp && this.svc.streams.get(ca.stream) === st && this.meta.state.consumer(ca.stream, ca.name) !== undefined);
          else dropConsumer(this.router.ctx, st, ca.name);
        });
        break;
      }
      case "peer_removed":
      case "noop":
      case "error":
        break;
    }
  }

  private localOthers(except: string): { get(name: string): StreamConfig | undefined } {
    return { get: (n) => (n === except ? undefined : this.svc.streams.get(n)?.cfg) };
  }

  /** This server's copy of an assigned stream: the open one, else its directory opened as a
   *  restart would (a copy from before), else a new one. */
  private async openLocal(sa: ClusterStreamAssignment, how: { join?: string[]; seed?: boolean } = {}): Promise<Stream> {
    const name = sa.config.name;
    const open = this.svc.streams.get(name);
    if (open !== undefined) return open;
    const dir = join(this.svc.streamsDir(), name);
    let st: Stream;
    const build = async (): Promise<Stream> => {
      if (sa.group.store === "file" && this.svc.fs.readFile(join(dir, "meta.json")) !== null) {
        const s = this.router.openStreamDir(dir);
        const want = checkStreamConfig(configOf(sa), this.localOthers(name), false);
        if (!sameConfig(s.cfg, want)) await this.svc.updateStream(s, want, undefined, true);
        return s;
      }
      const cfg = checkStreamConfig(configOf(sa), this.localOthers(name), false);
      return this.svc.createStream(cfg, undefined, sa.created);
    };
    if (sa.group.peers.length > 1) {
      if (this.meta.openStreamGroup === undefined) throw new Error("replicated streams are not available on this server");
      const cfg = checkStreamConfig(configOf(sa), this.localOthers(name), false);
      const prep = await this.svc.prepareReplica(cfg, sa.created);
      if (this.stopped || this.svc.streams.has(name)) {
        // Stopped, or opened meanwhile: this store is not needed.
        if (prep.store !== null) await prep.store.close();
        const again = this.svc.streams.get(name);
        if (again !== undefined) return again;
        throw new Error("JetStream cluster stopped");
      }
      // The group builds the stream with its proposer (the Raft log between checks and apply).
      const group = this.meta.openStreamGroup<Stream>({
        group: sa.group,
        open: (proposer) => this.svc.openReplica(cfg, sa.created, proposer as (applier: EntryApplier) => Proposer, prep),
        ...(prep.resync !== "" ? { resync: prep.resync } : {}),
        onLeaderChange: (leader) => this.groupLeader(name, leader),
        // A restart between a scale-up and its seed snapshot seeds again (once it has one, a
        // seed is ignored); its consumers were not opened here: none.
        ...(how.seed === true ? { seed: [] } : {}),
        ...(how.join !== undefined && how.join.length > 0 ? { joinVoters: how.join } : {}),
      });
      this.copies.set(name, { sa, group, consumersUp: false });
      st = group.stream;
      holdConsumers(this.router.ctx, st);
    } else {
      st = await build();
      this.copies.set(name, { sa, group: null, consumersUp: true });
    }
    return st;
  }

  /** A replicated stream's group changed leader (here: "" while electing). Its consumers run
   *  on the leader only (issue 18 replicates them): a new leader reloads them from its own
   *  obs/ directory and makes the durables the meta state lists that it lacks; a replica that
   *  stops leading stops its consumers (their state stays on disk). */
  groupLeader(name: string, leader: string): void {
    if (this.stopped) return;
    this.later(async () => {
      const copy = this.copies.get(name);
      const st = this.svc.streams.get(name);
      if (copy === undefined || copy.group === null || st === undefined) return;
      // Consumers start once this leader takes publishes: its copies of their ledgers then
      // hold everything committed before its term (StreamGroup calls again at that point).
      const taking = (copy.group as { isTakingPublishes?: boolean }).isTakingPublishes ?? true;
      if (leader === this.self && !copy.consumersUp && taking) {
        // Every consumer the replicas agreed on (issue 18), then any durable the meta state
        // lists that they do not know (made from its config, starting over).
        // (a last_per_subject start over many subjects is built over turns first: the
        // consumers are made only if this replica still leads then)
        const group = copy.group;
        const still = (): boolean => this.copies.get(name) === copy && copy.group === group && group.isLeader;
        const made = await restoreReplicatedConsumers(this.router.ctx, st, still);
        if (made === 0 && !still()) return;
        for (const c of this.meta.state.consumerNames(name)) {
          const ca = this.meta.state.consumer(name, c)!;
          try {
            ensureDurable(this.router.ctx, st, c, ca.config);
          } catch (e) {
            this.svc.deps.log.warn(`JetStream consumer '${name} > ${c}' could not be made on the new stream leader: ${(e as Error).message}`);
          }
        }
        copy.consumersUp = true;
        this.syncDurables(copy);
      } else if (leader !== this.self && copy.consumersUp) {
        copy.consumersUp = false;
        await st.stopConsumers(false);
      }
    });
    const pending = this.pendingCreate.get(name);
    if (pending !== undefined && leader !== "") {
      this.pendingCreate.delete(name);
      if (leader === this.self) this.answerWhenTaking(name, pending);
    }
  }

  /** Answer a replicated stream's create (or a scale-up's update) once this replica leads
   *  and takes publishes (so a publish right after the reply finds the stream), within a
   *  bound. */
  private answerWhenTaking(name: string, p: PendingAnswer): void {
    const end = this.svc.deps.clock.monoMs() + 2000;
    const tryAnswer = (): void => {
      const copy = this.copies.get(name);
      const st = this.svc.streams.get(name);
      if (this.stopped || copy === undefined || st === undefined) return;
      const taking = (copy.group as { isTakingPublishes?: boolean } | null)?.isTakingPublishes ?? true;
      if (taking || this.svc.deps.clock.monoMs() >= end) {
        this.router.replyInfo(p.reply, p.type, st, p.didCreate);
        // A replica's copy is opened without the create advisory: the first leader sends it.
        if (p.didCreate) this.svc.advisory(`$JS.EVENT.ADVISORY.STREAM.CREATED.${name}`, { type: ApiType.StreamAction, stream: name, action: "create" });
        return;
      }
      this.svc.deps.clock.setTimer(tryAnswer, 10);
    };
    tryAnswer();
  }

  /** During a replay of the meta log: a later op gave the stream another group, took this
   *  server out of it, or removed the stream, so this op's copy is not the one to open. */
  private superseded(sa: ClusterStreamAssignment): boolean {
    const cur = this.meta.state.stream(sa.config.name);
    return cur === undefined || cur.group.name !== sa.group.name || !cur.group.peers.includes(this.self);
  }

  /** STREAM.UPDATE R1→R>1 on the server that holds the plain stream: the new config applied,
   *  then the same store under the new Raft group, seeded with its state and its consumers'
   *  (StreamGroupOptions.seed); the new members join once the seed snapshot is on disk.
   *  Answered once the group takes publishes. */
  private async toGroup(sa: ClusterStreamAssignment, st: Stream, answer: boolean): Promise<void> {
    const name = sa.config.name;
    if (this.meta.openStreamGroup === undefined) throw new Error("replicated streams are not available on this server");
    const cfg = checkStreamConfig(configOf(sa), this.localOthers(name), false);
    await this.svc.updateStream(st, cfg, undefined, !answer);
    // No publishes while it changes hands (clients see no responders and retry); the ones
    // taken are answered, the consumers stop with their state written.
    st.setIngest(false);
    await st.drainAcks();
    const seeds = consumerSeeds(this.router.ctx, st);
    await st.stopConsumers(false);
    const group = this.meta.openStreamGroup<Stream>({
      group: sa.group,
      open: (proposer) => this.svc.rewrapStream(st, proposer as (applier: EntryApplier) => Proposer),
      onLeaderChange: (leader) => this.groupLeader(name, leader),
      seed: seeds,
    });
    this.copies.set(name, { sa, group, consumersUp: false });
    holdConsumers(this.router.ctx, group.stream);
    this.svc.deps.log.info(`JetStream stream '$G > ${name}' is now replicated (${sa.group.peers.length} replicas, group ${sa.group.name})`);
    if (answer) this.answerWhenTaking(name, { reply: sa.reply!, type: ApiType.StreamUpdate, didCreate: false });
  }

  /** STREAM.UPDATE R>1→R1 on the member kept: the group's leader shrinks the voters to this
   *  server (the others hand over and delete their copies); once it is the only voter and
   *  leads, everything committed is applied here and the copy becomes a plain stream
   *  (toPlain). Checked every 50 ms, without holding up the other local work. */
  private awaitSole(name: string, sa: ClusterStreamAssignment, answer: boolean): void {
    const check = (): void => {
      const copy = this.copies.get(name);
      const cur = this.meta.state.stream(name);
      if (this.stopped || copy === undefined || copy.group === null || cur === undefined || cur.group.name !== sa.group.name) return;
      const g = copy.group;
      const v = g.voters ?? [];
      if (v.length === 1 && v[0] === this.self && g.isTakingPublishes === true) {
        this.later(() => this.toPlain(name, sa, answer));
        return;
      }
      this.svc.deps.clock.setTimer(check, 50);
    };
    check();
  }

  /** The kept member of a group shrunk to it: the same store as a plain stream, its
   *  consumers made from the group's agreed state (an operation not committed yet is lost:
   *  a delivery then happens again). */
  private async toPlain(name: string, sa: ClusterStreamAssignment, answer: boolean): Promise<void> {
    const copy = this.copies.get(name);
    const st = this.svc.streams.get(name);
    if (copy === undefined || copy.group === null || st === undefined) return;
    const g = copy.group;
    const seeds: ConsumerSeed[] = g.consumerSeeds?.() ?? [];
    copy.consumersUp = false;
    await g.close(true);
    await st.drainAcks();
    await st.stopConsumers(false);
    const plain = this.svc.rewrapStream(st);
    this.copies.set(name, { sa, group: null, consumersUp: true });
    restoreConsumers(this.router.ctx, plain, seeds);
    const cfg = checkStreamConfig(configOf(sa), this.localOthers(name), false);
    await this.svc.updateStream(plain, cfg, undefined, !answer);
    this.svc.deps.log.info(`JetStream stream '$G > ${name}' is no longer replicated`);
    if (answer) this.router.replyInfo(sa.reply!, ApiType.StreamUpdate, plain, false);
    // A plain stream's consumers are its own: the meta state does not list them.
    for (const c of this.meta.state.consumerNames(name)) this.proposeToMeta({ op: "remove_consumer", stream: name, name: c });
  }

  private async removeLocal(name: string): Promise<void> {
    const copy = this.copies.get(name);
    this.copies.delete(name);
    if (copy?.group != null) await copy.group.close(true);
    const st = this.svc.streams.get(name);
    // One replica announces the delete (the responder), as one server does in nats-server.
    if (st !== undefined) await this.svc.deleteStream(st, undefined, copy !== undefined && this.responder(copy.sa) !== this.self);
    else {
      const dir = join(this.svc.streamsDir(), name);
      if (this.svc.fs.readFile(join(dir, "meta.json")) !== null) this.svc.fs.rmrf(dir);
    }
  }

  /** After a meta snapshot replaced the state: open what is assigned here and not open; close
   *  (never delete) what is open and no longer assigned here. */
  private async reconcile(): Promise<void> {
    for (const n of this.meta.state.streamNames()) {
      const sa = this.meta.state.stream(n)!;
      if (sa.group.peers.includes(this.self) && !this.svc.streams.has(n)) {
        try {
          await this.openLocal(sa);
        } catch (e) {
          this.svc.deps.log.error(`JetStream cluster could not open stream '$G > ${n}': ${(e as Error).message}`);
        }
      }
    }
    for (const st of [...this.svc.streams.values()]) {
      const sa = this.meta.state.stream(st.name);
      if (sa === undefined || !sa.group.peers.includes(this.self)) {
        this.svc.deps.log.warn(`JetStream stream '$G > ${st.name}' is not assigned to this server: closed, its files left on disk`);
        const copy = this.copies.get(st.name);
        this.copies.delete(st.name);
        if (copy?.group != null) await copy.group.close();
        await this.svc.closeStream(st);
      }
    }
  }}
