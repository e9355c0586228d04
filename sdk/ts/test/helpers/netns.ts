/**
 * A network namespace joined to this one by a veth pair, with nftables dropping a share of the
 * packets each way on the namespace's side (`numgen random mod 100 < P drop`). Needs root, `ip`
 * (iproute2) and `nft` (nftables). Every address is in 10.200.0.0/16 and lives only on the pair:
 * traffic stays between this namespace and the one created here.
 *
 * @example
 * ```ts
 * const ns = await LossyNamespace.create(20); // or a string: why it cannot be made here
 * try { ... `ip netns exec ${ns.name} server` listening on ns.nsAddr ... } finally { ns.destroy(); }
 * ```
 */
import { execFileSync } from "node:child_process";

const TABLE = "nixmsg_loss";

function run(cmd: string, args: string[], input?: string): string {
  return execFileSync(cmd, args, {
    encoding: "utf8",
    input,
    timeout: 10_000,
    stdio: ["pipe", "pipe", "pipe"],
  });
}

/** Packets seen and dropped by the loss rules in one direction. */
export interface LossCounts {
  packets: number;
  dropped: number;
}

export class LossyNamespace {
  /** Namespace name, for `ip netns exec`. */
  readonly name: string;
  /** This side's veth address. */
  readonly hostAddr: string;
  /** The namespace side's veth address: serve on it. */
  readonly nsAddr: string;
  readonly #hostIf: string;
  readonly #nsIf: string;
  #destroyed = false;

  private constructor(name: string, octet: number) {
    this.name = name;
    this.#hostIf = `${name}h`;
    this.#nsIf = `${name}n`;
    this.hostAddr = `10.200.${octet}.1`;
    this.nsAddr = `10.200.${octet}.2`;
  }

  /**
   * Creates the namespace, the pair and the loss rules (`percent` each way). Resolves with the
   * reason as a string when this machine cannot (not root, no `ip` or `nft`, namespaces refused).
   */
  static create(percent: number): LossyNamespace | string {
    if (process.platform !== "linux") return `not Linux (${process.platform})`;
    if (process.getuid?.() !== 0) {
      return "not running as root (network namespaces need it)";
    }
    for (const [tool, pkg] of [["ip", "iproute2"], ["nft", "nftables"]]) {
      try {
        execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
      } catch {
        return `\`${tool}\` not found (apt-get install ${pkg})`;
      }
    }
    const name = `nxl${process.pid.toString(36)}`.slice(0, 12);
    // A /30 of 10.200.0.0/16 that no interface here uses yet.
    let octet = -1;
    for (let i = 0; i < 256; i++) {
      const o = (process.pid + i) % 256;
      if (
        run("ip", ["-o", "addr", "show", "to", `10.200.${o}.0/30`]).trim() ===
          ""
      ) {
        octet = o;
        break;
      }
    }
    if (octet < 0) return "no free /30 in 10.200.0.0/16";
    const ns = new LossyNamespace(name, octet);
    try {
      ns.#setUp(percent);
    } catch (err) {
      ns.destroy();
      const e = err as { stderr?: string; message: string };
      return `cannot set up a network namespace: ${(e.stderr || e.message).trim()}`;
    }
    return ns;
  }

  #setUp(percent: number): void {
    const inNs = (...args: string[]) => run("ip", ["netns", "exec", this.name, ...args]);
    run("ip", ["netns", "add", this.name]);
    run("ip", [
      "link",
      "add",
      this.#hostIf,
      "type",
      "veth",
      "peer",
      "name",
      this.#nsIf,
    ]);
    run("ip", ["link", "set", this.#nsIf, "netns", this.name]);
    run("ip", ["addr", "add", `${this.hostAddr}/30`, "dev", this.#hostIf]);
    run("ip", ["link", "set", this.#hostIf, "up"]);
    inNs("ip", "addr", "add", `${this.nsAddr}/30`, "dev", this.#nsIf);
    inNs("ip", "link", "set", this.#nsIf, "up");
    inNs("ip", "link", "set", "lo", "up");
    const p = Math.round(percent);
    // The first rule of each chain counts every packet, the second drops p % of them.
    run(
      "ip",
      ["netns", "exec", this.name, "nft", "-f", "-"],
      [
        `table inet ${TABLE} {`,
        `  chain input {`,
        `    type filter hook input priority 0; policy accept;`,
        `    iifname "${this.#nsIf}" counter`,
        `    iifname "${this.#nsIf}" numgen random mod 100 < ${p} counter drop`,
        `  }`,
        `  chain output {`,
        `    type filter hook output priority 0; policy accept;`,
        `    oifname "${this.#nsIf}" counter`,
        `    oifname "${this.#nsIf}" numgen random mod 100 < ${p} counter drop`,
        `  }`,
        `}`,
        "",
      ].join("\n"),
    );
  }

  /** What the loss rules counted: `in` = towards the namespace, `out` = from it. */
  counts(): { in: LossCounts; out: LossCounts } {
    const json = JSON.parse(
      run("ip", [
        "netns",
        "exec",
        this.name,
        "nft",
        "-j",
        "list",
        "table",
        "inet",
        TABLE,
      ]),
    ) as {
      nftables: {
        rule?: { chain: string; expr: { counter?: { packets: number } }[] };
      }[];
    };
    const counters: Record<string, number[]> = { input: [], output: [] };
    for (const item of json.nftables) {
      const rule = item.rule;
      if (!rule) continue;
      const c = rule.expr.find((e) => e.counter !== undefined)?.counter;
      if (c) counters[rule.chain]?.push(c.packets);
    }
    const pick = (chain: string): LossCounts => ({
      packets: counters[chain]![0] ?? 0,
      dropped: counters[chain]![1] ?? 0,
    });
    return { in: pick("input"), out: pick("output") };
  }

  /** Removes the rules, the pair and the namespace; safe to call twice and after a failure. */
  destroy(): void {
    if (this.#destroyed) return;
    this.#destroyed = true;
    const quiet = (args: string[]) => {
      try {
        run("ip", args);
      } catch { /* already gone */ }
    };
    quiet([
      "netns",
      "exec",
      this.name,
      "nft",
      "delete",
      "table",
      "inet",
      TABLE,
    ]);
    quiet(["link", "del", this.#hostIf]);
    quiet(["netns", "del", this.name]);
  }
}
