/** Who is logged in to the console, learnt from `GET /api/admin/me` (spec 8). */
import { defineStore } from "pinia";
import { ref } from "vue";
import { ApiError } from "../api/http.ts";
import { session as api } from "../api/admin.ts";
import type { Me } from "../api/types.ts";

export const useSession = defineStore("session", () => {
  const me = ref<Me | null>(null);
  /** Whether `me` reflects the server (checked at least once since the last change). */
  const checked = ref(false);
  /** The session ended under an open page: the re-login dialog is up. */
  const expired = ref(false);
  let waiting: Promise<boolean> | null = null;
  let settle: (again: boolean) => void = () => {};

  /** Asks the server who we are; null when not logged in. */
  async function check(): Promise<Me | null> {
    try {
      me.value = await api.me();
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 401) throw err;
      me.value = null;
    }
    checked.value = true;
    return me.value;
  }

  async function login(password: string): Promise<void> {
    await api.login(password);
    await check();
  }

  /**
   * Ends the session on the server. When the server cannot be reached the cookie (HttpOnly) and
   * the session survive, so the console stays logged in and the call rejects (issue 32 item 2):
   * showing the login page then would only look like a logout.
   */
  async function logout(): Promise<void> {
    await api.logout();
    forget();
  }

  /** Drops the local state after the server said the session is gone. */
  function forget(): void {
    me.value = null;
    checked.value = true;
  }

  /**
   * The server said the session is gone (it expired, or the admin password was changed
   * elsewhere). Opens the re-login dialog over the page; resolves true after a new login, false
   * when the admin gave up. Concurrent callers share one dialog.
   */
  function expire(): Promise<boolean> {
    if (waiting !== null) return waiting;
    expired.value = true;
    waiting = new Promise<boolean>((resolve) => (settle = resolve));
    return waiting;
  }

  /** Logs in from the re-login dialog; pending requests are then repeated. */
  async function relogin(password: string): Promise<void> {
    await login(password);
    finish(true);
  }

  /** Closes the re-login dialog without logging in: the session is over. */
  function abandon(): void {
    forget();
    finish(false);
  }

  function finish(again: boolean): void {
    expired.value = false;
    waiting = null;
    settle(again);
  }

  return { me, checked, expired, check, login, logout, forget, expire, relogin, abandon };
});
