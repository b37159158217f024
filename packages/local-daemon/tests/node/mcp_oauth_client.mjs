// Usage: node mcp_oauth_client.mjs <mcp url> <login code>
// The TypeScript SDK's own OAuth client signs in to the daemon: discovery, dynamic registration,
// PKCE, the browser step on the daemon's pages (as their scripts do it, with the login code),
// the code exchange, then tools/list and one tools/call. Prints one JSON document on stdout.
// test_oauth_remote.py runs it in a network namespace over TLS (NODE_EXTRA_CA_CERTS names the CA).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, loginCode] = process.argv.slice(2);
const origin = new URL(url).origin;
const redirectUrl = "http://127.0.0.1:9/callback";
const held = { tokens: undefined, client: undefined, verifier: undefined, authUrl: undefined };

const provider = {
  get redirectUrl() { return redirectUrl; },
  get clientMetadata() {
    return {
      client_name: "ts sdk client",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation() { return held.client; },
  saveClientInformation(info) { held.client = info; },
  tokens() { return held.tokens; },
  saveTokens(tokens) { held.tokens = tokens; },
  redirectToAuthorization(authUrl) { held.authUrl = authUrl; },
  saveCodeVerifier(verifier) { held.verifier = verifier; },
  codeVerifier() { return held.verifier; },
};

// The person at the browser: the consent page, sign in with the login code, Allow.
async function browserStep(authUrl) {
  const opened = await fetch(authUrl, { redirect: "manual" });
  const consent = new URL(opened.headers.get("location"), authUrl);
  const request = consent.searchParams.get("request");
  const json = { "Content-Type": "application/json", Origin: origin };
  const signedIn = await fetch(origin + "/auth/login", {
    method: "POST", headers: json, body: JSON.stringify({ code: loginCode }),
  });
  const cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0];
  const page = await (await fetch(consent, { headers: { Cookie: cookie } })).text();
  const decided = await fetch(origin + "/auth/consent", {
    method: "POST",
    headers: { ...json, Cookie: cookie },
    body: JSON.stringify({ request, allow: true }),
  });
  const redirect = new URL((await decided.json()).data.redirect);
  return {
    code: redirect.searchParams.get("code"),
    named: page.includes("ts sdk client"),
    signedIn: signedIn.status,
  };
}

let first = "connected";
const firstTry = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
try {
  await new Client({ name: "ts-oauth", version: "0.0.0" }).connect(firstTry);
} catch (error) {
  if (!(error instanceof UnauthorizedError)) throw error;
  first = "unauthorized";
  held.step = await browserStep(held.authUrl);
  await firstTry.finishAuth(held.step.code);
}

const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
const client = new Client({ name: "ts-oauth", version: "0.0.0" });
await client.connect(transport);
const listed = await client.listTools();
// The daemon's echo command, whatever its tool prefix.
const echo = listed.tools.find((tool) => tool.name.endsWith("_echo"));
const called = await client.callTool({ name: echo.name, arguments: { text: "from ts" } });
await client.close();
process.stdout.write(JSON.stringify({
  first,
  step: held.step,
  authUrl: String(held.authUrl ?? ""),
  clientId: held.client?.client_id ?? null,
  tokenType: held.tokens?.token_type ?? null,
  hasRefresh: Boolean(held.tokens?.refresh_token),
  tools: listed.tools.map((tool) => tool.name),
  called: called.structuredContent ?? null,
}));
