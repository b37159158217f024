// Usage: node mcp_tasks.mjs <url> <gate>
// Tasks through the TypeScript SDK client (its experimental tasks API, protocol 2025-11-25): one
// call run as a task and streamed to its result, then a call waiting for the file <gate>, which a
// second client cancels, reads back and lists. Prints one JSON document on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, gate] = process.argv.slice(2);

async function connect(name) {
  const client = new Client({ name, version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

function summary(message) {
  if (message.type === "result") return { type: "result", result: message.result };
  if (message.type === "error") return { type: "error", error: String(message.error) };
  return { type: message.type, status: message.task.status, taskId: message.task.taskId };
}

const client = await connect("ts-sdk-tasks");
const capabilities = client.getServerCapabilities();
const tools = (await client.listTools()).tools.map((tool) => ({
  name: tool.name,
  execution: tool.execution ?? null,
}));

const streamed = [];
const echo = client.experimental.tasks.callToolStream(
  { name: "tk_echo", arguments: { text: "from node" } },
  CallToolResultSchema,
  { task: { ttl: 60000 } },
);
for await (const message of echo) streamed.push(summary(message));

const gated = client.experimental.tasks.callToolStream(
  { name: "tk_gated", arguments: { gate } },
  CallToolResultSchema,
  { task: { ttl: 60000 } },
);
const created = summary((await gated.next()).value);
await gated.return(undefined);

const other = await connect("ts-sdk-tasks-other");
const cancelled = await other.experimental.tasks.cancelTask(created.taskId);
const after = await other.experimental.tasks.getTask(created.taskId);
const listed = await other.experimental.tasks.listTasks();

console.log(
  JSON.stringify({
    capabilities,
    tools,
    streamed,
    created,
    cancelled: { taskId: cancelled.taskId, status: cancelled.status },
    after: { taskId: after.taskId, status: after.status },
    listed: listed.tasks.map((task) => ({ taskId: task.taskId, status: task.status })),
  }),
);
await client.close();
await other.close();
