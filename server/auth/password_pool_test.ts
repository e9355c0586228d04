import assert from "node:assert/strict";
import { DEFAULT_ARGON2_PARAMS, PasswordPool, PoolBusyError } from "./password_pool.ts";

// Cheap costs keep the suite fast; one test below uses the real spec 12 parameters.
const CHEAP = { memoryCost: 64, timeCost: 1 };

Deno.test("hash() with default parameters writes argon2id m=19456 t=2 p=1 in PHC form", async () => {
  assert.deepEqual(DEFAULT_ARGON2_PARAMS, { memoryCost: 19456, timeCost: 2 });
  const pool = new PasswordPool({ size: 1 });
  const phc = await pool.hash("correct horse battery staple");
  assert.match(phc, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]+\$[A-Za-z0-9+/]+$/);
  assert.equal(await pool.verify(phc, "correct horse battery staple"), true);
  assert.equal(pool.needsRehash(phc), false);
});

Deno.test("hash() salts every hash, so equal passwords give different strings", async () => {
  const pool = new PasswordPool({ size: 2, params: CHEAP });
  const [a, b] = await Promise.all([pool.hash("same"), pool.hash("same")]);
  assert.match(a, /^\$argon2id\$v=19\$m=64,t=1,p=1\$/);
  assert.notEqual(a, b);
});

Deno.test("verify() accepts the right password and rejects a wrong one", async () => {
  const pool = new PasswordPool({ params: CHEAP });
  const phc = await pool.hash("s3cret-密码");
  const cases: Array<[string, boolean]> = [
    ["s3cret-密码", true],
    ["s3cret-密", false],
    ["S3cret-密码", false],
    ["", false],
  ];
  for (const [password, want] of cases) {
    assert.equal(await pool.verify(phc, password), want, password);
  }
});

Deno.test("verify() returns false, not an error, for malformed hashes", async () => {
  const pool = new PasswordPool({ size: 1, params: CHEAP });
  const good = await pool.hash("pw");
  const malformed = [
    "",
    "garbage",
    "$2b$10$abcdefghijklmnopqrstuuABCDEFGHIJKLMNOPQRSTUVWXYZ01234",
    "$argon2id$v=19$m=64,t=1,p=1$xx$yy",
    "$argon2id$v=19$m=64,t=1,p=1$",
    good.slice(0, good.lastIndexOf("$")),
  ];
  for (const phc of malformed) {
    assert.equal(await pool.verify(phc, "pw"), false, phc);
  }
  // A failed computation gives its slot back.
  assert.equal(pool.active, 0);
  assert.equal(pool.queued, 0);
});

Deno.test("needsRehash() is true when the stored parameters differ from the current ones", async () => {
  const cheap = new PasswordPool({ params: CHEAP });
  const dearer = new PasswordPool({ params: { memoryCost: 128, timeCost: 1 } });
  const slower = new PasswordPool({ params: { memoryCost: 64, timeCost: 2 } });
  const phc = await cheap.hash("pw");
  assert.equal(cheap.needsRehash(phc), false);
  assert.equal(dearer.needsRehash(phc), true);
  assert.equal(slower.needsRehash(phc), true);
  // Another argon2 variant and another parallelism also count as different parameters.
  const salt = "c29tZXNhbHRzb21lc2FsdA";
  const digest = "aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g";
  assert.equal(cheap.needsRehash(`$argon2i$v=19$m=64,t=1,p=1$${salt}$${digest}`), true);
  assert.equal(cheap.needsRehash(`$argon2id$v=19$m=64,t=1,p=2$${salt}$${digest}`), true);
  assert.equal(cheap.needsRehash(`$argon2id$v=16$m=64,t=1,p=1$${salt}$${digest}`), true);
  assert.equal(cheap.needsRehash(`$argon2id$v=19$m=64,t=1,p=1$${salt}$${digest}`), false);
  assert.equal(cheap.needsRehash("garbage"), true);
});

