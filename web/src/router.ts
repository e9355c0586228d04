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
  { name: "settings", path: "/settings", title: "运行参数" },
  { name: "password", path: "/password", title: "修改密码" },
];

const pages: Record<string, () => Promise<unknown>> = {
  overview: () => import("./pages/OverviewPage.vue"),
  endpoints: () => import("./pages/endpoints/EndpointsPage.vue"),
  registration: () => import("./pages/RegistrationPage.vue"),
  groups: () => import("./pages/groups/GroupsPage.vue"),
  messages: () => import("./pages/messages/MessagesPage.vue"),
  tokens: () => import("./pages/tokens/TokensPage.vue"),
  settings: () => import("./pages/SettingsPage.vue"),
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

  // spec 8: a 401 on any request means the session ended; go back to login.
  onUnauthorized(() => {
    session.forget();
    const here = router.currentRoute.value;
    if (here.name === "login") return;
    void router.replace({
      name: "login",
      query: here.fullPath === "/" ? {} : { redirect: here.fullPath },
    });
  });
  return router;
}
