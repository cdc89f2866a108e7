// The client against a live `memstrata serve`: every operation of the document called
// once with valid input, the typed errors of each status, and the key header.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import {
  AuthenticationError,
  Client,
  ConflictError,
  MemstrataError,
  NotFoundError,
  OPERATION_NAMES,
  PermissionDeniedError,
  ValidationError,
} from "../dist/index.js";
import { committedDocument, startServe } from "./support.mjs";

/** Operations not called here, with the reason (none today: keep it so). */
const NOT_CALLED = {};

let server;
let operator; // the operator's admin key (tenant `default`), written by the first start
let acme; // an admin of tenant `acme`, made through the service
before(async () => {
  server = await startServe();
  operator = new Client({ url: server.url, apiKey: server.adminKey });
  const made = await operator.create_key({ agent: "admin", role: "admin", tenant: "acme", rate_per_s: 1_000_000 });
  acme = new Client({ url: server.url, apiKey: made.key });
});
after(async () => {
  await server?.stop();
});

describe("the generated client", () => {
  test("has a method for every operationId of the document", () => {
    const ids = [];
    for (const item of Object.values(committedDocument().paths)) {
      for (const operation of Object.values(item)) if (operation.operationId) ids.push(operation.operationId);
    }
    assert.ok(ids.length > 0);
    assert.deepEqual([...OPERATION_NAMES].sort(), [...ids].sort());
    for (const id of ids) assert.equal(typeof Client.prototype[id], "function", id);
  });

  test("was generated from the document the service serves", async () => {
    const served = await (await fetch(`${server.url}/openapi.json`)).json();
    assert.deepEqual(served, committedDocument(), "openapi.json is stale: run `make generate`");
  });
});

/** Wraps a client so the test knows which operations it called. */
function recording(client, called) {
  return new Proxy(client, {
    get(target, name) {
      const value = target[name];
      if (typeof value !== "function" || !OPERATION_NAMES.includes(name)) return value;
      return (...args) => {
        called.add(name);
        return value.apply(target, args);
      };
    },
  });
}

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

