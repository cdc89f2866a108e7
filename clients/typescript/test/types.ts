// Compile-time checks (`tsc -p test/tsconfig.json`, part of `npm run build`): the
// methods' bodies and results are the document's types, through the built package.
import { Client, ValidationError, type RequestOf, type ResponseOf, type Schema } from "../dist/index.js";

declare const client: Client;

export async function typed(): Promise<void> {
  const receipt = await client.observe({ session_id: "s", role: "user", text: "hi" });
  const queued: boolean = receipt.queued;
  const found = await client.retrieve({ query: "where do I live", user_id: "alice", k: 3 });
  const first: string | undefined = found.items[0]?.text;
  const bundle: Schema<"Bundle"> = await client.route({ session_id: "s", step_intent: "respond" });
  // A body whose fields all have defaults may be left out.
  await client.list_keys();
  await client.flush();

  // @ts-expect-error: observe needs a session, a role and a text
  await client.observe({ session_id: "s" });
  // @ts-expect-error: a field the operation does not have
  await client.retrieve({ query: "x", no_such_field: 1 });
  // @ts-expect-error: a wrong type
  await client.retrieve({ query: "x", k: "three" });
  // @ts-expect-error: an operation the document does not have
  await client.no_such_operation({});

  const body: RequestOf<"remember"> = { user_id: "alice", text: "I moved.", wait: true };
  const result: ResponseOf<"remember"> = await client.remember(body);
  const error: unknown = null;
  if (error instanceof ValidationError) {
    const field: string | undefined = error.field;
    void field;
  }
  void [queued, first, bundle, result];
}
