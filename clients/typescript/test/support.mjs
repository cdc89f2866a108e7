// Starts a real `memstrata serve` for the tests: free ports, a temporary data dir, and
// the admin key its first start writes; stopped (SIGINT, then SIGKILL) afterwards.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, openSync, closeSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const REPOSITORY = resolve(PACKAGE, "..", "..");
export const START_TIMEOUT_MS = 300_000;

/** The Python that runs memstrata: MEMSTRATA_PYTHON, else the clone's .venv, else python3. */
export function python() {
  if (process.env.MEMSTRATA_PYTHON) return process.env.MEMSTRATA_PYTHON;
  const venv = join(REPOSITORY, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

/** The OpenAPI document the client was generated from. */
export function committedDocument() {
  return JSON.parse(readFileSync(join(PACKAGE, "openapi.json"), "utf8"));
}

export async function freePort() {
  const server = createServer();
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address();
  await new Promise((ok) => server.close(ok));
  return port;
}

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

function tail(log) {
  try {
    return readFileSync(log, "utf8").slice(-2000);
  } catch {
    return "";
  }
}

/** Spawns `memstrata serve` over a fresh data dir; `env` adds to the environment. */
export async function spawnServe(env = {}) {
  const dir = mkdtempSync(join(tmpdir(), "memstrata-ts-"));
  const dataDir = join(dir, "data");
  const log = join(dir, "serve.log");
  const [port, grpcPort] = [await freePort(), await freePort()];
  const out = openSync(log, "w");
  const child = spawn(
    python(),
    ["-m", "memstrata.cli", "serve", "--data-dir", dataDir, "--port", `${port}`, "--grpc-port", `${grpcPort}`],
    { stdio: ["ignore", out, out], env: { ...process.env, ...env } },
  );
  closeSync(out);
  const exited = new Promise((ok) => child.once("exit", (code, signal) => ok({ code, signal })));
  let stopped = false;
  child.once("exit", () => {
    stopped = true;
  });
  const server = {
    url: `http://127.0.0.1:${port}`,
    dataDir,
    log,
    get running() {
      return !stopped;
    },
    /** The log's last lines (for a failure's message). */
    tail: () => tail(log),
    /** Polls `path` until `accept(response)` holds, the process exits or time runs out. */
    async until(path, accept) {
      const deadline = Date.now() + START_TIMEOUT_MS;
      while (Date.now() < deadline) {
        if (stopped) throw new Error(`memstrata serve exited: ${tail(log)}`);
        try {
          const response = await fetch(`${server.url}${path}`, { signal: AbortSignal.timeout(5000) });
          if (await accept(response)) return response;
        } catch {
          // not listening yet
        }
        await sleep(200);
      }
      throw new Error(`memstrata serve did not answer ${path} in time: ${tail(log)}`);
    },
    async stop() {
      if (!stopped) {
        child.kill("SIGINT");
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

/** A ready `memstrata serve` and its operator admin key (tenant `default`). */
export async function startServe() {
  const server = await spawnServe();
  try {
    await server.until("/readyz", (response) => response.status === 200);
  } catch (error) {
    await server.stop();
    throw error;
  }
  // Written on the first start, before /readyz answers 200.
  server.adminKey = readFileSync(join(server.dataDir, "admin.key"), "utf8").trim();
  return server;
}

/** A TCP port that accepts connections and answers nothing until closed: a Valkey that
 * holds the service's start-up still, so it stays observably "starting". */
export async function heldValkey() {
  const sockets = new Set();
  const listener = createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise((ok) => listener.listen(0, "127.0.0.1", ok));
  return {
    url: `redis://127.0.0.1:${listener.address().port}/0`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((ok) => listener.close(ok));
    },
  };
}