test("every operation, called with valid input", async () => {
  const called = new Set();
  const call = recording(acme, called);
  const tag = Math.random().toString(16).slice(2, 10);
  const user = `u-ts-${tag}`;
  const sid = `s-ts-${tag}`;

  // Keys: an admin makes a writer key, lists it, revokes it.
  const made = await call.create_key({ agent: `bot-${tag}`, role: "writer" });
  assert.ok(made.key.startsWith("msk_"));
  assert.equal(made.info.tenant, "acme");
  const listed = await call.list_keys();
  assert.ok(listed.keys.some((k) => k.key_id === made.info.key_id));
  assert.equal((await call.revoke_key({ key_id: made.info.key_id })).revoked, true);

  // Dead letters: none here; an unknown id is not found.
  assert.deepEqual((await call.list_dead_letters({ limit: 10 })).dead_letters, []);
  await assert.rejects(call.replay_dead_letter({ dead_id: "1-0" }), NotFoundError);

  // L1
  const session = await call.start_session({ user_id: user, initial_query: "plan a trip", session_id: sid });
  assert.equal(session.session_id, sid);
  assert.equal((await call.get_session({ session_id: sid })).current_step, 0);
  const updated = await call.update_session({
    session_id: sid,
    advance: 2,
    entity_id: "device-7",
    pointers: { order: "o-1" },
    api_result: { status: "success", data: { ok: true } },
    action: { action_id: "lookup", payload: { q: 1 } },
  });
  assert.equal(updated.current_step, 2);
  assert.equal(updated.last_entity_id, "device-7");

  // L3 writes
  for (const text of ["I live in Hangzhou.", "I'm allergic to peanuts and shellfish."]) {
    const receipt = await call.observe({ session_id: sid, role: "user", text });
    assert.equal(receipt.queued, true);
  }
  const remembered = await call.remember({ user_id: user, text: "My budget for the trip is 5000 yuan.", wait: true });
  assert.deepEqual(
    remembered.facts.map((f) => f.attribute),
    ["budget"],
  );
  assert.deepEqual(await call.flush({ timeout_s: 60 }), { flushed: true });

  // Listing, history, export and import
  assert.ok((await call.list_users()).users.some((u) => u.user === user));
  const page = await call.list_memories({ user_id: user, kind: "fact", page_size: 50 });
  const budget = page.items.find((item) => item.fact?.attribute === "budget");
  assert.ok(budget, "the remembered budget is listed without a query");
  const history = await call.history({ fact_id: budget.id });
  assert.equal(history.attribute, "budget");
  assert.ok(history.versions.length >= 1);
  const exported = await call.export_memories({ user_id: user });
  assert.ok(exported.lines > 1);
  assert.equal(JSON.parse(exported.jsonl.split("\n")[0]).format, "memstrata-export");
  const reimported = await call.import_memories({ content: exported.jsonl });
  assert.equal(reimported.added, 0, "importing what is already there changes nothing");

  // Retrieval, routing, context
  const found = await call.retrieve({ query: "what am I allergic to", user_id: user, k: 3 });
  assert.ok(found.items.some((item) => item.text.includes("peanuts")));
  const bundle = await call.route({ session_id: sid, step_intent: "respond", query: "my allergies" });
  assert.equal(bundle.session_id, sid);
  const built = await call.build_context({
    session_id: sid,
    step_intent: "respond",
    user_input: "Recommend a restaurant that is safe for my allergies.",
    system_prompt: "You are a travel assistant.",
    history: [{ role: "user", content: "hello" }],
    tool_results: [{ call_id: "c1", name: "search", content: "Two restaurants." }],
  });
  assert.ok(built.messages.map((m) => m.content).join("\n").includes("peanuts"));
  assert.ok(built.total_tokens <= built.available_tokens);

  // Decisions: tools and a policy, decide, the gate, the fallback chain, the reply check.
  const lookup = {
    name: "device_lookup",
    description: "Look the device up",
    parameters: {
      type: "object",
      properties: { device_id: { type: "string" } },
      required: ["device_id"],
    },
    bound: { device_id: "l1.last_entity_id" },
  };
  assert.equal((await call.register_tool(lookup)).name, "device_lookup");
  await call.register_tool({ ...lookup, name: "device_refund", high_impact: true, risk: "high" });
  const tools = (await call.list_tools()).tools.map((t) => t.name);
  assert.ok(tools.includes("device_lookup") && tools.includes("device_refund"));
  const policy = await call.register_policy({
    intent: "call_api",
    risk: "medium",
    evidence: ["api_cache"],
    slots: [{ name: "device", sources: ["l1.last_entity_id"], question: "Which?" }],
    tool: "device_lookup",
    tool_params: { device_id: "device" },
  });
  assert.equal(policy.tool, "device_lookup");
  const decision = await call.decide({ session_id: sid, step_intent: "call_api", question: "status?" });
  assert.equal(decision.route, "tool");
  assert.deepEqual(decision.params, { device_id: "device-7" });
  const cardId = decision.card_id;
  assert.equal((await call.call_tool({ card_id: cardId })).outcome, "approved");
  const retried = await call.report_tool_result({ card_id: cardId, tool: "device_lookup", ok: false, error: "x" });
  assert.equal(retried.outcome, "approved");
  const done = await call.report_tool_result({ card_id: cardId, tool: "device_lookup", ok: true });
  assert.equal(done.outcome, "done");
  const held = await call.call_tool({ card_id: cardId, tool: "device_refund", params: { device_id: "device-7" } });
  assert.equal(held.outcome, "pending_confirmation");
  const rejected = await call.confirm_tool({ pending_id: held.pending_id, confirmed: false });
  assert.equal(rejected.outcome, "rejected");
  const checked = await call.check_reply({ card_id: cardId, reply: "The device is fine." });
  assert.equal(checked.consistent, true);
  const feedback = await call.feedback({ card_id: cardId, kind: "rating", rating: 5 });
  assert.equal(feedback.card_id, cardId);
  let report;
  for (let i = 0; i < 300; i += 1) {
    report = await call.feedback_report();
    if (report.events) break;
    await sleep(100);
  }
  assert.ok((report.by_kind.rating ?? 0) >= 1);
  // The health report covers every tenant: the operator's admin key only.
  await assert.rejects(call.health_report({ since: "1h" }), PermissionDeniedError);
  const health = await recording(operator, called).health_report({ since: "1h" });
  assert.ok(health.html.includes("<svg"));
  const cards = (await call.trace_cards({ session_id: sid })).cards;
  assert.deepEqual(
    cards.map((c) => c.id),
    [cardId],
  );

  // L2
  const put = await call.put_api_response({ session_id: sid, endpoint: "weather", params: { city: "x" }, value: { temp: 21 } });
  const got = await call.get_api_response({ session_id: sid, endpoint: "weather", params: { city: "x" } });
  assert.equal(got.key, put.key);
  assert.deepEqual(got.value, { temp: 21 });
  await call.put_step_result({ session_id: sid, step_id: "plan", fields: { days: 3 } });
  assert.deepEqual((await call.get_step_result({ session_id: sid, step_id: "plan" })).value, { days: 3 });
  const kept = await call.append_series({
    session_id: sid,
    metric: "temp",
    points: [
      { timestamp: 1.0, value: 20 },
      { timestamp: 2.0, value: 22 },
    ],
  });
  assert.equal(kept.kept, 2);
  const series = await call.read_series({ session_id: sid, metric: "temp", start: 1.5 });
  assert.deepEqual(
    series.points.map((p) => p.value),
    [22],
  );
  assert.deepEqual((await call.add_pending({ session_id: sid, task_ids: ["t1", "t2"] })).pending, ["t1", "t2"]);
  assert.deepEqual((await call.complete_pending({ session_id: sid, task_ids: ["t1"] })).pending, ["t2"]);
  const inspected = await call.inspect({ session_id: sid });
  assert.deepEqual(inspected.pending_tasks, ["t2"]);

  // Knowledge
  const ingested = await call.ingest_documents({
    documents: [{ name: `faq-${tag}.md`, text: "# Refunds\n\nRefunds take 5 days." }],
  });
  assert.equal(ingested.files_added, 1);
  const confirmed = await call.confirm_knowledge({ query: "how long do refunds take", response: "5 days", source: "test" });
  assert.ok(confirmed.id);
  const knowledge = await call.retrieve({ query: "how long do refunds take", collection: "knowledge" });
  assert.ok(knowledge.items.some((i) => i.text.includes("Refunds take 5 days")));

  // Shared namespaces
  const ns = `ops-${tag}`;
  assert.equal((await call.create_namespace({ namespace: ns, purpose: "shared ops notes", ttl_s: 600 })).owner, "admin");
  assert.ok((await call.list_namespaces()).namespaces.some((n) => n.namespace === ns));
  assert.equal((await call.request_access({ namespace: ns, purpose: "read ops notes", mode: "write" })).agent, "admin");
  assert.equal((await call.access_requests({ namespace: ns })).requests[0].purpose, "read ops notes");
  assert.equal((await call.grant_access({ namespace: ns, agent: `peer-${tag}` })).namespace, ns);
  assert.deepEqual(await call.revoke_access({ namespace: ns, agent: `peer-${tag}` }), {});
  const shared = await call.put_shared({ namespace: ns, item_id: "n1", value: { note: "line 7 down" } });
  assert.equal(shared.written_by, "admin");
  assert.ok((await call.shared_items()).items.some((i) => i.namespace === ns && i.item_id === "n1"));

  // The item store
  const nsPath = ["memories", user];
  await call.store_put({ namespace: nsPath, key: "diet", value: { text: "no peanuts" } });
  assert.deepEqual((await call.store_get({ namespace: nsPath, key: "diet" })).item.value, { text: "no peanuts" });
  const searched = await call.store_search({ namespace_prefix: ["memories"], query: "peanut allergy" });
  assert.ok(searched.items.some((i) => i.key === "diet"));
  const namespaces = (await call.store_list_namespaces({ prefix: ["memories"] })).namespaces;
  assert.ok(namespaces.some((n) => JSON.stringify(n.namespace) === JSON.stringify(nsPath)));
  assert.equal((await call.store_delete({ namespace: nsPath, key: "diet" })).deleted, true);

  // Maintenance
  assert.ok(Array.isArray((await call.consolidate()).actions));
  assert.deepEqual((await call.restore({ ids: ["00000000-0000-0000-0000-000000000000"] })).restored, []);

  // Forget, then close.
  const started = await call.forget({ user_id: user });
  assert.equal(started.kind, "user");
  const forgotten = await call.forget_status({ job_id: started.job_id, timeout_s: 120 });
  assert.equal(forgotten.state, "done");
  await assert.rejects(call.end_session({ session_id: sid }), NotFoundError);
  const again = await call.start_session({ user_id: user, initial_query: "again", session_id: `${sid}b` });
  assert.equal((await call.end_session({ session_id: again.session_id })).session_id, `${sid}b`);

  const missing = OPERATION_NAMES.filter((name) => !called.has(name) && !(name in NOT_CALLED));
  assert.deepEqual(missing, [], "an operation has no call here (call it, or list it in NOT_CALLED with why)");
});

