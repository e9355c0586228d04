import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "yaml";
import {
  ConfigError,
  type ConfigIssue,
  DEFAULT_CONFIG,
  loadConfig,
  parseConfig,
  resolveConfigPath,
  validateConfig,
} from "./config.ts";

/** Runs `fn` and returns the issues of the ConfigError it throws. */
function issuesOf(fn: () => unknown): readonly ConfigIssue[] {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ConfigError, `expected a ConfigError, got ${e}`);
    return e.issues;
  }
  assert.fail("expected a ConfigError");
}

const BAD: { name: string; raw: unknown; issues: ConfigIssue[] }[] = [
  {
    name: "max_body_bytes above the spec cap", // spec 11.1: only lowering is allowed
    raw: { limits: { max_body_bytes: 300000 } },
    issues: [{
      path: "limits.max_body_bytes",
      reason: "must be at most 262144 (the spec only allows lowering it)",
    }],
  },
  {
    name: "an unknown nested key",
    raw: { limits: { foo: 1 } },
    issues: [{ path: "limits.foo", reason: "unknown key" }],
  },
  {
    name: "an unknown top-level key",
    raw: { lsiten: ":1" },
    issues: [{ path: "lsiten", reason: "unknown key" }],
  },
  {
    name: "a negative grace_seconds",
    raw: { limits: { grace_seconds: -1 } },
    issues: [{ path: "limits.grace_seconds", reason: "must not be negative" }],
  },
  {
    name: "a fractional integer",
    raw: { limits: { delivery_window: 1.5 } },
    issues: [{ path: "limits.delivery_window", reason: "must be an integer" }],
  },
  {
    name: "a number written as a string",
    raw: { limits: { receipt_window: "64" } },
    issues: [{ path: "limits.receipt_window", reason: "must be an integer" }],
  },
  {
    name: "a window above 1024",
    raw: { limits: { delivery_window: 1025 } },
    issues: [{ path: "limits.delivery_window", reason: "must be at most 1024" }],
  },
  {
    name: "a group of one",
    raw: { limits: { max_group_members: 1 } },
    issues: [{ path: "limits.max_group_members", reason: "must be at least 2" }],
  },
  {
    name: "a zero timeout",
    raw: { timeouts: { hello_seconds: 0 } },
    issues: [{ path: "timeouts.hello_seconds", reason: "must be greater than 0" }],
  },
  {
    name: "a timeout beyond the timer limit",
    raw: { tls: { reload_check_seconds: 1e9 } },
    issues: [{
      path: "tls.reload_check_seconds",
      reason: "must be at most 2147483 (about 24 days, the timer limit)",
    }],
  },
  {
    name: "a writer batch of zero",
    raw: { writer: { max_batch: 0, max_wait_ms: 1001 } },
    issues: [
      { path: "writer.max_batch", reason: "must be at least 1" },
      { path: "writer.max_wait_ms", reason: "must be at most 1000" },
    ],
  },
  {
    name: "a bad CIDR among good ones",
    raw: { trusted_proxies: ["10.0.0.0/8", "10.0.0.0/33", "not-an-ip", "::1/129", 7] },
    issues: [
      { path: "trusted_proxies[1]", reason: "must have a prefix length of at most 32" },
      {
        path: "trusted_proxies[2]",
        reason: "must be an IP address or CIDR range, such as 10.0.0.0/8 or ::1/128",
      },
      { path: "trusted_proxies[3]", reason: "must have a prefix length of at most 128" },
      { path: "trusted_proxies[4]", reason: "must be a string" },
    ],
  },
  {
    name: "trusted_proxies as a single string",
    raw: { trusted_proxies: "10.0.0.0/8" },
    issues: [{ path: "trusted_proxies", reason: "must be a list" }],
  },
  {
    name: "a certificate without a key",
    raw: { tls: { cert_file: "/certs/fullchain.pem" } },
    issues: [{ path: "tls.key_file", reason: "must be set when cert_file is set" }],
  },
  {
    name: "a key without a certificate",
    raw: { tls: { key_file: "/certs/privkey.pem" } },
    issues: [{ path: "tls.cert_file", reason: "must be set when key_file is set" }],
  },
  {
    name: "a listen port above 65535",
    raw: { listen: ":70000" },
    issues: [{ path: "listen", reason: "must have a port from 0 to 65535" }],
  },
  {
    name: "a listen address without a port",
    raw: { listen: "127.0.0.1", admin_listen: "::1:7444" },
    issues: [
      { path: "listen", reason: 'must be "host:port", ":port" or "[ipv6]:port"' },
      { path: "admin_listen", reason: 'must be "host:port", ":port" or "[ipv6]:port"' },
    ],
  },
  {
    name: "a bracketed host that is not IPv6",
    raw: { listen: "[127.0.0.1]:7443" },
    issues: [{ path: "listen", reason: "must have an IPv6 address inside [ ]" }],
  },
  {
    name: "admin_listen on the same port as a wildcard listen",
    raw: { listen: ":7443", admin_listen: "127.0.0.1:7443" },
    issues: [{ path: "admin_listen", reason: "must differ from listen" }],
  },
  {
    name: "an unknown sqlite_synchronous and log level",
    raw: { sqlite_synchronous: "OFF", log: { level: "trace" } },
    issues: [
      { path: "sqlite_synchronous", reason: "must be one of FULL, NORMAL" },
      { path: "log.level", reason: "must be one of debug, info, warn, error" },
    ],
  },
  {
    name: "wrong scalar types",
    raw: { data_dir: 5, tls: { allow_plaintext: "yes" }, metrics: { token: null } },
    issues: [
      { path: "tls.allow_plaintext", reason: "must be true or false" },
      { path: "data_dir", reason: "must be a string" },
      { path: "metrics.token", reason: "must be a string" },
    ],
  },
  {
    name: "an empty data_dir",
    raw: { data_dir: "" },
    issues: [{ path: "data_dir", reason: "must not be empty" }],
  },
  {
    name: "a section that is not a mapping",
    raw: { limits: [1, 2] },
    issues: [{ path: "limits", reason: "must be a mapping" }],
  },
  {
    name: "a document that is not a mapping",
    raw: ["listen"],
    issues: [{ path: "", reason: "The configuration must be a YAML mapping" }],
  },
];

