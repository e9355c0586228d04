import type { Handler, HandlerTable } from "../mqtt_app.ts";
import { encodeFrame, okResp, ProtocolError } from "../../protocol/mod.ts";
import type { HelloData } from "../../protocol/frames.ts";
import { VERSION } from "../../version.ts";
import { newSessionToken, sha256Hex } from "../../auth/tokens.ts";

/** spec 6.1: the handshake; afterwards the connection is online and pushing may start. */
const hello: Handler<"hello"> = async ({ app, conn, mqtt }, frame) => {
  if (conn.handshaken) throw new ProtocolError("bad_request", "已经握手");
  conn.maxReceiveBytes = frame.max_receive_bytes;
  const l = app.config.limits;
  const data: HelloData = {
    server_time_ms: app.clock(),
    server_version: VERSION,
    max_body_bytes: l.max_body_bytes,
    max_meta_bytes: l.max_meta_bytes,
    max_frame_bytes: l.max_frame_bytes,
    max_ttl_seconds: l.max_ttl_seconds,
    max_schedule_seconds: l.max_schedule_seconds,
    ack_timeout_seconds: l.ack_timeout_seconds,
    ...(conn.issuedToken ? { session_token: conn.issuedToken } : {}),
  };
  // A hello answer that cannot reach the client must not complete the handshake: the client
  // may retry with a larger limit and still receive its session token.
  const limit = mqtt.frameLimit(conn);
  if (limit !== null && encodeFrame(okResp(frame.rid, data)).length > limit) {
    throw new ProtocolError("response_too_large");
  }
  // issue 30: a cluster node is recorded as the holder, so its reap can take the endpoint offline.
  const cluster = app.config.cluster;
  const online = await app.store.run("endpoint.handshake", {
    endpointId: conn.endpointId,
    ...(cluster.nats_url !== "" ? { nodeId: cluster.node_id } : {}),
  });
  conn.onlineSince = online.onlineSince;
  conn.wasOnline = online.wasOnline;
  conn.handshaken = true;
  if (conn.helloTimer) clearTimeout(conn.helloTimer);
  conn.helloTimer = null;
  conn.issuedToken = null; // spec 6.1: handed out once, on this connection only
  return data;
};

/** spec 6.6 self.get */
const selfGet: Handler<"self.get"> = async ({ app, conn }) => {
  const row = await app.store.query("endpoint.self_row", { id: conn.endpointId });
  if (!row) throw new ProtocolError("not_found");
  return {
    id: row.id,
    name: row.name,
    source: row.source,
    default_delay_ms: row.default_delay_ms,
    talk_password_set: row.talk_password_set === 1,
    created_at_ms: row.created_at,
  };
};

/** spec 6.6 self.update: name and default delay (bounded by max_schedule_seconds). */
const selfUpdate: Handler<"self.update"> = async ({ app, conn }, frame) => {
  const maxDelay = app.config.limits.max_schedule_seconds * 1000;
  if (frame.default_delay_ms !== null && frame.default_delay_ms > maxDelay) {
    throw new ProtocolError("bad_request", `default_delay_ms 不能超过 ${maxDelay}`);
  }
  await app.store.run("endpoint.update_self", {
    id: conn.endpointId,
    ...(frame.name !== null ? { name: frame.name } : {}),
    ...(frame.default_delay_ms !== null ? { defaultDelayMs: frame.default_delay_ms } : {}),
  });
  return {};
};

/**
 * spec 6.6 self.login_password: the old password is required; a wrong one is `unauthorized` and
 * counts toward both login lockouts. Success returns a new session token; the connection stays.
 */
const selfLoginPassword: Handler<"self.login_password"> = async ({ app, conn }, frame) => {
  const id = conn.endpointId;
  const attempt = await app.loginLocks.acquire(id, app.addressKey(conn.remoteAddress));
  if (attempt === null) throw new ProtocolError("rate_limited");
  let ok: boolean;
  try {
    const row = await app.store.query("endpoint.login_row", { id });
    ok = row !== null
      ? await app.pool.verify(row.login_hash, frame.old_password)
      : await app.pool.verifyDummy(frame.old_password);
  } catch (err) {
    attempt.release(); // a database error checked nothing
    throw err;
  }
  if (!ok) {
    attempt.fail("wrong_old_password");
    await attempt.done();
    throw new ProtocolError("unauthorized");
  }
  attempt.release();
  const loginHash = await app.pool.hash(frame.new_password);
  const token = newSessionToken();
  await app.store.run("endpoint.set_login_password", {
    id,
    loginHash,
    sessionHash: sha256Hex(token),
  });
  return { session_token: token };
};

/** spec 6.6 self.logout: clear the token, answer, then disconnect. */
const selfLogout: Handler<"self.logout"> = async (ctx) => {
  const { app, conn } = ctx;
  await app.store.run("endpoint.clear_session", { id: conn.endpointId });
  ctx.after(() => app.broker.disconnect(conn.code));
  return {};
};

/** The handshake and self-service handlers. */
export const sessionHandlers: HandlerTable = {
  hello,
  "self.get": selfGet,
  "self.update": selfUpdate,
  "self.login_password": selfLoginPassword,
  "self.logout": selfLogout,
};
