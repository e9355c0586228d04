/**
 * The harness's opt-in cluster mode (issue 30 item 7): a throwaway PostgreSQL-backed cluster of N
 * `nixmsg serve` nodes (the shipped permissions) with a real nats-server between them, and a real
 * HAProxy (TCP, PROXY v2, round robin) in front. The SDK under test only sees HAProxy's address.
 * Reuses tests/helpers/cluster.ts and tests/helpers/haproxy.ts.
 * @module
 */
import { join } from "node:path";

/** A running cluster behind HAProxy. */
export interface HarnessCluster {
  /** "127.0.0.1:port" of HAProxy: the one address the SDK talks to. */
  readonly front: string;
  /** "127.0.0.1:port" of node 1 (admin commands go there). */
  readonly node1: string;
  readonly adminPassword: string;
  readonly pids: number[];
  readonly dataDirs: string[];
  /** Settles when any node exits. */
  readonly exited: Promise<void>;
  /**
   * Stops HAProxy, the nodes, and the PostgreSQL it started. With `NIXMSG_HARNESS_LOG_DIR` set,
   * each node's log (JSON lines, then its stderr) is written there first, as
   * `<time>-<pid>-node<i>.jsonl`.
   */
  stop(): Promise<void>;
}

/**
 * Starts PostgreSQL (scripts/test_postgres.sh) unless NIXMSG_TEST_POSTGRES_URL is set (a fresh
 * database on it is used either way), then the cluster and HAProxy. `config` is the node config
 * (the harness's test defaults and `--set` overrides).
 */
export async function startHarnessCluster(
  n: number,
  config: Record<string, unknown>,
  root: string,
): Promise<HarnessCluster> {
  let pgDir: string | null = null;
  const stopPg = async () => {
    if (pgDir === null) return;
    await new Deno.Command("bash", {
      args: [join(root, "scripts/test_postgres.sh"), "stop", pgDir],
      stdout: "null",
      stderr: "null",
    }).output();
    pgDir = null;
  };
  if (!Deno.env.get("NIXMSG_TEST_POSTGRES_URL")) {
    const out = await new Deno.Command("bash", {
      args: [join(root, "scripts/test_postgres.sh"), "start"],
      stdout: "piped",
      stderr: "inherit",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    for (const m of text.matchAll(/export (\w+)=['"]?([^'"\n]*)['"]?/g)) Deno.env.set(m[1], m[2]);
    pgDir = Deno.env.get("NIXMSG_TEST_POSTGRES_DIR") ?? null;
    if (out.code !== 0 || !Deno.env.get("NIXMSG_TEST_POSTGRES_URL")) {
      await stopPg();
      throw new Error(`scripts/test_postgres.sh start failed (${out.code})`);
    }
  }
  // Imported after the URL is in the environment (the test store reads it at load time).
  const { startCluster } = await import("../../tests/helpers/cluster.ts");
  const { startHaproxy } = await import("../../tests/helpers/haproxy.ts");
  const { ADMIN_PASSWORD } = await import("../../tests/helpers/admin.ts");
  const extra = { ...config, trusted_proxies: ["127.0.0.1/32"] };
  let cluster;
  try {
    cluster = await startCluster(n, [], extra);
  } catch (err) {
    await stopPg();
    throw err;
  }
  const cl = cluster;
  const nodes = cl.nodes.map((s) => s!);
  let haproxy;
  try {
    haproxy = await startHaproxy(cl.homes[0].dir, nodes.map((s) => s.port));
  } catch (err) {
    await cl.close().catch(() => {});
    await stopPg();
    throw err;
  }
  const hp = haproxy;
  return {
    front: `127.0.0.1:${hp.port}`,
    node1: nodes[0].addr,
    adminPassword: ADMIN_PASSWORD,
    pids: nodes.map((s) => s.pid),
    dataDirs: cl.homes.map((h) => h.dataDir),
    exited: Promise.race(nodes.map((s) => s.exited)).then(() => {}),
    async stop() {
      await hp.stop().catch(() => {});
      await cl.close().catch((err) => console.error(`harness: cluster close: ${err}`));
      const logDir = Deno.env.get("NIXMSG_HARNESS_LOG_DIR");
      if (logDir) {
        await Deno.mkdir(logDir, { recursive: true });
        const tag = `${Date.now()}-${Deno.pid}`;
        for (const [i, s] of nodes.entries()) {
          await Deno.writeTextFile(
            join(logDir, `${tag}-node${i + 1}.jsonl`),
            s.logs.map((r) => JSON.stringify(r)).join("\n") + "\n" + s.stderr(),
          );
        }
      }
      await stopPg();
    },
  };
}
