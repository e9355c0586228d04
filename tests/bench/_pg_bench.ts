// The PostgreSQL side of the load benchmarks (issue 29): a fresh database on a PostgreSQL the
// bench is given (an admin URL), filled with the bench's endpoints through the store's own ops,
// and the CPU of that PostgreSQL server (the postmaster and every backend) read from /proc, so a
// run on PostgreSQL counts the database's CPU as a run on SQLite counts the writer Worker's.
import { openPostgresStore } from "../../server/store/postgres/mod.ts";
import { connectPostgres, execScript, query } from "../../server/store/postgres/sql.ts";
import { PasswordPool } from "../../server/auth/password_pool.ts";
import { TEST_POOL_PARAMS } from "../helpers/test_server.ts";
import { makeTestHome, type TestHome } from "../helpers/server_process.ts";
import { prepareHome } from "./_load_util.ts";

/** A bench database and what drops it. */
export interface BenchDatabase {
  url: string;
  /** The PostgreSQL server's CPU time so far, in ms (postmaster, live backends, reaped ones). */
  cpuMs(): number;
  drop(): Promise<void>;
}

let clockTicks = 0;

function statFields(pid: number): string[] | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null; // the process has exited
  }
}

/**
 * CPU of `postmaster` and its children in ms: utime + stime of each live process, plus the
 * postmaster's cutime + cstime (backends that already exited and were reaped).
 */
export function postgresCpuMs(postmaster: number): number {
  if (clockTicks === 0) {
    const out = new Deno.Command("getconf", { args: ["CLK_TCK"] }).outputSync();
    clockTicks = Number(new TextDecoder().decode(out.stdout).trim()) || 100;
  }
  let ticks = 0;
  const own = statFields(postmaster);
  if (own === null) return 0;
  // Fields after the command name: ppid is 2nd (index 1), utime 14th, stime 15th, cutime 16th,
  // cstime 17th of the whole line (indexes 11 to 14 here).
  ticks += Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const f = statFields(Number(entry.name));
    if (f === null || Number(f[1]) !== postmaster) continue;
    ticks += Number(f[11]) + Number(f[12]);
  }
  return (ticks * 1000) / clockTicks;
}

/**
 * Creates `nixmsg_bench_<pid>_<n>` on the PostgreSQL of `adminUrl`, migrated, with the admin
 * password set and `ids` as endpoints with `password` (hashed at the cheap test cost, as the
 * SQLite bench homes are). The PostgreSQL server must run on this machine for `cpuMs`.
 */
export async function benchDatabase(
  adminUrl: string,
  ids: readonly string[],
  password: string,
): Promise<BenchDatabase> {
  const name = `nixmsg_bench_${Deno.pid}_${Date.now() % 1_000_000}`;
  const admin = connectPostgres({ url: adminUrl, max: 1 });
  let postmaster = 0;
  try {
    await execScript(admin, `CREATE DATABASE ${name}`);
    const [row] = await query<{ pid: number }>(admin, "SELECT pg_backend_pid() AS pid");
    postmaster = Number(statFields(row.pid)?.[1] ?? 0);
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  const store = await openPostgresStore({ url, maxBatch: 256, maxWaitMs: 2, poolSize: 4 });
  try {
    const hash = await new PasswordPool({ params: TEST_POOL_PARAMS }).hash(password);
    await store.run("settings.set", { key: "admin_password_hash", value: hash });
    for (let i = 0; i < ids.length; i += 256) {
      await Promise.all(
        ids.slice(i, i + 256).map((id) =>
          store.run("endpoint.create", {
            id,
            name: id,
            remark: "",
            source: "admin",
            loginHash: hash,
            talkHash: null,
            defaultDelayMs: 0,
          })
        ),
      );
    }
  } finally {
    await store.close();
  }
  return {
    url,
    cpuMs: () => postmaster === 0 ? 0 : postgresCpuMs(postmaster),
    async drop() {
      const again = connectPostgres({ url: adminUrl, max: 1 });
      try {
        await execScript(again, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await again.end();
      }
    },
  };
}

/** A bench's home on either store (the `--store` flag of the load benches). */
export interface BenchHome {
  home: TestHome;
  /** The PostgreSQL database, null on SQLite. */
  pgDb: BenchDatabase | null;
}

/**
 * The home of a bench server with `ids` as endpoints with `password`: a SQLite home
 * (`prepareHome`), or with `store` "postgres" a fresh database on the PostgreSQL of
 * NIXMSG_BENCH_POSTGRES_URL (an admin URL, on this machine so that its CPU is counted; stores.ts
 * sets it). Exits with 2 on a bad `store` or a missing URL. Drop `pgDb` after `home.cleanup()`.
 */
export async function benchHome(
  store: string,
  config: Record<string, unknown>,
  ids: readonly string[],
  password: string,
): Promise<BenchHome> {
  if (store !== "sqlite" && store !== "postgres") {
    console.error("--store is sqlite or postgres");
    Deno.exit(2);
  }
  if (store === "sqlite") return { home: await prepareHome(config, ids, password), pgDb: null };
  const adminUrl = Deno.env.get("NIXMSG_BENCH_POSTGRES_URL");
  if (!adminUrl) {
    console.error(
      "--store postgres needs NIXMSG_BENCH_POSTGRES_URL (tests/bench/stores.ts sets it)",
    );
    Deno.exit(2);
  }
  const pgDb = await benchDatabase(adminUrl, ids, password);
  const home = await makeTestHome({
    ...config,
    store: { kind: "postgres", postgres_url: pgDb.url },
  });
  return { home, pgDb };
}
