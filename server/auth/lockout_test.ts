import assert from "node:assert/strict";
import {
  FailureLimiter,
  IpLockouts,
  type LockoutEvents,
  LoginLockouts,
  type SharedCounters,
  type SharedRule,
  TalkLockouts,
} from "./lockout.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** A hand-driven clock; tests move time, nothing sleeps. */
class FakeClock {
  now = 1_750_000_000_000;
  read = (): number => this.now;
  advance(ms: number): void {
    this.now += ms;
  }
}

/** One spec 5 rule seen from outside: how to fail it, how to ask whether it is locked. */
interface Rule {
  name: string;
  max: number;
  windowMs: number;
  lockMs: number;
  make(clock: () => number): { fail(): boolean; check(): boolean };
}

function counter(): () => number {
  let i = 0;
  return () => i++;
}

const RULES: Rule[] = [
  {
    name: "FailureLimiter 3 in 1 s",
    max: 3,
    windowMs: 1000,
    lockMs: 2000,
    make(clock) {
      const l = new FailureLimiter({ maxFailures: 3, windowMs: 1000, lockMs: 2000, clock });
      return { fail: () => l.recordFailure("k"), check: () => l.isLocked("k") };
    },
  },
  {
    name: "login per endpoint + IP",
    max: 10,
    windowMs: 5 * MINUTE,
    lockMs: 5 * MINUTE,
    make(clock) {
      const l = new LoginLockouts({ clock });
      return { fail: () => l.fail("e_1", "192.0.2.1"), check: () => l.check("e_1", "192.0.2.1") };
    },
  },
  {
    name: "login per endpoint, one new IP per failure",
    max: 50,
    windowMs: HOUR,
    lockMs: HOUR,
    make(clock) {
      const l = new LoginLockouts({ clock });
      const next = counter();
      return {
        fail: () => l.fail("e_1", `10.0.${next()}.1`),
        check: () => l.check("e_1", "198.51.100.7"),
      };
    },
  },
  {
    name: "talk password per sender + target",
    max: 10,
    windowMs: 5 * MINUTE,
    lockMs: 5 * MINUTE,
    make(clock) {
      const l = new TalkLockouts({ clock });
      return { fail: () => l.fail("a", "b"), check: () => l.check("a", "b") };
    },
  },
  {
    name: "talk password per target, one new sender per failure",
    max: 50,
    windowMs: HOUR,
    lockMs: HOUR,
    make(clock) {
      const l = new TalkLockouts({ clock });
      const next = counter();
      return { fail: () => l.fail(`s${next()}`, "b"), check: () => l.check("fresh", "b") };
    },
  },
  {
    name: "admin login or registration code per IP",
    max: 10,
    windowMs: 5 * MINUTE,
    lockMs: 5 * MINUTE,
    make(clock) {
      const l = new IpLockouts({ clock, kind: "admin" });
      return { fail: () => l.fail("203.0.113.9"), check: () => l.check("203.0.113.9") };
    },
  },
];

