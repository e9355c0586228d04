// The README's first command, `./nixmsg quickstart`, run as written in an empty directory: it
// writes config.yaml with the defaults, prints the admin password once, and serves on :7443 with
// that password working; a second run keeps both. The fixed port is the point of the command, so
// each run gets a network namespace of its own (`unshare -n`), where nothing else can hold 7443.
import assert from "node:assert/strict";
import { join } from "node:path";

const LAUNCHER = new URL("../nixmsg", import.meta.url).pathname;
const HAS_NETNS = Deno.uid() === 0 && ["/usr/bin/unshare", "/usr/bin/nsenter", "/usr/sbin/ip"]
  .every((p) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  });

interface Run {
  /** Lines the command printed before "nixmsg serving". */
  before: string[];
  /** Runs `args` inside the server's network namespace. */
  inside(args: string[]): Promise<{ code: number; stdout: string }>;
  stop(): Promise<number>;
}

async function quickstart(
  dir: string,
  args: readonly string[] = [],
  env: Record<string, string> = {},
): Promise<Run> {
  const child = new Deno.Command("unshare", {
    args: [
      "-n",
      "bash",
      "-c",
      `ip link set lo up && exec bash "${LAUNCHER}" quickstart "$@"`,
      "quickstart",
      ...args,
    ],
    env,
    cwd: dir,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const before: string[] = [];
  const stderr = new Response(child.stderr).text();
  let serving = false;
  let buf = "";
  const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
  while (!serving) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let nl;
    while (!serving && (nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.includes('"nixmsg serving"')) serving = true;
      else before.push(line);
    }
  }
  clearTimeout(timer);
  if (!serving) {
    const status = await child.status;
    throw new Error(`quickstart did not serve (exit ${status.code}): ${await stderr}`);
  }
  // Keep draining stdout so the server never blocks on a full pipe.
  const drained = (async () => {
    while (!(await reader.read()).done) { /* discard */ }
  })();
  return {
    before,
    async inside(args) {
      const out = await new Deno.Command("nsenter", {
        args: ["-t", String(child.pid), "-n", ...args],
        stdout: "piped",
        stderr: "piped",
      }).output();
      return { code: out.code, stdout: new TextDecoder().decode(out.stdout) };
    },
    async stop() {
      child.kill("SIGTERM");
      const status = await child.status;
      await drained;
      await stderr;
      return status.code;
    },
  };
}

/** The HTTP status of a request to the server's port, made inside its namespace. */
async function status(
  run: Run,
  path: string,
  curlArgs: string[] = [],
  origin = "http://127.0.0.1:7443",
): Promise<string> {
  const r = await run.inside([
    "curl",
    "-s",
    "-o",
    "/dev/null",
    "-w",
    "%{http_code}",
    ...curlArgs,
    `${origin}${path}`,
  ]);
  return r.stdout;
}

/** HTTP status of an admin login with `password`. */
function login(run: Run, password: string): Promise<string> {
  return status(run, "/api/admin/login", [
    "-H",
    "content-type: application/json",
    "-H",
    "X-Nixmsg-Request: 1",
    "--data",
    JSON.stringify({ username: "admin", password }),
  ]);
}

Deno.test({
  name: "./nixmsg quickstart sets up an empty directory, serves on :7443, and a rerun keeps it",
  ignore: !HAS_NETNS,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "nixmsg-quickstart-" });
    try {
      const first = await quickstart(dir);
      let password = "";
      try {
        assert.ok(
          first.before.some((l) => l.includes("Wrote ./config.yaml with the default settings")),
          "the first run says it wrote config.yaml",
        );
        const shown = first.before.map((l) => /^\s*password: (\S+)$/.exec(l)?.[1]).filter(
          (p) => p !== undefined,
        );
        assert.equal(shown.length, 1, "the admin password is printed once");
        password = shown[0]!;
        assert.equal(await login(first, password), "200");
        assert.equal(await login(first, `${password}x`), "401");
        assert.equal(await status(first, "/healthz"), "200");
        // README "First steps": the console is at the root of the same port.
        const page = await first.inside(["curl", "-s", "http://127.0.0.1:7443/"]);
        assert.match(page.stdout, /<div id="app">/);
      } finally {
        assert.equal(await first.stop(), 0, "SIGTERM stops it cleanly");
      }
      const config = await Deno.readTextFile(join(dir, "config.yaml"));
      assert.match(config, /^listen: ":7443"$/m);
      assert.match(config, /^data_dir: "\.\/data"$/m);

      const second = await quickstart(dir);
      try {
        assert.ok(!second.before.some((l) => l.includes("Wrote ")), "config.yaml is kept");
        assert.ok(!second.before.some((l) => /password:/.test(l)), "no new admin password");
        assert.equal(await login(second, password), "200");
      } finally {
        assert.equal(await second.stop(), 0);
      }
      assert.equal(await Deno.readTextFile(join(dir, "config.yaml")), config);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "./nixmsg quickstart --listen serves on the address given, and NIXMSG_LISTEN does the same",
  ignore: !HAS_NETNS,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "nixmsg-quickstart-listen-" });
    try {
      const first = await quickstart(dir, ["--listen", "127.0.0.1:8080"]);
      try {
        assert.ok(
          first.before.some((l) =>
            l.includes("Wrote ./config.yaml") && l.includes("127.0.0.1:8080")
          ),
          first.before.join("\n"),
        );
        assert.equal(await status(first, "/healthz", [], "http://127.0.0.1:8080"), "200");
        assert.equal(await status(first, "/healthz"), "000", "nothing listens on :7443");
      } finally {
        assert.equal(await first.stop(), 0);
      }
      const config = await Deno.readTextFile(join(dir, "config.yaml"));
      assert.match(config, /^listen: "127\.0\.0\.1:8080"$/m);

      // An existing config.yaml: the variable overrides its `listen` for this run only.
      const second = await quickstart(dir, [], { NIXMSG_LISTEN: "127.0.0.1:8081" });
      try {
        assert.ok(
          second.before.some((l) => l.includes("Listening on 127.0.0.1:8081 (NIXMSG_LISTEN)")),
          second.before.join("\n"),
        );
        assert.equal(await status(second, "/healthz", [], "http://127.0.0.1:8081"), "200");
        assert.equal(await status(second, "/healthz", [], "http://127.0.0.1:8080"), "000");
      } finally {
        assert.equal(await second.stop(), 0);
      }
      assert.equal(
        await Deno.readTextFile(join(dir, "config.yaml")),
        config,
        "config.yaml is kept",
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("./nixmsg quickstart --listen refuses a malformed address before writing anything", async () => {
  const dir = await Deno.makeTempDir({ prefix: "nixmsg-quickstart-bad-" });
  try {
    const out = await new Deno.Command("bash", {
      args: [LAUNCHER, "quickstart", "--listen", "8080"],
      cwd: dir,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 2);
    assert.match(new TextDecoder().decode(out.stderr), /--listen 8080: must be "host:port"/);
    assert.deepEqual([...Deno.readDirSync(dir)], [], "no config.yaml, no data");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
