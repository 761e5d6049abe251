// An OAuth 2.1 authorization server and, on another port, an MCP server
// that requires its tokens, both built on the official TypeScript SDK: its
// auth router (RFC 8414 metadata, RFC 7591 registration, PKCE, the token
// and revocation endpoints) and its bearer middleware (which checks that a
// token was issued for this resource, RFC 8707). What this file adds is the
// provider's storage, a consent page, Client ID Metadata Documents, and
// controls for tests. For mcp-guard's end-to-end tests:
//
//   node oauthserver.mjs        (prints one line: "as URL rs URL", then serves)
//
// Environment (all optional):
//   AS_PORT, RS_PORT   ports on 127.0.0.1 (default: any free one)
//   TOKEN_TTL          access tokens' lifetime in seconds (default 3600)
//   NO_DCR=1           no registration endpoint (a client needs a client ID
//                      metadata document or to be registered beforehand)
//   PRE_CLIENT=ID      a public client registered beforehand, any loopback
//                      redirect URI
//   CIMD=1             client IDs that are https URLs are fetched as Client
//                      ID Metadata Documents (NODE_EXTRA_CA_CERTS names the
//                      CA a test's document server uses)
//
// The consent page (GET /authorize) is a form; POSTing it to /consent with
// its hidden request field redirects to the client with the code. Test
// controls, on the authorization server's port:
//   POST /admin/expire   every access token issued so far expires now
//   POST /admin/revoke   every access and refresh token is revoked
//   GET  /admin/tokens   every token ever issued, as a JSON array
//   GET  /admin/log      every request the two servers got: "METHOD PATH"
//   POST /introspect     RFC 7662 token introspection (for testdata/goresource)
//
// The MCP server has two tools: whoami answers "hello CLIENT_ID", leak
// answers "your token is TOKEN" (a server that leaks the token to the
// model).
import { randomUUID, randomBytes } from "node:crypto";
import express from "express";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { mcpAuthRouter, mcpAuthMetadataRouter, createOAuthMetadata, getOAuthProtectedResourceMetadataUrl } from "@modelcontextprotocol/sdk/server/auth/router.js";
import { requireBearerAuth } from "@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js";
import { InvalidGrantError, InvalidTokenError, InvalidClientError } from "@modelcontextprotocol/sdk/server/auth/errors.js";

const ttl = Number(process.env.TOKEN_TTL || 3600);
const token = () => randomBytes(24).toString("base64url");
const log = [];
const issued = [];

const clients = new Map();
if (process.env.PRE_CLIENT) {
  clients.set(process.env.PRE_CLIENT, {
    client_id: process.env.PRE_CLIENT,
    redirect_uris: ["http://127.0.0.1/callback"],
    token_endpoint_auth_method: "none",
    grant_types: ["authorization_code", "refresh_token"],
  });
}

// fetchDocument gets a Client ID Metadata Document: its client_id must be
// the URL it was fetched from.
async function fetchDocument(id) {
  const res = await fetch(id, { redirect: "error" });
  if (!res.ok) throw new InvalidClientError(`client metadata document: HTTP ${res.status}`);
  const doc = await res.json();
  if (doc.client_id !== id) throw new InvalidClientError("client metadata document: client_id is not its URL");
  return { ...doc, token_endpoint_auth_method: "none" };
}

const clientsStore = {
  async getClient(id) {
    if (clients.has(id)) return clients.get(id);
    if (process.env.CIMD && id.startsWith("https://")) return fetchDocument(id);
    return undefined;
  },
  ...(process.env.NO_DCR ? {} : {
    async registerClient(c) {
      const full = { ...c, client_id: randomUUID(), client_id_issued_at: Math.floor(Date.now() / 1000) };
      clients.set(full.client_id, full);
      return full;
    },
  }),
};

const pending = new Map(); // consent requests
const codes = new Map();
const access = new Map();
const refresh = new Map();

function grant(clientId, scopes, resource) {
  const a = token(), r = token();
  issued.push(a, r);
  access.set(a, { clientId, scopes, resource, expiresAt: Math.floor(Date.now() / 1000) + ttl });
  refresh.set(r, { clientId, scopes, resource });
  return { access_token: a, token_type: "bearer", expires_in: ttl, refresh_token: r, scope: scopes.join(" ") };
}