for (const rule of RULES) {
  Deno.test(`${rule.name}: ${rule.max - 1} failures do not lock, failure ${rule.max} does`, () => {
    const clock = new FakeClock();
    const r = rule.make(clock.read);
    for (let i = 1; i < rule.max; i++) {
      assert.equal(r.fail(), false, `failure ${i}`);
      clock.advance(1);
    }
    assert.equal(r.check(), false);
    assert.equal(r.fail(), true);
    assert.equal(r.check(), true);
  });

  Deno.test(`${rule.name}: the lock ends after its time and the count starts fresh`, () => {
    const clock = new FakeClock();
    const r = rule.make(clock.read);
    for (let i = 0; i < rule.max; i++) r.fail();
    assert.equal(r.check(), true);
    clock.advance(rule.lockMs - 1);
    assert.equal(r.check(), true);
    clock.advance(1);
    assert.equal(r.check(), false);
    for (let i = 1; i < rule.max; i++) assert.equal(r.fail(), false, `fresh failure ${i}`);
    assert.equal(r.check(), false);
    assert.equal(r.fail(), true);
  });

  Deno.test(`${rule.name}: failures while locked are not counted and do not extend it`, () => {
    const clock = new FakeClock();
    const r = rule.make(clock.read);
    for (let i = 0; i < rule.max; i++) r.fail();
    clock.advance(rule.lockMs - 1);
    for (let i = 0; i < rule.max; i++) assert.equal(r.fail(), false);
    clock.advance(1);
    assert.equal(r.check(), false);
  });

  Deno.test(`${rule.name}: failures older than the window no longer count`, () => {
    const clock = new FakeClock();
    const r = rule.make(clock.read);
    for (let i = 1; i < rule.max; i++) r.fail();
    // Exactly one window later they have slid out: this failure is the first of a new count.
    clock.advance(rule.windowMs);
    assert.equal(r.fail(), false);
    for (let i = 2; i < rule.max; i++) assert.equal(r.fail(), false, `failure ${i}`);
    assert.equal(r.check(), false);
    assert.equal(r.fail(), true);
  });

  Deno.test(`${rule.name}: the last failure inside the window still locks`, () => {
    const clock = new FakeClock();
    const r = rule.make(clock.read);
    for (let i = 1; i < rule.max; i++) r.fail();
    clock.advance(rule.windowMs - 1);
    assert.equal(r.fail(), true);
    assert.equal(r.check(), true);
  });
}

Deno.test("FailureLimiter slides the window one failure at a time", () => {
  const clock = new FakeClock();
  const l = new FailureLimiter({ maxFailures: 3, windowMs: 1000, lockMs: 5000, clock: clock.read });
  l.recordFailure("k"); // t=0
  clock.advance(600);
  l.recordFailure("k"); // t=600
  clock.advance(400);
  // t=1000: the failure at 0 has left the window, so this is the second, not the third.
  assert.equal(l.recordFailure("k"), false);
  clock.advance(599);
  // t=1599: failures at 600, 1000 and now are within 1000 ms.
  assert.equal(l.recordFailure("k"), true);
  assert.equal(l.lockedUntil("k"), clock.now + 5000);
});

Deno.test("FailureLimiter reports when a lock ends and forgets expired locks", () => {
  const clock = new FakeClock();
  const l = new FailureLimiter({ maxFailures: 1, windowMs: 1000, lockMs: 5000, clock: clock.read });
  assert.equal(l.lockedUntil("k"), null);
  const start = clock.now;
  assert.equal(l.recordFailure("k"), true);
  assert.equal(l.lockedUntil("k"), start + 5000);
  clock.advance(5000);
  assert.equal(l.lockedUntil("k"), null);
  assert.equal(l.size, 0);
});

Deno.test("FailureLimiter clear() and clearPrefix() forget counts and locks", () => {
  const clock = new FakeClock();
  const l = new FailureLimiter({ maxFailures: 2, windowMs: 1000, lockMs: 1000, clock: clock.read });
  for (const key of ["a:1", "a:2", "ab:1", "b:1"]) {
    l.recordFailure(key);
    l.recordFailure(key);
  }
  l.clear("b:1");
  assert.equal(l.isLocked("b:1"), false);
  assert.equal(l.recordFailure("b:1"), false, "the count started over");
  l.clearPrefix("a:");
  assert.equal(l.isLocked("a:1"), false);
  assert.equal(l.isLocked("a:2"), false);
  assert.equal(l.isLocked("ab:1"), true);
});

Deno.test("FailureLimiter keeps at most maxKeys keys and drops the least recently failed", () => {
  const clock = new FakeClock();
  const l = new FailureLimiter({
    maxFailures: 2,
    windowMs: 10_000,
    lockMs: 10_000,
    clock: clock.read,
    maxKeys: 3,
  });
  l.recordFailure("a");
  l.recordFailure("b");
  l.recordFailure("c");
  l.recordFailure("a"); // locks "a" and makes it the most recent
  l.recordFailure("d"); // drops "b"
  assert.equal(l.size, 3);
  assert.equal(l.isLocked("a"), true);
  assert.equal(l.recordFailure("c"), true, "c kept its first failure");
  assert.equal(l.recordFailure("b"), false, "b was forgotten, so this is its first failure");
  assert.equal(l.size, 3);
});

