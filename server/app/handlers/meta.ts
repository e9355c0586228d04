import type { JsonObject, JsonValue } from "../../protocol/frames.ts";

function sortKeys(v: JsonValue): JsonValue {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === "object") {
    const out: JsonObject = {};
    for (const k of Object.keys(v).sort()) out[k] = sortKeys(v[k]);
    return out;
  }
  return v;
}

/** The stored form of `meta`: JSON with sorted keys, so equal requests store equal text. */
export function canonicalMeta(meta: JsonObject): string {
  return JSON.stringify(sortKeys(meta));
}