Deno.test("a pool of size 1 runs one computation at a time and serves waiters in order", async () => {
  const pool = new PasswordPool({ size: 1, params: CHEAP });
  const seen: number[] = [];
  const finished: number[] = [];
  const jobs = [0, 1, 2, 3].map((i) =>
    pool.hash(`pw${i}`).then(() => {
      seen.push(pool.active);
      finished.push(i);
    })
  );
  assert.equal(pool.active, 1);
  assert.equal(pool.queued, 3);
  await Promise.all(jobs);
  assert.ok(seen.every((n) => n <= 1), `active went above 1: ${seen}`);
  assert.deepEqual(finished, [0, 1, 2, 3]);
  assert.equal(pool.active, 0);
  assert.equal(pool.queued, 0);
});

Deno.test("a pool of size 2 never runs more than 2 computations", async () => {
  const pool = new PasswordPool({ size: 2, params: CHEAP });
  const phc = await pool.hash("pw");
  const seen: number[] = [];
  const jobs = Array.from({ length: 7 }, (_, i) => {
    const job = i % 2 === 0 ? pool.hash(`pw${i}`) : pool.verify(phc, "pw");
    seen.push(pool.active);
    return job.then(() => seen.push(pool.active));
  });
  assert.equal(pool.active, 2);
  assert.equal(pool.queued, 5);
  await Promise.all(jobs);
  assert.ok(seen.every((n) => n <= 2), `active went above 2: ${seen}`);
  assert.equal(pool.active, 0);
});

Deno.test("the pool constructor rejects a size or cost that is not a positive integer", () => {
  assert.throws(() => new PasswordPool({ size: 0 }), RangeError);
  assert.throws(() => new PasswordPool({ size: 1.5 }), RangeError);
  assert.throws(() => new PasswordPool({ params: { memoryCost: 0, timeCost: 1 } }), RangeError);
  assert.ok(new PasswordPool().active === 0);
});

Deno.test("verifyDummy() runs one real argon2 check with the current parameters and is always false", async () => {
  const pool = new PasswordPool({ params: { memoryCost: 1024, timeCost: 1 } });
  const dummy = await pool.dummyHash();
  assert.match(dummy, /^\$argon2id\$v=19\$m=1024,t=1,p=1\$/);
  assert.equal(pool.needsRehash(dummy), false, "same cost as a real hash");
  assert.equal(await pool.dummyHash(), dummy, "made once");
  const before = pool.verifications;
  assert.equal(await pool.verifyDummy("anything"), false);
  assert.equal(await pool.verifyDummy(""), false);
  assert.equal(pool.verifications - before, 2);
});

Deno.test("checks with an owner wait only within the queue bound and, once it is half full, the owner's share; the rest are refused at once (issue 28)", async () => {
  const pool = new PasswordPool({ size: 1, params: CHEAP, maxQueued: 4, maxQueuedPerOwner: 1 });
  const phc = await pool.hash("pw");
  const running = pool.verify(phc, "pw", "a"); // takes the only slot
  // "a" may borrow past its share of 1 while the queue is less than half full (2 of 4).
  const queued = [pool.verify(phc, "pw", "a"), pool.verify(phc, "pw", "a")];
  await assert.rejects(pool.verify(phc, "pw", "a"), PoolBusyError);
  queued.push(pool.verify(phc, "pw", "b"), pool.verify(phc, "pw", "c"));
  // The queue is full for everyone with an owner.
  await assert.rejects(pool.verify(phc, "pw", "d"), PoolBusyError);
  // Work without an owner (an authenticated admin) is never refused.
  queued.push(pool.verify(phc, "pw"));
  assert.deepEqual(await Promise.all([running, ...queued]), Array(6).fill(true));
  // Everything drained: owners may queue again.
  assert.equal(await pool.verify(phc, "pw", "a"), true);
});

Deno.test("a free slot goes to an owner with nothing running before a busy owner's next check (issue 28)", async () => {
  const pool = new PasswordPool({ size: 1, params: CHEAP });
  const phc = await pool.hash("pw");
  const order: string[] = [];
  const run = (owner: string) => pool.verify(phc, "pw", owner).then(() => order.push(owner));
  const all = [run("flood"), run("flood"), run("flood"), run("other")];
  await Promise.all(all);
  assert.deepEqual(order, ["flood", "other", "flood", "flood"]);
});