describe("typed errors", () => {
  test("401: no key, or an unknown one, is an AuthenticationError", async () => {
    for (const client of [new Client({ url: server.url, apiKey: "" }), new Client({ url: server.url, apiKey: "msk_nope" })]) {
      const error = await client.list_keys().then(
        () => assert.fail("answered without a valid key"),
        (e) => e,
      );
      assert.ok(error instanceof AuthenticationError && error instanceof MemstrataError, String(error));
      assert.equal(error.status, 401);
      assert.equal(error.code, "unauthenticated");
      assert.equal(error.operation, "list_keys");
    }
  });

  test("403: a tenant admin asking for every tenant's health report", async () => {
    await assert.rejects(acme.health_report({ since: "1h" }), (e) => {
      assert.ok(e instanceof PermissionDeniedError);
      assert.equal(e.status, 403);
      assert.equal(e.code, "permission_denied");
      return true;
    });
  });

  test("404: a session that does not exist", async () => {
    await assert.rejects(acme.get_session({ session_id: "no-such-session" }), (e) => {
      assert.ok(e instanceof NotFoundError);
      assert.equal(e.status, 404);
      assert.equal(e.code, "not_found");
      return true;
    });
  });

  test("409: a session id already open for another user", async () => {
    await acme.start_session({ user_id: "ann", initial_query: "hello", session_id: "taken-1" });
    await assert.rejects(acme.start_session({ user_id: "bob", initial_query: "hello", session_id: "taken-1" }), (e) => {
      assert.ok(e instanceof ConflictError);
      assert.equal(e.status, 409);
      assert.equal(e.code, "aborted");
      assert.equal(e.field, "session_id");
      return true;
    });
  });

  test("422: bad input names the field and the reason", async () => {
    await assert.rejects(acme.retrieve({ query: "x", k: -1 }), (e) => {
      assert.ok(e instanceof ValidationError);
      assert.equal(e.status, 422);
      assert.equal(e.code, "invalid_argument");
      assert.equal(e.field, "k");
      assert.ok(e.reason);
      return true;
    });
  });
});

