// 503: a call while the service starts (its Valkey held still) is a typed
// BackendUnavailableError with the time to wait.
import assert from "node:assert/strict";
import { test } from "node:test";

import { BackendError, BackendUnavailableError, Client } from "../dist/index.js";
import { heldValkey, spawnServe } from "./support.mjs";

test("503: a call before the service is ready is a BackendUnavailableError", async () => {
  const valkey = await heldValkey();
  const server = await spawnServe({ MEMSTRATA_REDIS_URL: valkey.url });
  try {
    await server.until("/healthz", async (response) => response.status === 200 && (await response.json()).status === "starting");
    const client = new Client({ url: server.url, apiKey: "msk_any" });
    await assert.rejects(client.retrieve({ query: "x" }), (e) => {
      assert.ok(e instanceof BackendUnavailableError && e instanceof BackendError, String(e));
      assert.equal(e.status, 503);
      assert.equal(e.code, "unavailable");
      assert.equal(e.type, "BackendUnavailableError");
      assert.equal(e.retryAfterS, 1);
      assert.match(e.message, /starting/);
      return true;
    });
  } finally {
    await valkey.close();
    await server.stop();
  }
});
