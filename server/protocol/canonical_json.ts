/**
 * JSON measures for `meta` (spec 6.2) and the request fingerprint (spec 7.3). Both walk the
 * value with an explicit stack, so a deeply nested value cannot overflow the call stack.
 */
import type { JsonValue } from "./frames.ts";
import { utf8Length } from "./text.ts";

/**
 * Returns the UTF-8 size of `JSON.stringify(value)`, or null as soon as it exceeds `max`.
 * It stops early, so a huge value costs no more than `max` bytes of work.
 *
 * @example
 * ```ts
 * jsonByteSizeWithin({ k: "v" }, 4096); // 9, the size of {"k":"v"}
 * jsonByteSizeWithin({ k: "v" }, 8); // null
 * ```
 */
export function jsonByteSizeWithin(value: JsonValue, max: number): number | null {
  let size = 0;
  const stack: JsonValue[] = [value];
  while (stack.length > 0) {
    const v = stack.pop() as JsonValue;
    if (Array.isArray(v)) {
      size += 2 + Math.max(0, v.length - 1);
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === "object") {
      const keys = Object.keys(v);
      size += 2 + Math.max(0, keys.length - 1);
      for (const key of keys) {
        size += utf8Length(JSON.stringify(key)) + 1;
        stack.push(v[key]);
      }
    } else {
      size += utf8Length(JSON.stringify(v));
    }
    if (size > max) return null;
  }
  return size;
}

/** True when `o` has no enumerable key (without building the list of keys). */
function isEmpty(o: object): boolean {
  for (const _ in o) return false;
  return true;
}

type Work = { readonly emit: string } | { readonly value: JsonValue };

/**
 * Serializes `value` as compact JSON with object keys sorted at every level (by UTF-16 code
 * units, the order of `Array.prototype.sort`). Equal values give equal text whatever the key
 * order of the input (spec 7.3: meta "按键排序后序列化").
 *
 * @example
 * ```ts
 * canonicalJson({ b: 1, a: { d: [], c: null } }); // '{"a":{"c":null,"d":[]},"b":1}'
 * ```
 */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  // The common `meta` of a send: no keys.
  if (!Array.isArray(value) && isEmpty(value)) return "{}";
  const out: string[] = [];
  const stack: Work[] = [{ value }];
  while (stack.length > 0) {
    const work = stack.pop() as Work;
    if ("emit" in work) {
      out.push(work.emit);
      continue;
    }
    const v = work.value;
    if (Array.isArray(v)) {
      stack.push({ emit: "]" });
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push({ value: v[i] });
        if (i > 0) stack.push({ emit: "," });
      }
      stack.push({ emit: "[" });
    } else if (v !== null && typeof v === "object") {
      const keys = Object.keys(v).sort();
      stack.push({ emit: "}" });
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push({ value: v[keys[i]] });
        stack.push({ emit: (i > 0 ? "," : "") + JSON.stringify(keys[i]) + ":" });
      }
      stack.push({ emit: "{" });
    } else {
      out.push(JSON.stringify(v));
    }
  }
  return out.join("");
}