Deno.test("FailureLimiter rejects options that are not positive", () => {
  const ok = { maxFailures: 1, windowMs: 1, lockMs: 1 };
  assert.throws(() => new FailureLimiter({ ...ok, maxFailures: 0 }), RangeError);
  assert.throws(() => new FailureLimiter({ ...ok, windowMs: -1 }), RangeError);
  assert.throws(() => new FailureLimiter({ ...ok, lockMs: Number.NaN }), RangeError);
  assert.throws(() => new FailureLimiter({ ...ok, maxKeys: 0 }), RangeError);
  assert.equal(new FailureLimiter(ok).size, 0);
});

Deno.test("a login lock on one IP leaves other IPs and other endpoints alone", () => {
  const clock = new FakeClock();
  const l = new LoginLockouts({ clock: clock.read });
  for (let i = 0; i < 10; i++) l.fail("e_1", "192.0.2.1");
  assert.equal(l.check("e_1", "192.0.2.1"), true);
  assert.equal(l.check("e_1", "192.0.2.2"), false);
  assert.equal(l.check("e_2", "192.0.2.1"), false);
  assert.equal(l.lockedUntil("e_1", "192.0.2.1"), clock.now + 5 * MINUTE);
  assert.equal(l.lockedUntil("e_1", "192.0.2.2"), null);
});

Deno.test("50 failures from many IPs pause password login for the endpoint for 1 hour", () => {
  const clock = new FakeClock();
  const l = new LoginLockouts({ clock: clock.read });
  // Five IPs, ten failures each: every pair locks, and the 50th failure locks the endpoint.
  let locks = 0;
  for (let ip = 0; ip < 5; ip++) {
    for (let i = 0; i < 10; i++) if (l.fail("e_1", `10.0.0.${ip}`)) locks++;
  }
  assert.equal(locks, 5);
  assert.equal(l.check("e_1", "198.51.100.1"), true, "a new IP is refused too");
  assert.equal(l.check("e_2", "198.51.100.1"), false);
  clock.advance(5 * MINUTE);
  assert.equal(l.check("e_1", "10.0.0.0"), true, "the endpoint lock outlasts the pair lock");
  assert.equal(l.lockedUntil("e_1", "10.0.0.0"), clock.now - 5 * MINUTE + HOUR);
  clock.advance(HOUR - 5 * MINUTE);
  assert.equal(l.check("e_1", "10.0.0.0"), false);
});

Deno.test("unlock() clears both login locks of one endpoint and no other", () => {
  const clock = new FakeClock();
  const l = new LoginLockouts({ clock: clock.read });
  for (let i = 0; i < 50; i++) l.fail("e_1", `10.0.${Math.floor(i / 10)}.1`);
  for (let i = 0; i < 10; i++) l.fail("e_10", "10.0.0.1");
  assert.equal(l.check("e_1", "10.0.0.1"), true);
  l.unlock("e_1");
  assert.equal(l.check("e_1", "10.0.0.1"), false);
  assert.equal(l.check("e_1", "198.51.100.1"), false);
  assert.equal(l.check("e_10", "10.0.0.1"), true, "an id that merely starts the same is kept");
  // Counts start over too: nine more failures from the old IP do not lock.
  for (let i = 0; i < 9; i++) assert.equal(l.fail("e_1", "10.0.0.1"), false);
});

Deno.test("a talk password lock on one sender leaves other senders and targets alone", () => {
  const clock = new FakeClock();
  const l = new TalkLockouts({ clock: clock.read });
  for (let i = 0; i < 10; i++) l.fail("a", "b");
  assert.equal(l.check("a", "b"), true);
  assert.equal(l.check("c", "b"), false);
  assert.equal(l.check("a", "c"), false);
  assert.equal(l.check("b", "a"), false);
});

