// JSON inputs of the fuzz test: protocol frames for the MQTT up topic (spec 6) and request bodies
// for the HTTP APIs, from the named fixtures mutated, random objects, and broken JSON text.
import {
  BAD_PAYLOADS,
  BAD_REQUESTS,
  encodeWire,
  GOOD_REQUESTS,
  REQUEST_FIELD_NAMES,
} from "../../server/protocol/fixtures.ts";
import { REQUEST_TYPES } from "../../server/protocol/parse.ts";
import type { Rng } from "./fuzz_rng.ts";

/** One JSON input: the payload bytes, and what they are. */
export interface JsonInput {
  name: string;
  payload: Uint8Array;
}

const enc = new TextEncoder();

const FIELDS = [
  "v",
  "type",
  "rid",
  ...REQUEST_FIELD_NAMES,
  "username",
  "password",
  "enabled",
  "code",
  "registration_code",
  "login_password",
  "remark",
  "action",
  "owner_id",
  "expires_at",
  "__proto__",
  "constructor",
  "toString",
];

/** Strings for ids and texts; never the ids of the endpoints the delivery check uses. */
const STRINGS = [
  "",
  "a",
  "endpoint",
  "group",
  "utf8",
  "base64",
  "aGk=",
  "中文",
  "😀",
  "\ud800",
  "\u0000",
  "nst_12345678",
  "fz_nobody",
  "g_ab12cd34",
  "x".repeat(65),
  "x".repeat(5000),
  "disable",
  "delete",
];

/** Numbers as JSON text: JSON.parse turns some into Infinity, -0 or imprecise values. */
const NUMBER_TEXTS = [
  "0",
  "-0",
  "1",
  "-1",
  "1.5",
  "1e3",
  "1e308",
  "1e400",
  "-1e400",
  "9007199254740993",
  "123456789012345678901234567890",
  "0.0000000000000000000001",
  "4294967296",
  "2147483648",
];

function valueText(rng: Rng, depth: number): string {
  switch (rng.int(depth > 2 ? 4 : 7)) {
    case 0:
      return "null";
    case 1:
      return rng.chance(0.5) ? "true" : "false";
    case 2:
      return rng.pick(NUMBER_TEXTS);
    case 3:
      return JSON.stringify(rng.pick(STRINGS));
    case 4:
      return `[${Array.from({ length: rng.int(4) }, () => valueText(rng, depth + 1)).join(",")}]`;
    default:
      return objectText(rng, depth + 1, {});
  }
}

function objectText(rng: Rng, depth: number, fixed: Record<string, string>): string {
  const entries = Object.entries(fixed).map(([k, v]) => `${JSON.stringify(k)}:${v}`);
  for (let i = 0; i < rng.int(6); i++) {
    entries.push(`${JSON.stringify(rng.pick(FIELDS))}:${valueText(rng, depth)}`);
  }
  return `{${entries.join(",")}}`;
}

const BROKEN_TEXTS = [
  "",
  "{",
  "}",
  '{"v":1,',
  '{"v":1,"type":"hello","rid":"r"',
  "{'v':1}",
  '{"v":1}x',
  '{"v":NaN}',
  '{"v":Infinity}',
  '{"a":1,"a":2}',
  "[".repeat(10_000),
  '{"a":'.repeat(5000),
  "\ufeff{}",
  '"\\ud800"',
  "nul",
];

/** JSON text for an HTTP body: mostly an object of known fields, sometimes broken. */
export function randomJsonText(rng: Rng): string {
  if (rng.chance(0.2)) return rng.pick(BROKEN_TEXTS);
  if (rng.chance(0.1)) return valueText(rng, 3);
  return objectText(rng, 0, {});
}

function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A fixture with one field changed, deleted or added (values from the JSON text generator). */
function mutatedFixture(rng: Rng): JsonInput {
  const [name, fixture] = rng.pick(Object.entries(GOOD_REQUESTS));
  const wire = structuredClone(fixture.wire);
  let target: Record<string, unknown> = wire;
  const nested = Object.keys(wire).filter((k) => typeof wire[k] === "object" && wire[k] !== null);
  if (nested.length > 0 && rng.chance(0.4)) {
    target = wire[rng.pick(nested)] as Record<string, unknown>;
  }
  const keys = Object.keys(target);
  const key = keys.length > 0 && rng.chance(0.8) ? rng.pick(keys) : rng.pick(FIELDS);
  if (rng.chance(0.2)) delete target[key];
  else setOwn(target, key, JSON.parse(valueText(rng, 1).replace(/-?1e400/g, "1e308")));
  return { name: `${name} with ${JSON.stringify(key)} changed`, payload: encodeWire(wire) };
}

/**
 * A payload for the MQTT up topic after a valid hello: a named good or bad fixture, a mutated
 * fixture, a random frame of a known or unknown type, or broken JSON text.
 */
export function jsonFrameInput(rng: Rng): JsonInput {
  switch (rng.int(7)) {
    case 0: {
      const [name, f] = rng.pick(Object.entries(GOOD_REQUESTS));
      return { name: `good fixture ${name}`, payload: encodeWire(f.wire) };
    }
    case 1: {
      const [name, f] = rng.pick(Object.entries(BAD_REQUESTS));
      return { name: `bad fixture ${name}`, payload: encodeWire(f.wire) };
    }
    case 2: {
      const [name, f] = rng.pick(Object.entries(BAD_PAYLOADS));
      return { name: `bad payload ${name}`, payload: f.payload };
    }
    case 3:
    case 4:
      return mutatedFixture(rng);
    case 5: {
      const type = rng.pick([...REQUEST_TYPES, "resp", "msg", "nope", "", "hello "]);
      const text = objectText(rng, 0, {
        v: rng.pick(["1", "1", "1", "2", '"1"', "1.0", "1e400"]),
        type: rng.chance(0.9) ? JSON.stringify(type) : rng.pick(NUMBER_TEXTS),
        rid: rng.chance(0.9) ? JSON.stringify(`j${rng.int(1e6)}`) : valueText(rng, 2),
      });
      return { name: `random ${JSON.stringify(type)} frame`, payload: enc.encode(text) };
    }
    default: {
      const text = rng.pick(BROKEN_TEXTS);
      return {
        name: `broken JSON ${JSON.stringify(text.slice(0, 24))}`,
        payload: enc.encode(text),
      };
    }
  }
}