for (const c of BAD) {
  Deno.test(`validateConfig() rejects ${c.name}`, () => {
    assert.deepEqual(issuesOf(() => validateConfig(c.raw)), c.issues);
  });
}

Deno.test("validateConfig() reports every issue at once, one per line in the message", () => {
  const raw = { limits: { max_body_bytes: 300000, foo: 1, grace_seconds: -5 }, listen: ":x" };
  try {
    validateConfig(raw);
    assert.fail("expected a ConfigError");
  } catch (e) {
    assert.ok(e instanceof ConfigError);
    assert.equal(e.issues.length, 4);
    assert.deepEqual(e.message.split("\n"), [
      'listen: must be "host:port", ":port" or "[ipv6]:port"',
      "limits.foo: unknown key",
      "limits.max_body_bytes: must be at most 262144 (the spec only allows lowering it)",
      "limits.grace_seconds: must not be negative",
    ]);
  }
});

Deno.test("validateConfig() accepts good configs and normalizes them", () => {
  const config = validateConfig({
    listen: "[::1]:0",
    admin_listen: "[::1]:0", // port 0 picks two different ports, so no clash (spec 4.1)
    tls: { cert_file: "a.pem", key_file: "b.pem", allow_plaintext: true },
    trusted_proxies: ["127.0.0.1", "::1", "10.1.2.3/8", "fd00::/8"],
    limits: { max_body_bytes: 1, max_pending_per_sender: 0, grace_seconds: 0 },
    timeouts: { first_byte_seconds: 0.2, hello_seconds: 0.2, shutdown_drain_seconds: 0.5 },
    writer: { max_wait_ms: 0 },
    session_idle_days: 0,
    record_retention_days: 0,
    sqlite_synchronous: "normal",
    log: { level: "DEBUG" },
  });
  assert.deepEqual(config.trusted_proxies, ["127.0.0.1/32", "::1/128", "10.1.2.3/8", "fd00::/8"]);
  assert.equal(config.sqlite_synchronous, "NORMAL");
  assert.equal(config.log.level, "debug");
  assert.equal(config.timeouts.first_byte_seconds, 0.2);
  assert.equal(config.tls.allow_plaintext, true);
  assert.equal(config.limits.max_body_bytes, 1);
  assert.equal(config.limits.max_pending_per_sender, 0);
});

Deno.test("validateConfig() allows plaintext with no certificate and admin on another port", () => {
  const config = validateConfig({
    listen: "0.0.0.0:7443",
    admin_listen: "localhost:7444",
    tls: { allow_plaintext: true },
  });
  assert.equal(config.admin_listen, "localhost:7444");
  assert.equal(config.tls.cert_file, "");
});

