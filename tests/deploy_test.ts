import assert from "node:assert/strict";
import { parse } from "yaml";
import { parseConfig } from "../server/config/config.ts";

// There is no Docker engine on the build machines; these tests check what can be checked
// without one: the files parse, agree with spec 11.4, and reference files that exist.

const root = new URL("../", import.meta.url);
const read = (p: string) => Deno.readTextFile(new URL(p, root));

Deno.test("the compose file matches spec 11.4", async () => {
  const doc = parse(await read("deploy/docker-compose.yml")) as {
    services: Record<string, Record<string, unknown>>;
  };
  const svc = doc.services.nixmsg;
  assert.deepEqual(svc.command, ["serve"]);
  // Longer than timeouts.shutdown_drain_seconds (10) plus the last responses and goodbyes.
  assert.equal(svc.stop_grace_period, "30s");
  assert.deepEqual(svc.environment, { NIXMSG_CONFIG: "/etc/nixmsg/config.yaml" });
  assert.ok((svc.ports as string[]).includes("7443:7443"));
  assert.ok((svc.volumes as string[]).includes("./data:/data"));
  assert.deepEqual((svc.healthcheck as { test: string[] }).test, [
    "CMD",
    "/nixmsg",
    "healthcheck",
  ]);
});

Deno.test("the Dockerfile copies only files that exist and runs as uid 65532", async () => {
  const text = await read("deploy/Dockerfile");
  assert.match(text, /^USER 65532:65532$/m);
  assert.match(text, /^ENTRYPOINT \["\/nixmsg"\]$/m);
  // The image is built by the same release task as the binaries, for the platform being built.
  assert.match(text, /^RUN deno task release --target "\$TARGETPLATFORM"/m);
  for (const m of text.matchAll(/^COPY (?!--from)(.+)$/gm)) {
    const parts = m[1].trim().split(/\s+/);
    for (const src of parts.slice(0, -1)) {
      const stat = await Deno.stat(new URL(src, root)).catch(() => null);
      assert.ok(stat, `Dockerfile copies ${src}, which does not exist`);
    }
  }
});

Deno.test("the image's built-in config is valid and keeps data in /data", async () => {
  const config = parseConfig(await read("deploy/config.docker.yaml"));
  assert.equal(config.data_dir, "/data");
  assert.equal(config.listen, ":7443");
});

Deno.test("the compose file and the systemd unit raise the open-files limit above max_clients", async () => {
  const doc = parse(await read("deploy/docker-compose.yml")) as {
    services: Record<string, { ulimits?: { nofile?: { soft: number; hard: number } } }>;
  };
  const nofile = doc.services.nixmsg.ulimits?.nofile;
  const maxClients = parseConfig("").limits.max_clients;
  assert.ok(nofile !== undefined && nofile.soft > maxClients * 2, JSON.stringify(nofile));
  const ops = await read("docs/operations.md");
  const unit = /^LimitNOFILE=(\d+)$/m.exec(ops);
  assert.ok(unit !== null && Number(unit[1]) > maxClients * 2);
});

Deno.test("the systemd unit of deploy/ is the one operations.md shows, with its own user and the network up", async () => {
  const unit = await read("deploy/nixmsg.service");
  const ops = await read("docs/operations.md");
  const shown = /```ini\n(# \/etc\/systemd\/system\/nixmsg\.service[\s\S]*?)```\n/.exec(ops);
  assert.ok(shown !== null, "operations.md shows the unit");
  assert.equal(shown[1], unit);
  // After= alone only orders; without Wants= nothing pulls network-online.target in.
  assert.match(unit, /^Wants=network-online\.target$/m);
  assert.match(unit, /^After=network-online\.target$/m);
  assert.match(unit, /^User=nixmsg$/m);
  // The user the unit names is created in the same section of the guide.
  assert.match(ops, /^useradd --system .* nixmsg$/m);
});
