/**
 * The console's pages. History mode: the server answers unknown paths with index.html
 * (server/http/static.ts), so every address below can be reloaded or bookmarked.
 */
import { createRouter, createWebHistory, type RouteRecordRaw } from "vue-router";
import type { Pinia } from "pinia";
import { onUnauthorized } from "./api/http.ts";
import { useSession } from "./stores/session.ts";
import ConsoleLayout from "./components/ConsoleLayout.vue";
import LoginPage from "./pages/LoginPage.vue";
import { isChunkLoadError, loadFailure } from "./lib/load_failure.ts";

/** A page of the side menu. */
export interface MenuPage {
  name: string;
  path: string;
  title: string;
}

/** The side menu, in order. */
export const MENU: readonly MenuPage[] = [
  { name: "overview", path: "/", title: "概览" },
  { name: "endpoints", path: "/endpoints", title: "端" },
  { name: "registration", path: "/registration", title: "注册设置" },
  { name: "groups", path: "/groups", title: "群" },
  { name: "messages", path: "/messages", title: "消息记录" },
  { name: "tokens", path: "/tokens", title: "API 令牌" },
  { name: "audit", path: "/audit", title: "操作日志" },
  { name: "settings", path: "/settings", title: "运行参数" },
  { name: "nodes", path: "/nodes", title: "节点" },
  { name: "password", path: "/password", title: "修改密码" },
];

const pages: Record<string, () => Promise<unknown>> = {
  overview: () => import("./pages/OverviewPage.vue"),
  endpoints: () => import("./pages/endpoints/EndpointsPage.vue"),
  registration: () => import("./pages/RegistrationPage.vue"),
  groups: () => import("./pages/groups/GroupsPage.vue"),
  messages: () => import("./pages/messages/MessagesPage.vue"),
  tokens: () => import("./pages/tokens/TokensPage.vue"),
  audit: () => import("./pages/audit/AuditPage.vue"),
  settings: () => import("./pages/SettingsPage.vue"),
  nodes: () => import("./pages/NodesPage.vue"),
  password: () => import("./pages/PasswordPage.vue"),
};

const routes: RouteRecordRaw[] = [
  { path: "/login", name: "login", component: LoginPage, meta: { public: true } },
  {
    path: "/",
    component: ConsoleLayout,
    children: [
      ...MENU.map((m) => ({
        path: m.path.slice(1),
        name: m.name,
        component: pages[m.name],
        meta: { menu: m.name },
      })),
      {
        path: "endpoints/:id",
        name: "endpoint",
        component: () => import("./pages/endpoints/EndpointDetailPage.vue"),
        props: true,
        meta: { menu: "endpoints" },
      },
      {
        path: "groups/:id",
        name: "group",
        component: () => import("./pages/groups/GroupDetailPage.vue"),
        props: true,
        meta: { menu: "groups" },
      },
      {
        path: "messages/:seq(\\d+)",
        name: "message",
        component: () => import("./pages/messages/MessageDetailPage.vue"),
        props: (r) => ({ seq: Number(r.params.seq) }),
        meta: { menu: "messages" },
      },
      {
        path: ":rest(.*)*",
        name: "missing",
        component: () => import("./pages/MissingPage.vue"),
      },
    ],
  },
];

/** Builds the router; pages need a session except the login page. */
export function createConsoleRouter(pinia: Pinia) {
  const router = createRouter({ history: createWebHistory(), routes });
  const session = useSession(pinia);

  router.beforeEach(async (to) => {
    if (!session.checked) await session.check().catch(() => null);
    if (to.meta.public) {
      return session.me !== null && to.name === "login" ? { name: "overview" } : true;
    }
    if (session.me === null) {
      return { name: "login", query: to.fullPath === "/" ? {} : { redirect: to.fullPath } };
    }
    return true;
  });

  // spec 8: a 401 on any request means the session ended. Inside the console the re-login dialog
  // opens over the page, so nothing typed is lost; giving up goes to the login page.
  onUnauthorized(async () => {
    const here = router.currentRoute.value;
    if (here.name === "login" || session.me === null) {
      session.forget();
      return false;
    }
    if (await session.expire()) return true;
    await router.replace({
      name: "login",
      query: here.fullPath === "/" ? {} : { redirect: here.fullPath },
    });
    return false;
  });

  // A page's code is fetched on first use; when that fails (server stopped, network down) the
  // layout shows the error with a retry instead of a click that silently does nothing.
  router.onError((err, to) => {
    if (!isChunkLoadError(err)) throw err;
    loadFailure.value = { path: to.fullPath, message: String((err as Error).message ?? err) };
  });
  router.afterEach((_to, _from, failure) => {
    if (failure === undefined) loadFailure.value = null;
  });
  return router;
}
