/** Route path patterns: exact paths, `:name` segments, and a trailing `/*` for a subtree. */

/** A compiled pattern. */
export interface PathPattern {
  readonly source: string;
  /** The decoded parameters when `pathname` matches, else null. */
  match(pathname: string): Record<string, string> | null;
}

function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * Compiles a route path. `/api/admin/endpoints/:id` matches `/api/admin/endpoints/e_1` with
 * `{ id: "e_1" }`; `/assets/*` matches `/assets`, `/assets/` and everything below, with the rest
 * (decoded, without the leading slash) in `*`. Matching is case-sensitive and exact about
 * trailing slashes. Throws when the pattern is malformed.
 *
 * @example
 * compilePath("/api/admin/groups/:id/members/:endpointId").match("/api/admin/groups/g1/members/e2");
 * // { id: "g1", endpointId: "e2" }
 */
export function compilePath(pattern: string): PathPattern {
  if (!pattern.startsWith("/")) {
    throw new Error(`Compile route path "${pattern}": must start with /`);
  }
  const subtree = pattern === "/*" || pattern.endsWith("/*");
  const fixed = subtree ? pattern.slice(0, -2) : pattern;
  const parts = fixed === "" ? [] : fixed.slice(1).split("/");
  for (const part of parts) {
    if (part.includes("*") || part === ":") {
      throw new Error(`Compile route path "${pattern}": bad segment "${part}"`);
    }
  }

  const matchSegments = (segments: string[]): Record<string, string> | null => {
    const params: Record<string, string> = {};
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      if (part.startsWith(":")) {
        const value = segments[i] === "" ? null : decode(segments[i]);
        if (value === null) return null;
        params[part.slice(1)] = value;
      } else if (segments[i] !== part) {
        return null;
      }
    }
    return params;
  };

  return {
    source: pattern,
    match(pathname) {
      const segments = pathname.slice(1).split("/");
      if (!subtree) return segments.length === parts.length ? matchSegments(segments) : null;
      if (segments.length < parts.length) return null;
      const params = matchSegments(segments.slice(0, parts.length));
      const rest = decode(segments.slice(parts.length).join("/"));
      return params === null || rest === null ? null : { ...params, "*": rest };
    },
  };
}
