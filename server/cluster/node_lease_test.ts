import assert from "node:assert/strict";
import { join } from "node:path";
import { validateConfig } from "../config/config.ts";
import { Logger } from "../log/log.ts";
import { waitFor } from "../net/_test_util.ts";
import type { Store } from "../store/store.ts";
import { openStore } from "../store/store_factory.ts";
import { NodeLeaseKeeper } from "./node_lease.ts";

async function withStore(fn: (store: Store, lines: Record<string, unknown>[]) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-lease-" });
  const lines: Record<string, unknown>[] = [];
  const log = new Logger("debug", {}, (line) => lines.push(JSON.parse(line)));
  const config = validateConfig({ data_dir: join(dir, "data") });
  await Deno.mkdir(config.data_dir);
  const store = await openStore(config, { log });
  try {
    await fn(store, lines);
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const NODE = { nodeId: "node-1", address: "127.0.0.1:7443", version: "0.1.0" };

Deno.test("a node's lease is taken at start, renewed while it runs and released at stop", async () => {
  await withStore(async (store, lines) => {
    const before = Date.now();
    const lease = await NodeLeaseKeeper.start({
      ...NODE,
      store,
      leaseMs: 60_000,
      renewMs: 20,
      log: new Logger("debug", {}, (l) => lines.push(JSON.parse(l))),
    });
    const [first] = await store.query("node.list", {});
    assert.equal(first.node_id, "node-1");
    assert.equal(first.address, "127.0.0.1:7443");
    assert.ok(first.lease_until >= before + 60_000);
    assert.equal(lease.held, true);
    await waitFor(async () => {
      const [row] = await store.query("node.list", {});
      return row.renewed_at > first.renewed_at;
    }, "a renewal");
    const [renewed] = await store.query("node.list", {});
    assert.equal(renewed.started_at, first.started_at, "a renewal keeps the start");
    await lease.stop();
    assert.deepEqual(await store.query("node.list", {}), []);
    assert.equal(lines.filter((l) => l.level === "warn" || l.level === "error").length, 0);
  });
});

Deno.test("renewals that fail until the lease runs out call onLost once", async () => {
  await withStore(async (store, lines) => {
    let lost = 0;
    let failing = false;
    const flaky: Pick<Store, "run"> = {
      run: ((op, args) =>
        failing ? Promise.reject(new Error("store down")) : store.run(op, args)) as Store["run"],
    };
    const lease = await NodeLeaseKeeper.start({
      ...NODE,
      store: flaky,
      leaseMs: 150,
      renewMs: 20,
      onLost: () =>
        lost++,
      log: new Logger("debug", {}, (l) => lines.push(JSON.parse(l))),
    });
    failing = true;
    await waitFor(() => lost > 0, "the lease to be lost");
    assert.equal(lease.held, false);
    assert.ok(lines.some((l) => l.msg === "Node lease renewal failed"));
    // Still failing: onLost does not fire again.
    const failures = lines.filter((l) => l.msg === "Node lease renewal failed").length;
    await waitFor(
      () => lines.filter((l) => l.msg === "Node lease renewal failed").length > failures + 2,
      "more failed renewals",
    );
    assert.equal(lost, 1);
    // The store comes back: the lease is taken again.
    failing = false;
    await waitFor(() => lease.held, "the lease to be taken again");
    assert.ok(lines.some((l) => l.msg === "Node lease taken again"));
    await lease.stop();
    assert.deepEqual(await store.query("node.list", {}), []);
  });
});