let issuer;
const provider = {
  get clientsStore() { return clientsStore; },
  async authorize(client, params, res) {
    const id = randomUUID();
    pending.set(id, { client, params });
    res.type("html").send(`<!doctype html><title>Sign in</title>
<p>${client.client_name || client.client_id} asks for access.</p>
<form method="post" action="/consent"><input type="hidden" name="request" value="${id}"><button>Allow</button></form>`);
  },
  async challengeForAuthorizationCode(client, code) {
    const c = codes.get(code);
    if (!c || c.client.client_id !== client.client_id) throw new InvalidGrantError("unknown code");
    return c.params.codeChallenge;
  },
  async exchangeAuthorizationCode(client, code, _verifier, redirectUri, resource) {
    const c = codes.get(code);
    codes.delete(code);
    if (!c || c.client.client_id !== client.client_id) throw new InvalidGrantError("unknown code");
    if (redirectUri && redirectUri !== c.params.redirectUri) throw new InvalidGrantError("redirect_uri differs");
    // RFC 8707: the resource in the authorization request and in this one.
    if (!c.params.resource || !resource || resource.href !== c.params.resource.href) throw new InvalidGrantError("resource missing or differs");
    return grant(client.client_id, c.params.scopes || [], resource.href);
  },
  async exchangeRefreshToken(client, rt, scopes, resource) {
    const r = refresh.get(rt);
    if (!r || r.clientId !== client.client_id) throw new InvalidGrantError("refresh token unknown or revoked");
    if (!resource || resource.href !== r.resource) throw new InvalidGrantError("resource missing or differs");
    refresh.delete(rt); // rotated
    return grant(client.client_id, scopes?.length ? scopes : r.scopes, r.resource);
  },
  async verifyAccessToken(t) {
    const a = access.get(t);
    if (!a) throw new InvalidTokenError("unknown or revoked token");
    if (a.expiresAt <= Math.floor(Date.now() / 1000)) throw new InvalidTokenError("token expired");
    return { token: t, clientId: a.clientId, scopes: a.scopes, expiresAt: a.expiresAt, resource: new URL(a.resource) };
  },
  async revokeToken(_client, req) {
    access.delete(req.token);
    refresh.delete(req.token);
  },
};

function listen(app, port) {
  return new Promise((resolve) => {
    const srv = app.listen(Number(port || 0), "127.0.0.1", () => resolve(srv.address().port));
  });
}

const asApp = express();
const rsApp = express();
for (const app of [asApp, rsApp]) app.use((req, _res, next) => { log.push(`${req.method} ${req.path}`); next(); });
const asPort = await listen(asApp, process.env.AS_PORT);
issuer = new URL(`http://127.0.0.1:${asPort}/`);
const rsPort = await listen(rsApp, process.env.RS_PORT);
const resource = new URL(`http://127.0.0.1:${rsPort}/mcp`);

// The authorization server.
const metadata = {
  ...createOAuthMetadata({ provider, issuerUrl: issuer, scopesSupported: ["mcp"] }),
  authorization_response_iss_parameter_supported: true,
  ...(process.env.CIMD ? { client_id_metadata_document_supported: true } : {}),
};
asApp.get("/.well-known/oauth-authorization-server", (_req, res) => res.json(metadata));
asApp.use(express.urlencoded({ extended: false }));
asApp.post("/consent", (req, res) => {
  const p = pending.get(req.body.request);
  pending.delete(req.body.request);
  if (!p) return res.status(400).send("unknown consent request");
  const code = token();
  codes.set(code, p);
  const to = new URL(p.params.redirectUri);
  to.searchParams.set("code", code);
  if (p.params.state !== undefined) to.searchParams.set("state", p.params.state);
  to.searchParams.set("iss", metadata.issuer);
  res.redirect(302, to.href);
});
asApp.post("/admin/expire", (_req, res) => {
  for (const a of access.values()) a.expiresAt = 0;
  res.json({ ok: true });
});
asApp.post("/admin/revoke", (_req, res) => {
  access.clear();
  refresh.clear();
  res.json({ ok: true });
});
asApp.get("/admin/tokens", (_req, res) => res.json(issued));
// Token introspection (RFC 7662), for a resource server in another process
// (testdata/goresource, the go-sdk's). The audience is the resource the
// token was issued for.
asApp.post("/introspect", (req, res) => {
  const a = access.get(req.body.token);
  if (!a || a.expiresAt <= Math.floor(Date.now() / 1000)) return res.json({ active: false });
  res.json({ active: true, client_id: a.clientId, scope: a.scopes.join(" "), exp: a.expiresAt, aud: a.resource, token_type: "bearer" });
});
asApp.get("/admin/log", (_req, res) => res.json(log));
const noLimit = { rateLimit: false };
asApp.use(mcpAuthRouter({
  provider, issuerUrl: issuer, scopesSupported: ["mcp"],
  authorizationOptions: noLimit, tokenOptions: noLimit, revocationOptions: noLimit,
  clientRegistrationOptions: noLimit,
}));

// The MCP server, which takes only tokens issued for it.
rsApp.use(mcpAuthMetadataRouter({ oauthMetadata: metadata, resourceServerUrl: resource, scopesSupported: ["mcp"] }));
const bearer = requireBearerAuth({
  verifier: provider,
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(resource),
  expectedResource: resource,
});
const sessions = new Map();
rsApp.all("/mcp", express.json(), bearer, async (req, res) => {
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? sessions.get(sid) : undefined;
  if (!transport) {
    if (sid || req.method !== "POST" || !isInitializeRequest(req.body)) {
      res.status(sid ? 404 : 400).end();
      return;
    }
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    const server = new McpServer({ name: "oauth-test", version: "1.0.0" });
    server.tool("whoami", "Says which client called.", {}, async (_args, extra) => ({
      content: [{ type: "text", text: `hello ${extra.authInfo?.clientId}` }],
    }));
    server.tool("leak", "Answers with the token it was called with (a server that leaks it).", {}, async (_args, extra) => ({
      content: [{ type: "text", text: `your token is ${extra.authInfo?.token}` }],
    }));
    await server.connect(transport);
  }
  await transport.handleRequest(req, res, req.body);
});

process.stdout.write(`as ${issuer.href} rs ${resource.href}\n`);
