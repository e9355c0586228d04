import assert from "node:assert/strict";
import { contractTest, T0 } from "./_stores.ts";

// The lockouts' shared failure counters (issue 30 item 4) on both stores: count, lock, ignore
// failures while locked, start afresh after the lock or the window, clear by key and prefix.

const PAIR = { max: 3, windowMs: 1000, lockMs: 5000 };
const key = (...parts: string[]) => JSON.stringify(["login", ...parts]);

contractTest(
  "failures lock a key at the limit and are not counted while it is locked",
  async (s) => {
    const pair = { ...PAIR, key: key("pair", "alice", "10.0.0.1") };
    const total = { max: 4, windowMs: 10_000, lockMs: 20_000, key: key("endpoint", "alice") };
    const rules = [pair, total];
    assert.deepEqual(await s.run("lockout.fail", { rules }, T0), [null, null]);
    assert.deepEqual(await s.run("lockout.fail", { rules }, T0 + 10), [null, null]);
    assert.deepEqual(await s.query("lockout.state", { keys: [pair.key], now: T0 + 10 }), []);
    assert.deepEqual(await s.run("lockout.fail", { rules }, T0 + 20), [T0 + 5020, null]);
    assert.deepEqual(
      await s.query("lockout.state", { keys: [total.key, pair.key], now: T0 + 30 }),
      [
        { key: pair.key, lockedUntil: T0 + 5020 },
      ],
    );
    // Locked: not counted under that rule, still counted under the other.
    assert.deepEqual(await s.run("lockout.fail", { rules }, T0 + 40), [null, T0 + 20_040]);
    assert.deepEqual(
      await s.query("lockout.state", { keys: [pair.key, total.key], now: T0 + 50 }),
      [
        { key: total.key, lockedUntil: T0 + 20_040 },
        { key: pair.key, lockedUntil: T0 + 5020 },
      ].sort((a, b) => a.key < b.key ? -1 : 1),
    );
    // The lock ends; the count starts from zero.
    assert.deepEqual(await s.query("lockout.state", { keys: [pair.key], now: T0 + 5020 }), []);
    assert.deepEqual(await s.run("lockout.fail", { rules: [pair] }, T0 + 5020), [null]);
    assert.deepEqual(await s.run("lockout.fail", { rules: [pair] }, T0 + 5021), [null]);
    assert.deepEqual(await s.run("lockout.fail", { rules: [pair] }, T0 + 5022), [T0 + 10_022]);
  },
);

contractTest("a failure counter starts afresh once its window is over", async (s) => {
  const pair = { ...PAIR, key: key("pair", "bob", "10.0.0.2") };
  await s.run("lockout.fail", { rules: [pair] }, T0);
  await s.run("lockout.fail", { rules: [pair] }, T0 + 500);
  // The window began at T0; at T0 + 1000 it is over, so this is failure 1 of a new window.
  assert.deepEqual(await s.run("lockout.fail", { rules: [pair] }, T0 + 1000), [null]);
  assert.deepEqual(await s.run("lockout.fail", { rules: [pair] }, T0 + 1500), [null]);
  assert.deepEqual(await s.run("lockout.fail", { rules: [pair] }, T0 + 1600), [T0 + 6600]);
});

contractTest("lockout.clear forgets keys and every key under a prefix", async (s) => {
  const one = { ...PAIR, max: 1 };
  const a1 = key("pair", "carol", "10.0.0.1");
  const a2 = key("pair", "carol", "10.0.0.2");
  const other = key("pair", "carolyn", "10.0.0.1");
  const total = key("endpoint", "carol");
  for (const k of [a1, a2, other, total]) {
    await s.run("lockout.fail", { rules: [{ ...one, key: k }] }, T0);
  }
  const prefix = key("pair", "carol").slice(0, -1) + ",";
  assert.equal(await s.run("lockout.clear", { keys: [total], prefixes: [prefix] }, T0), 3);
  assert.deepEqual(
    (await s.query("lockout.state", { keys: [a1, a2, other, total], now: T0 })).map((r) => r.key),
    [other],
  );
  assert.equal(await s.codeOf("lockout.clear", { keys: [], prefixes: [""] }, T0), "busy");
  assert.equal(
    await s.codeOf("lockout.fail", { rules: [{ ...one, key: "k", max: 0 }] }),
    "busy",
  );
});

contractTest("lockout.fail prunes counters whose window or lock is over", async (s) => {
  for (let i = 0; i < 5; i++) {
    await s.run("lockout.fail", { rules: [{ ...PAIR, key: key("pair", "d", `ip${i}`) }] }, T0);
  }
  await s.run("lockout.fail", { rules: [{ ...PAIR, key: key("pair", "e", "ip") }] }, T0 + 2000);
  const rows = await s.rows<{ key: string }>("SELECT key FROM failure_counters ORDER BY key");
  assert.deepEqual(rows.map((r) => r.key), [key("pair", "e", "ip")]);
});
