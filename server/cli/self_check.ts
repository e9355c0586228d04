import { ARGON2_VERSION, hostAddonPackage } from "../auth/argon2_addon.ts";

/** The part of the password pool the self-check uses. */
export interface Hasher {
  hash(password: string): Promise<string>;
  verify(phc: string, password: string): Promise<boolean>;
}

const PROBE = "nixmsg-self-check";

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split("\n")[0];
}

/** Whether an error comes from loading a native addon (the `.node` file or its package). */
export function isAddonLoadError(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; e instanceof Error && depth < 10; depth++) {
    if (/native binding|\.node\b|argon2/i.test(e.message)) return true;
    e = e.cause;
  }
  return false;
}

/** What the operator reads when the argon2 addon cannot be used on this platform. */
export function addonFailureMessage(err: unknown): string {
  return `Cannot start: the argon2 native addon ${hostAddonPackage()} (@node-rs/argon2 ` +
    `${ARGON2_VERSION}) cannot load on ${Deno.build.os}/${Deno.build.arch}: ${firstLine(err)}. ` +
    "Use the release binary built for this platform, or run `deno install` on this machine so " +
    "that npm installs the addon package for it";
}

/**
 * Hashes and verifies one test password through `pool` before the server listens (so a broken
 * addon stops start-up instead of every login). Returns null when argon2 works, else the message.
 */
export async function argon2SelfCheck(pool: Hasher): Promise<string | null> {
  try {
    const phc = await pool.hash(PROBE);
    if (!(await pool.verify(phc, PROBE)) || (await pool.verify(phc, `${PROBE}-wrong`))) {
      return `Cannot start: argon2 (${hostAddonPackage()}) hashed a test password but did not ` +
        "verify it correctly";
    }
    return null;
  } catch (err) {
    return addonFailureMessage(err);
  }
}
