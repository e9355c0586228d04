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

  async function logout(): Promise<void> {
    try {
      await api.logout();
    } finally {
      forget();
    }
  }

  /** Drops the local state after the server said the session is gone. */
  function forget(): void {
    me.value = null;
    checked.value = true;
  }

  return { me, checked, check, login, logout, forget };
});
