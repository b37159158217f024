// Usage: node mcp_client.mjs <url> '<json array of {name, arguments}>'
// Lists the tools, calls each one in order, and prints one JSON document on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, callsJson] = process.argv.slice(2);
const calls = JSON.parse(callsJson ?? "[]");
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { "x-local-client": "ts-sdk-test" } },
});
const client = new Client({ name: "ts-sdk-test", version: "0.0.0" });
await client.connect(transport);
const listed = await client.listTools();
const results = [];
for (const call of calls) {
  results.push(await client.callTool({ name: call.name, arguments: call.arguments ?? {} }));
}
const server = client.getServerVersion();
await client.close();
process.stdout.write(JSON.stringify({ server, tools: listed.tools, results }));
