// Usage: node mcp_progress.mjs <url>
// Progress and cancellation through the TypeScript SDK client: one call with an onprogress
// handler, then two calls aborted (AbortSignal) at their first progress notification; while
// still connected, asks the server whether each command saw its cancellation. Prints one JSON
// document on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [url] = process.argv.slice(2);
const client = new Client({ name: "ts-sdk-progress", version: "0.0.0" });
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const progress = [];
const steps = await client.callTool({ name: "steps", arguments: { n: 3 } }, CallToolResultSchema, {
  onprogress: (p) => progress.push(p),
});

async function abortAtFirstProgress(name) {
  const controller = new AbortController();
  try {
    await client.callTool({ name, arguments: {} }, CallToolResultSchema, {
      signal: controller.signal,
      onprogress: () => controller.abort("user gave up"),
    });
    return "answered";
  } catch (error) {
    return controller.signal.aborted ? "aborted" : `failed: ${error}`;
  }
}

const aborted = {
  async: await abortAtFirstProgress("wait_forever"),
  sync: await abortAtFirstProgress("poll_flag"),
};
const observed = {};
for (const what of ["async", "sync"]) {
  const answer = await client.callTool({ name: "was_cancelled", arguments: { what } });
  observed[what] = answer.structuredContent;
}
await client.close();
process.stdout.write(JSON.stringify({ steps: steps.structuredContent, progress, aborted, observed }));