Deno.test("validateConfig() keeps every default a partial override does not touch", () => {
  const config = validateConfig({ limits: { max_body_bytes: 65536 }, log: { level: "warn" } });
  assert.deepEqual(config, {
    ...DEFAULT_CONFIG,
    limits: { ...DEFAULT_CONFIG.limits, max_body_bytes: 65536 },
    log: { level: "warn" },
  });
});

Deno.test("validateConfig() treats null and empty sections as defaults", () => {
  assert.deepEqual(validateConfig(null), DEFAULT_CONFIG);
  assert.deepEqual(
    validateConfig({ tls: null, limits: {}, trusted_proxies: null }),
    DEFAULT_CONFIG,
  );
});

Deno.test("DEFAULT_CONFIG matches spec 11.1 and our documented extra keys", () => {
  assert.equal(DEFAULT_CONFIG.listen, ":7443");
  assert.equal(DEFAULT_CONFIG.limits.max_body_bytes, 262144);
  assert.equal(DEFAULT_CONFIG.limits.max_clients, 2000);
  assert.equal(DEFAULT_CONFIG.tls.reload_check_seconds, 3600);
  assert.deepEqual(DEFAULT_CONFIG.timeouts, {
    first_byte_seconds: 10,
    hello_seconds: 30,
    auth_seconds: 3,
    shutdown_drain_seconds: 10,
    http_headers_seconds: 10,
    http_body_seconds: 30,
  });
  assert.equal(DEFAULT_CONFIG.limits.max_queued_bytes, 8388608);
  assert.equal(DEFAULT_CONFIG.limits.max_http_connections, 1000);
  assert.deepEqual(DEFAULT_CONFIG.writer, { max_batch: 256, max_wait_ms: 0 });
  assert.equal(DEFAULT_CONFIG.sqlite_synchronous, "FULL");
});

Deno.test("DEFAULT_CONFIG and validated configs are deeply frozen", () => {
  const validated = validateConfig({ trusted_proxies: ["::1"] });
  for (const config of [DEFAULT_CONFIG, validated]) {
    const mutable = config as unknown as {
      listen: string;
      limits: { max_body_bytes: number };
      trusted_proxies: string[];
    };
    // Modules run in strict mode, so writing a frozen property throws.
    assert.throws(() => {
      mutable.listen = ":1";
    }, TypeError);
    assert.throws(() => {
      mutable.limits.max_body_bytes = 1;
    }, TypeError);
    assert.throws(() => mutable.trusted_proxies.push("10.0.0.0/8"), TypeError);
  }
  assert.equal(DEFAULT_CONFIG.limits.max_body_bytes, 262144);
});

Deno.test("parseConfig() reports a YAML syntax error with its line and column", () => {
  const issues = issuesOf(() => parseConfig('listen: ":7443"\nlimits: [1, 2\ndata_dir: x\n'));
  assert.ok(issues.length >= 1);
  assert.equal(issues[0].path, "");
  assert.match(issues[0].reason, /^YAML syntax error at line 3, column 1: /);
});

Deno.test("parseConfig() rejects duplicate keys", () => {
  const issues = issuesOf(() => parseConfig("log:\n  level: info\n  level: debug\n"));
  assert.match(issues[0].reason, /^YAML syntax error at line 3, column 3: Map keys must be unique/);
});

Deno.test("parseConfig() keeps quoted tokens out of its error messages", () => {
  const issues = issuesOf(() => parseConfig("metrics:\n  token: [a]] s3cret-token\n"));
  for (const issue of issues) assert.doesNotMatch(issue.reason, /s3cret/);
});

Deno.test("parseConfig() gives the defaults for an empty or comment-only file", () => {
  assert.deepEqual(parseConfig(""), DEFAULT_CONFIG);
  assert.deepEqual(parseConfig("# nothing set\n"), DEFAULT_CONFIG);
});

Deno.test("parseConfig() rejects max_body_bytes: 300000 as check-config must (spec 11.1)", () => {
  const issues = issuesOf(() => parseConfig("limits:\n  max_body_bytes: 300000\n"));
  assert.deepEqual(issues.map((i) => i.path), ["limits.max_body_bytes"]);
});

const EXAMPLE = new URL("../../deploy/config.example.yaml", import.meta.url);

Deno.test("deploy/config.example.yaml parses to exactly DEFAULT_CONFIG", async () => {
  assert.deepEqual(parseConfig(await Deno.readTextFile(EXAMPLE)), DEFAULT_CONFIG);
});