describe("the API key", () => {
  test("goes out as Authorization: Bearer <key>, set once for every call", async () => {
    const seen = [];
    const client = new Client({
      url: server.url,
      apiKey: server.adminKey,
      fetch: (request) => {
        seen.push(request.headers.get("authorization"));
        return fetch(request);
      },
    });
    await client.list_keys();
    await client.list_namespaces({});
    assert.deepEqual(seen, [`Bearer ${server.adminKey}`, `Bearer ${server.adminKey}`]);
  });

  test("is read from MEMSTRATA_API_KEY and MEMSTRATA_URL when not given", async () => {
    const saved = { url: process.env.MEMSTRATA_URL, key: process.env.MEMSTRATA_API_KEY };
    process.env.MEMSTRATA_URL = server.url;
    process.env.MEMSTRATA_API_KEY = server.adminKey;
    try {
      const client = new Client();
      assert.equal(client.url, server.url);
      assert.ok(Array.isArray((await client.list_keys()).keys));
    } finally {
      for (const [name, value] of [
        ["MEMSTRATA_URL", saved.url],
        ["MEMSTRATA_API_KEY", saved.key],
      ]) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});

test("the README's quick start runs as written", async () => {
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  const block = /```typescript\n([\s\S]*?)```/.exec(readme);
  assert.ok(block, "README.md has a typescript block");
  // The package by its path (the block imports it by name, as an installed one).
  const index = new URL("../dist/index.js", import.meta.url).href;
  const source = block[1].replace('from "ctxstrata"', `from ${JSON.stringify(index)}`);
  assert.notEqual(source, block[1]);
  const dir = mkdtempSync(join(tmpdir(), "memstrata-ts-readme-"));
  try {
    const file = join(dir, "quickstart.mjs");
    writeFileSync(file, source);
    const key = (await operator.create_key({ agent: "readme", role: "writer", tenant: "readme" })).key;
    const { stdout } = await promisify(execFile)(process.execPath, [file], {
      env: { ...process.env, MEMSTRATA_URL: server.url, MEMSTRATA_API_KEY: key },
      timeout: 300_000,
    });
    assert.match(stdout, /Chengdu/);
    assert.match(stdout, /peanuts/);
    assert.match(stdout, /^not_found /m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
