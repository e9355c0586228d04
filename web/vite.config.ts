/**
 * Builds the admin console into web/dist, which the server serves (server/http/static.ts).
 * Hashed files go to dist/assets/ (served as immutable); index.html is revalidated each time.
 * `deno task dev` proxies /api to a server on the default port (spec 3).
 */
import { defineConfig } from "vite";
import vue from "@vitejs/plugin-vue";

export default defineConfig({
  plugins: [vue()],
  build: {
    outDir: "dist",
    assetsDir: "assets",
    emptyOutDir: true,
    chunkSizeWarningLimit: 1500,
  },
  server: {
    proxy: { "/api": "http://127.0.0.1:7443" },
  },
});