Deno.test("clearTarget() ends every talk password lock on that target", () => {
  const clock = new FakeClock();
  const l = new TalkLockouts({ clock: clock.read });
  for (let i = 0; i < 50; i++) l.fail(`s${i % 5}`, "b");
  for (let i = 0; i < 10; i++) l.fail("s0", "bb");
  assert.equal(l.check("new", "b"), true);
  l.clearTarget("b");
  assert.equal(l.check("new", "b"), false);
  assert.equal(l.check("s0", "b"), false);
  assert.equal(l.check("s0", "bb"), true, "another target keeps its lock");
});

Deno.test("IP lockouts count each IP on its own", () => {
  const clock = new FakeClock();
  const l = new IpLockouts({ clock: clock.read, kind: "admin" });
  for (let i = 0; i < 10; i++) l.fail("203.0.113.9");
  assert.equal(l.check("203.0.113.9"), true);
  assert.equal(l.check("203.0.113.10"), false);
  assert.equal(l.lockedUntil("203.0.113.9"), clock.now + 5 * MINUTE);
});

Deno.test("the admin account rule locks after 50 failures from 50 addresses, for an hour, and only attempts that name the account (issue 28)", () => {
  const clock = new FakeClock();
  const l = new IpLockouts({ clock: clock.read, kind: "admin", accountRule: true });
  for (let i = 0; i < 49; i++) l.begin(`198.51.100.${i}`, "admin")!.fail("wrong_password");
  assert.equal(l.accountLockedUntil("admin"), null);
  l.begin("198.51.100.200", "admin")!.fail("wrong_password");
  assert.equal(l.accountLockedUntil("admin"), clock.now + 60 * MINUTE);
  assert.equal(l.lastAccountLock, clock.now);
  assert.equal(l.begin("192.0.2.1", "admin"), null, "a fresh address is refused for the account");
  assert.equal(l.lockedUntil("192.0.2.1", "admin"), clock.now + 60 * MINUTE);
  assert.notEqual(l.begin("192.0.2.1"), null, "an API token check names no account");
  clock.now += 60 * MINUTE;
  l.sweep();
  assert.notEqual(l.begin("192.0.2.1", "admin"), null);
});

Deno.test("FailureLimiter counts attempts in flight, so no more than the limit can be checked at once", () => {
  const clock = new FakeClock();
  const l = new FailureLimiter({ maxFailures: 3, windowMs: 1000, lockMs: 1000, clock: clock.read });
  l.recordFailure("k");
  l.reserve("k");
  assert.equal(l.hasRoom("k"), true, "one failure and one in flight leave one slot");
  l.reserve("k");
  assert.equal(l.hasRoom("k"), false, "one failure and two in flight fill the limit");
  assert.equal(l.isLocked("k"), false, "full is not locked");
  assert.equal(l.settle("k", false), false);
  assert.equal(l.hasRoom("k"), true, "a released attempt frees its slot");
  assert.equal(l.settle("k", true), false);
  assert.equal(l.hasRoom("k"), true);
  l.reserve("k");
  assert.equal(l.settle("k", true), true, "the third failure locks");
  assert.equal(l.hasRoom("k"), false);
});

Deno.test("an Attempt settles once and reserves under both login rules", () => {
  const clock = new FakeClock();
  const l = new LoginLockouts({ clock: clock.read });
  const attempts = [];
  for (let i = 0; i < 10; i++) {
    const a = l.begin("e_1", "192.0.2.1");
    assert.ok(a, `attempt ${i + 1} may start`);
    attempts.push(a);
  }
  assert.equal(l.begin("e_1", "192.0.2.1"), null, "the eleventh concurrent attempt is refused");
  assert.equal(l.check("e_1", "192.0.2.1"), false, "refused for being full, not locked");
  assert.ok(l.begin("e_1", "192.0.2.2"), "another IP has its own slots");
  attempts[0].release();
  attempts[0].fail(); // ignored: already settled
  const again = l.begin("e_1", "192.0.2.1");
  assert.ok(again, "a released slot is free again");
  attempts.push(again);
  let locks = 0;
  for (const a of attempts.slice(1)) if (a.fail()) locks++;
  assert.equal(locks, 1, "the tenth failure locks, once");
  assert.equal(l.check("e_1", "192.0.2.1"), true);
});

