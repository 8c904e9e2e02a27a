// Network namespaces for multi-process fault tests (root only): each node gets its own
// namespace with one address on a private /24, joined by a bridge that lives in a namespace of
// its own; the test process reaches every node through one more veth from the root namespace.
// Partitions are nftables drop rules inside the nodes' namespaces (silent loss: a peer sees a
// timeout, as on a real network), and heal() removes them. Everything is created under a
// random tag and removed by destroy(); nothing outside the namespaces we create is touched.

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";

function run(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: "utf8", input });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: ${(r.stderr || r.stdout || "").trim()}`);
  return r.stdout;
}

/** Whether this process may build namespaces and partitions (root, ip and nft present). */
export function netnsAvailable(): string | null {
  if (process.getuid?.() !== 0) return "needs root";
  for (const bin of ["ip", "nft"]) if (spawnSync("sh", ["-c", `command -v ${bin}`]).status !== 0) return `${bin} is not installed`;
  const probe = `tsp${randomBytes(3).toString("hex")}`;
  const r = spawnSync("ip", ["netns", "add", probe]);
  if (r.status !== 0) return "ip netns add failed";
  spawnSync("ip", ["netns", "del", probe]);
  return null;
}

export class TestNet {
  readonly tag: string;
  readonly subnet: number;
  readonly nodes: string[] = [];
  readonly addrs: string[] = [];
  private readonly bridgeNs: string;
  private readonly hostIf: string;
  private destroyed = false;

  /** n nodes on 10.<subnet>.0.0/24: node i at .(i+1), the test process at .254. */
  constructor(n: number) {
    this.tag = randomBytes(2).toString("hex");
    this.subnet = 200 + (parseInt(this.tag, 16) % 50);
    this.bridgeNs = `tsn${this.tag}br`;
    this.hostIf = `tsn${this.tag}h`;
    try {
      run("ip", ["netns", "add", this.bridgeNs]);
      const br = ["netns", "exec", this.bridgeNs, "ip"];
      run("ip", [...br, "link", "add", "br0", "type", "bridge"]);
      run("ip", [...br, "link", "set", "br0", "up"]);
      run("ip", [...br, "link", "set", "lo", "up"]);
      for (let i = 0; i < n; i++) {
        const ns = `tsn${this.tag}n${i}`;
        const a = `tsn${this.tag}a${i}`;
        const b = `tsn${this.tag}b${i}`;
        const addr = `10.${this.subnet}.0.${i + 1}`;
        run("ip", ["netns", "add", ns]);
        this.nodes.push(ns);
        this.addrs.push(addr);
        run("ip", ["link", "add", a, "type", "veth", "peer", "name", b]);
        run("ip", ["link", "set", a, "netns", ns]);
        run("ip", ["link", "set", b, "netns", this.bridgeNs]);
        run("ip", [...br, "link", "set", b, "master", "br0"]);
        run("ip", [...br, "link", "set", b, "up"]);
        const nx = ["netns", "exec", ns, "ip"];
        run("ip", [...nx, "link", "set", "lo", "up"]);
        run("ip", [...nx, "addr", "add", `${addr}/24`, "dev", a]);
        run("ip", [...nx, "link", "set", a, "up"]);
      }
      // The test process's own leg onto the bridge.
      const hb = `tsn${this.tag}hb`;
      run("ip", ["link", "add", this.hostIf, "type", "veth", "peer", "name", hb]);
      run("ip", ["link", "set", hb, "netns", this.bridgeNs]);
      run("ip", [...br, "link", "set", hb, "master", "br0"]);
      run("ip", [...br, "link", "set", hb, "up"]);
      run("ip", ["addr", "add", `10.${this.subnet}.0.254/24`, "dev", this.hostIf]);
      run("ip", ["link", "set", this.hostIf, "up"]);
    } catch (err) {
      this.destroy();
      throw err;
    }
  }

  /** Cut the network into groups of node indexes: a node drops every packet from and to the
   *  nodes outside its group (the test process still reaches all of them). */
  partition(groups: number[][]): void {
    this.heal();
    for (const g of groups) {
      const others = this.addrs.filter((_, j) => !g.includes(j));
      if (others.length === 0) continue;
      for (const i of g) this.dropFrom(i, others);
    }
  }

  /** Node i loses every packet from and to the given nodes (one-way cuts: call it on one side). */
  isolate(i: number, from: number[]): void {
    this.dropFrom(i, from.map((j) => this.addrs[j]!));
  }

  private dropFrom(i: number, addrs: string[]): void {
    const set = addrs.join(", ");
    const rules = [
      "table inet tsnfault {",
      "  chain in { type filter hook input priority 0; policy accept;",
      `    ip saddr { ${set} } drop`,
      "  }",
      "  chain out { type filter hook output priority 0; policy accept;",
      `    ip daddr { ${set} } drop`,
      "  }",
      "}",
      "",
    ].join("\n");
    run("ip", ["netns", "exec", this.nodes[i]!, "nft", "-f", "-"], rules);
  }

  /** Remove every partition. */
  heal(): void {
    for (const ns of this.nodes) spawnSync("ip", ["netns", "exec", ns, "nft", "delete", "table", "inet", "tsnfault"]);
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    spawnSync("ip", ["link", "del", this.hostIf]);
    for (const ns of this.nodes) spawnSync("ip", ["netns", "del", ns]);
    spawnSync("ip", ["netns", "del", this.bridgeNs]);
  }
}