Deno.test("deploy/config.example.yaml spells out every key", async () => {
  const keyPaths = (v: unknown, prefix = ""): string[] =>
    v !== null && typeof v === "object" && !Array.isArray(v)
      ? Object.entries(v).flatMap(([k, child]) => keyPaths(child, prefix ? `${prefix}.${k}` : k))
      : [prefix];
  const raw: unknown = parse(await Deno.readTextFile(EXAMPLE));
  assert.deepEqual(keyPaths(raw).sort(), keyPaths(DEFAULT_CONFIG).sort());
});

Deno.test("resolveConfigPath() prefers a non-empty NIXMSG_CONFIG", () => {
  assert.deepEqual(resolveConfigPath({}), { path: "./config.yaml", explicit: false });
  assert.deepEqual(resolveConfigPath({ NIXMSG_CONFIG: "" }), {
    path: "./config.yaml",
    explicit: false,
  });
  assert.deepEqual(resolveConfigPath({ NIXMSG_CONFIG: "/etc/nixmsg/config.yaml" }), {
    path: "/etc/nixmsg/config.yaml",
    explicit: true,
  });
});

Deno.test("loadConfig() reads the file named by NIXMSG_CONFIG", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "config.yaml");
    await Deno.writeTextFile(path, 'listen: "127.0.0.1:0"\nlimits:\n  max_clients: 5\n');
    const { config, found } = await loadConfig({ NIXMSG_CONFIG: path });
    assert.equal(found, true);
    assert.equal(config.listen, "127.0.0.1:0");
    assert.equal(config.limits.max_clients, 5);
    assert.equal(config.limits.max_body_bytes, 262144);

    await Deno.writeTextFile(path, "");
    assert.deepEqual((await loadConfig({ NIXMSG_CONFIG: path })).config, DEFAULT_CONFIG);

    await Deno.writeTextFile(path, "limits:\n  foo: 1\n");
    await assert.rejects(loadConfig({ NIXMSG_CONFIG: path }), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.deepEqual(e.issues, [{ path: "limits.foo", reason: "unknown key" }]);
      return true;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadConfig() uses the defaults when ./config.yaml does not exist", async () => {
  // A child process in an empty directory: Deno.chdir here would move every parallel test too.
  const dir = await Deno.makeTempDir();
  try {
    const script = `import { loadConfig } from ${
      JSON.stringify(import.meta.resolve("./config.ts"))
    };
      const { config, path, found } = await loadConfig({});
      console.log(JSON.stringify({ listen: config.listen, path, found }));`;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--config", new URL("../../deno.json", import.meta.url).pathname, script],
      cwd: dir,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), {
      listen: ":7443",
      path: "./config.yaml",
      found: false,
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadConfig() fails when the file named by NIXMSG_CONFIG does not exist", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = join(dir, "missing.yaml");
    await assert.rejects(loadConfig({ NIXMSG_CONFIG: path }), (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.equal(e.issues.length, 1);
      assert.equal(e.issues[0].path, "");
      assert.ok(e.issues[0].reason.includes(path), "the reason names the file");
      return true;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("limits.max_queued_bytes must leave room for the largest frame", () => {
  assert.throws(
    () => validateConfig({ limits: { max_queued_bytes: 1000 } }),
    /limits\.max_queued_bytes: must be at least 1048576/,
  );
  assert.throws(
    () => validateConfig({ timeouts: { http_headers_seconds: 0 } }),
    /timeouts\.http_headers_seconds: must be greater than 0/,
  );
});

Deno.test("validateConfig() reads webhooks.allow as host names and CIDR ranges", () => {
  const c = validateConfig({
    webhooks: { allow: ["Hooks.Internal", "127.0.0.1", "10.0.0.0/8", "::1"], concurrency: 2 },
  });
  assert.deepEqual(c.webhooks.allow, ["hooks.internal", "127.0.0.1/32", "10.0.0.0/8", "::1/128"]);
  assert.equal(c.webhooks.concurrency, 2);
  assert.equal(c.webhooks.response_timeout_seconds, 10);
  assert.deepEqual(DEFAULT_CONFIG.webhooks.allow, []);
});

Deno.test("validateConfig() refuses a bad webhooks entry with its path", () => {
  assert.throws(
    () => validateConfig({ webhooks: { allow: ["10.0.0.0/40", "bad host!", 3], concurrency: 0 } }),
    (err: unknown) => {
      const issues = (err as ConfigError).issues.map((i) => i.path);
      assert.deepEqual(issues, [
        "webhooks.allow[0]",
        "webhooks.allow[1]",
        "webhooks.allow[2]",
        "webhooks.concurrency",
      ]);
      return true;
    },
  );
});