Deno.test("unlock() during attempts in flight lets them settle without locking again at once", () => {
  const clock = new FakeClock();
  const l = new IpLockouts({ clock: clock.read, kind: "admin" });
  for (let i = 0; i < 9; i++) l.fail("203.0.113.9");
  const a = l.begin("203.0.113.9");
  assert.ok(a);
  const t = new TalkLockouts({ clock: clock.read });
  const b = t.begin("s", "b");
  assert.ok(b);
  t.clearTarget("b");
  assert.equal(b.fail(), false, "one failure after the clear does not lock");
  assert.equal(a.fail(), true);
});

/** Records lockout events as short strings. */
function recorder(): { events: LockoutEvents; seen: string[] } {
  const seen: string[] = [];
  const fmt = (who: Record<string, string | undefined>) =>
    Object.entries(who).map(([k, v]) => `${k}=${v}`).join(",");
  return {
    seen,
    events: {
      failure: (kind, reason, who) => seen.push(`fail ${kind} ${reason} ${fmt({ ...who })}`),
      lockStarted: (kind, rule, who) => seen.push(`start ${kind} ${rule} ${fmt({ ...who })}`),
      lockEnded: (kind, rule, who, reason) =>
        seen.push(`end ${kind} ${rule} ${fmt({ ...who })} ${reason}`),
    },
  };
}

Deno.test("login lockouts report each failure, each refusal and the lock start, and sweep() reports the end when it is due", () => {
  const clock = new FakeClock();
  const { events, seen } = recorder();
  const l = new LoginLockouts({ clock: clock.read, events });
  for (let i = 0; i < 10; i++) l.fail("e_1", "192.0.2.1", i === 0 ? "unknown_id" : undefined);
  assert.equal(l.begin("e_1", "192.0.2.1"), null);
  assert.deepEqual(seen, [
    "fail login unknown_id endpoint=e_1,ip=192.0.2.1",
    ...Array(9).fill("fail login wrong_password endpoint=e_1,ip=192.0.2.1"),
    "start login pair endpoint=e_1,ip=192.0.2.1",
    "fail login locked endpoint=e_1,ip=192.0.2.1",
  ]);
  seen.length = 0;
  clock.advance(5 * MINUTE - 1);
  l.sweep();
  assert.deepEqual(seen, [], "not due yet");
  clock.advance(1);
  l.sweep();
  l.sweep();
  assert.deepEqual(seen, ["end login pair endpoint=e_1,ip=192.0.2.1 expired"], "reported once");
});

Deno.test("a full but unlocked rule is reported as busy; clearing a lock reports it ended as cleared", () => {
  const clock = new FakeClock();
  const { events, seen } = recorder();
  const t = new TalkLockouts({ clock: clock.read, events });
  const held = Array.from({ length: 10 }, () => t.begin("s", "b"));
  assert.equal(t.begin("s", "b"), null);
  assert.equal(seen.at(-1), "fail talk busy sender=s,target=b");
  for (const a of held) a!.fail("wrong_password");
  assert.equal(seen.at(-1), "start talk pair sender=s,target=b");
  t.clearTarget("b");
  assert.equal(seen.at(-1), "end talk pair sender=s,target=b cleared");
  const ip = new IpLockouts({ clock: clock.read, events, kind: "registration" });
  for (let i = 0; i < 10; i++) ip.fail("203.0.113.9", "wrong_code");
  assert.equal(seen.at(-1), "start registration ip ip=203.0.113.9");
  clock.advance(5 * MINUTE);
  assert.equal(ip.check("203.0.113.9"), false);
  assert.equal(seen.at(-1), "end registration ip ip=203.0.113.9 expired", "a lazy end is reported");
  ip.sweep();
  assert.equal(seen.filter((x) => x.startsWith("end registration")).length, 1);
});

