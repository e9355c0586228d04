import { charCount } from "../protocol/mod.ts";

/** spec 8: the admin password has at least 12 characters (Unicode code points). */
export const ADMIN_PASSWORD_MIN = 12;
/** The longest admin password we store, in code points. */
export const ADMIN_PASSWORD_MAX = 128;

/**
 * Why `password` cannot be the admin password, or null when it can. Counts code points, as the
 * admin API does, so 6 emoji (12 UTF-16 units) are 6 characters.
 */
export function adminPasswordProblem(password: string): string | null {
  const n = charCount(password);
  if (n < ADMIN_PASSWORD_MIN) {
    return `The admin password must have at least ${ADMIN_PASSWORD_MIN} characters`;
  }
  if (n > ADMIN_PASSWORD_MAX) {
    return `The admin password must have at most ${ADMIN_PASSWORD_MAX} characters`;
  }
  return null;
}