/** Shared counters in memory, as two nodes of a cluster see them through the store (issue 30). */
class FakeShared implements SharedCounters {
  counts = new Map<string, number>();
  locks = new Map<string, number>();
  constructor(private clock: () => number) {}
  state(keys: string[]): Promise<Map<string, number>> {
    const now = this.clock();
    return Promise.resolve(
      new Map(keys.flatMap((k) => {
        const until = this.locks.get(k);
        return until !== undefined && until > now ? [[k, until] as const] : [];
      })),
    );
  }
  fail(rules: SharedRule[]): Promise<(number | null)[]> {
    const now = this.clock();
    return Promise.resolve(rules.map((r) => {
      if ((this.locks.get(r.key) ?? 0) > now) return null;
      const n = (this.counts.get(r.key) ?? 0) + 1;
      this.counts.set(r.key, n);
      if (n < r.max) return null;
      this.counts.delete(r.key);
      this.locks.set(r.key, now + r.lockMs);
      return now + r.lockMs;
    }));
  }
  clear(keys: string[], prefixes: string[]): Promise<void> {
    for (const m of [this.counts, this.locks]) {
      for (const k of [...m.keys()]) {
        if (keys.includes(k) || prefixes.some((p) => k.startsWith(p))) m.delete(k);
      }
    }
    return Promise.resolve();
  }
}

Deno.test("login lockouts of two nodes with shared counters lock after 10 failures in all", async () => {
  const clock = new FakeClock();
  const shared = new FakeShared(clock.read);
  const nodes = [0, 1].map(() => new LoginLockouts({ clock: clock.read, shared }));
  for (let i = 0; i < 10; i++) {
    const attempt = await nodes[i % 2].acquire("alice", "10.0.0.1");
    assert.ok(attempt !== null, `attempt ${i} may start`);
    attempt.fail();
    await attempt.done();
  }
  for (const n of nodes) assert.equal(await n.acquire("alice", "10.0.0.1"), null);
  assert.equal(await nodes[0].lockedUntilShared("alice", "10.0.0.1"), clock.now + 5 * MINUTE);
  // An unlock on one node reaches the other at its next attempt.
  await nodes[1].unlock("alice");
  assert.equal(nodes[0].check("alice", "10.0.0.1"), true, "still locked in node 0's memory");
  const again = await nodes[0].acquire("alice", "10.0.0.1");
  assert.ok(again !== null, "unlocked through the shared counters");
  again.release();
  assert.deepEqual([...shared.locks.keys()], []);
});

Deno.test("a lock reached through shared counters is reported once, by the node that started it", async () => {
  const clock = new FakeClock();
  const shared = new FakeShared(clock.read);
  const seen: string[] = [];
  const events = (node: number): LockoutEvents => ({
    failure: () => {},
    lockStarted: (_k, rule) => seen.push(`${node} start ${rule}`),
    lockEnded: (_k, rule, _w, reason) => seen.push(`${node} end ${rule} ${reason}`),
  });
  const nodes = [0, 1].map((i) =>
    new LoginLockouts({ clock: clock.read, shared, events: events(i) })
  );
  for (let i = 0; i < 10; i++) {
    const attempt = await nodes[i % 2].acquire("bob", "10.0.0.2");
    attempt!.fail();
    await attempt!.done();
  }
  assert.equal(await nodes[0].acquire("bob", "10.0.0.2"), null, "node 0 sees the lock");
  assert.deepEqual(seen, ["1 start pair"]);
  clock.advance(5 * MINUTE);
  for (const n of nodes) n.sweep();
  assert.deepEqual(seen, ["1 start pair", "1 end pair expired"]);
});

Deno.test("without shared counters acquire() is begin() and done() resolves at once", async () => {
  const locks = new TalkLockouts();
  const attempt = await locks.acquire("s", "t");
  assert.ok(attempt !== null);
  attempt.fail();
  await attempt.done();
  await locks.clearTarget("t");
});
