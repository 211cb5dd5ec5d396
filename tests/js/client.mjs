// The TypeScript MCP SDK client against a real godot-mcp server.
//
//   node tests/js/client.mjs [--godot] --http URL --token TOKEN
//   node tests/js/client.mjs [--godot] --stdio COMMAND ARG...
//
// Prints one JSON object with its findings on stdout at the end; exits 0 only when every
// check passed. On a failure it prints the error (stderr) and the findings so far with
// "ok": false and "error" (stdout), and exits 1. Driven by tests/mcp/test_ts_client.py.

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const WAIT = { timeout: 120000 }; // for calls that may wait (Godot starting, an export)
const BIG = { size: 1500000, seed: 3, chunk: 400000 };
const SMALL = 60;
const DEADLINE_MS = 170000;

const findings = { ok: false, transport: null, steps: {} };

class CheckFailed extends Error {}

function check(cond, what, detail) {
  if (!cond) {
    const extra = detail === undefined ? "" : `: ${JSON.stringify(detail).slice(0, 2000)}`;
    throw new CheckFailed(`${what}${extra}`);
  }
}

function sha256(buf) {
  return createHash("sha256").update(buf).digest("hex");
}

function parseArgs(argv) {
  const opts = { godot: false, http: null, token: null, stdio: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--godot") opts.godot = true;
    else if (a === "--http") opts.http = argv[++i];
    else if (a === "--token") opts.token = argv[++i];
    else if (a === "--stdio") {
      opts.stdio = argv.slice(i + 1);
      break;
    } else throw new CheckFailed(`unknown argument ${a}`);
  }
  const stdio = opts.stdio !== null && opts.stdio.length > 0;
  if (stdio === Boolean(opts.http) || (opts.http && !opts.token)) {
    throw new CheckFailed("usage: client.mjs [--godot] (--http URL --token TOKEN | --stdio CMD ARG...)");
  }
  return opts;
}

async function timed(name, fn) {
  const started = performance.now();
  try {
    return await fn();
  } finally {
    findings.steps[name] = Math.round(performance.now() - started);
  }
}

/** Call a tool; the SDK validates structuredContent against the listed outputSchema. */
async function call(client, name, args = {}, options = undefined) {
  const result = await client.callTool({ name, arguments: args }, undefined, options);
  check(result.structuredContent && typeof result.structuredContent === "object", `${name}: no structuredContent`, result);
  check(Object.keys(result.structuredContent)[0] === "outcome", `${name}: "outcome" is not the first key`, result.structuredContent);
  return result;
}

async function ok(client, name, args = {}, options = undefined) {
  const result = await call(client, name, args, options);
  const body = result.structuredContent;
  check(body.outcome === "ok" && result.isError !== true, `${name} did not answer ok`, body);
  return { result, body };
}

function linkOf(result, uri) {
  return (result.content ?? []).find((b) => b.type === "resource_link" && b.uri === uri);
}

/** Read [offset, offset+length) of an artifact; checks the one blob and its _meta. */
async function readRange(client, artifact, offset, length) {
  const uri = `${artifact.uri}?offset=${offset}&length=${length}`;
  const answer = await client.readResource({ uri });
  check(answer.contents.length === 1, "a read answers one content", answer.contents.length);
  const [content] = answer.contents;
  check(content.uri === uri, "a read echoes the requested uri", content.uri);
  check(content.mimeType === artifact.mime_type, "a read carries the artifact's mime type", content.mimeType);
  check(typeof content.blob === "string", "a read answers a blob");
  const bytes = Buffer.from(content.blob, "base64");
  const meta = content._meta ?? {};
  check(
    meta.offset === offset && meta.length === length && meta.size === artifact.size && meta.sha256 === artifact.sha256,
    "a read's _meta states the range",
    meta,
  );
  check(bytes.length === length, "a read answers the bytes of its range", bytes.length);
  return bytes;
}

/** Read a whole artifact in ranges of ``chunk`` bytes and check its SHA-256. */
async function readWhole(client, artifact, chunk) {
  const parts = [];
  let reads = 0;
  for (let offset = 0; offset < artifact.size; offset += chunk) {
    parts.push(await readRange(client, artifact, offset, Math.min(chunk, artifact.size - offset)));
    reads += 1;
  }
  const bytes = Buffer.concat(parts);
  const digest = sha256(bytes);
  check(digest === artifact.sha256, `${artifact.uri}: SHA-256 of the bytes read back`, { digest, artifact });
  return { bytes, reads, sha256: digest, size: bytes.length };
}

async function refusedRead(client, uri) {
  try {
    const answer = await client.readResource({ uri });
    throw new CheckFailed(`a refused range answered contents: ${JSON.stringify(answer).slice(0, 500)}`);
  } catch (err) {
    if (err instanceof CheckFailed) throw err;
    check(err instanceof McpError, "a refused read is a JSON-RPC error", String(err));
    return { code: err.code, message: err.message, data: err.data ?? null };
  }
}

async function basics(client, opts) {
  const listed = await timed("tools_list", () => client.listTools());
  const tools = listed.tools;
  const bad = tools.filter(
    (t) => !NAME.test(t.name) || !t.title || !t.annotations || !t.outputSchema || t.outputSchema.type !== "object",
  );
  check(bad.length === 0, "every tool has a host-safe name, a title, annotations and an outputSchema", bad.map((t) => t.name));
  const names = tools.map((t) => t.name);
  findings.tools = {
    count: tools.length,
    names,
    one_of: tools.filter((t) => Array.isArray(t.outputSchema.oneOf)).length,
    read_only: tools.filter((t) => t.annotations.readOnlyHint === true).map((t) => t.name),
  };
  check(names.includes("server_profile") && names.includes("test_produce"), "server_profile and test_produce are listed", names);

  const { body: profile } = await timed("server_profile", () => ok(client, "server_profile"));
  const unknown = Object.keys(profile.availability).filter((k) => !names.includes(k));
  check(unknown.length === 0, "availability names listed tools", unknown);
  findings.profile = { transport: profile.transport, limits: profile.limits, godot: profile.godot };
  check(profile.transport === findings.transport, "server_profile names the transport", profile.transport);
  const max = profile.limits.max_output_bytes;

  // A large artifact read back in ranges.
  const { result: made, body: produced } = await timed("produce_big", () =>
    ok(client, "test_produce", { size: BIG.size, seed: BIG.seed }),
  );
  const big = produced.artifact;
  check(big.size === BIG.size, "the produced artifact has the asked size", big);
  check(linkOf(made, big.uri), "test_produce answers a resource_link", made.content);
  check(BIG.chunk <= max, "the range fits max_output_bytes", max);
  const whole = await timed("read_big", () => readWhole(client, big, BIG.chunk));
  findings.big = { uri: big.uri, size: whole.size, reads: whole.reads, sha256: whole.sha256, answered_sha256: big.sha256 };

  // Sixty small artifacts, then resources/list page by page.
  const small = [];
  await timed("produce_small", async () => {
    for (let i = 0; i < SMALL; i++) {
      const { body } = await ok(client, "test_produce", { size: 100 + i, seed: 1000 + i });
      small.push(body.artifact);
    }
  });
  const seen = new Map();
  let pages = 0;
  let cursor;
  await timed("resources_list", async () => {
    do {
      const page = await client.listResources(cursor === undefined ? {} : { cursor });
      pages += 1;
      check(pages <= 100, "resources/list ends", pages);
      for (const r of page.resources) {
        check(r.uri && r.name && r.mimeType && Number.isInteger(r.size), "a listed resource has uri, name, mimeType, size", r);
        seen.set(r.uri, (seen.get(r.uri) ?? 0) + 1);
      }
      cursor = page.nextCursor;
    } while (cursor);
  });
  const dup = [...seen].filter(([, n]) => n !== 1).map(([u]) => u);
  check(dup.length === 0, "no resource is listed twice", dup);
  const missing = small.filter((a) => seen.get(a.uri) !== 1).map((a) => a.uri);
  check(missing.length === 0, "every produced artifact is listed exactly once", missing);
  check(seen.get(big.uri) === 1, "the large artifact is listed once");
  findings.listing = { produced: small.length, pages, listed: seen.size, found: small.length - missing.length };

  // A refused range: offset past the end.
  const refusedUri = `${big.uri}?offset=${big.size + 10}`;
  const refused = await timed("refused_read", () => refusedRead(client, refusedUri));
  const expected = opts.http ? "not_found" : "out_of_range";
  findings.refused = { uri: refusedUri, ...refused };
  check(refused.code === -32602, "a refused range is JSON-RPC -32602", refused);
  check(refused.data && refused.data.outcome === expected, `a refused range says ${expected}`, refused);
  if (opts.http) {
    check(refused.data.uri === refusedUri && Object.keys(refused.data).length === 2, "HTTP refusals carry only uri and outcome", refused);
  }

  // A bad argument: an isError answer whose structuredContent validates (the SDK would throw).
  const invalid = [];
  for (const [name, args] of [
    ["test_produce", { size: -1 }],
    ["test_produce", { bogus: 1 }],
    ["runtime_recording_capture", { session_id: "x", frames: 1 }],
  ]) {
    const r = await call(client, name, args);
    invalid.push({ name, isError: r.isError === true, outcome: r.structuredContent.outcome, message: r.structuredContent.message });
    check(r.isError === true && r.structuredContent.outcome === "invalid_argument", `${name} ${JSON.stringify(args)} answers invalid_argument`, r);
  }
  findings.invalid = invalid;
  return max;
}

async function godot(client, max) {
  const g = {};
  findings.godot = g;
  const { body: started } = await timed("session_start", () =>
    ok(client, "runtime_session_start", { mode: "windowed" }, WAIT),
  );
  const sid = started.session.id;
  g.session = started.session;
  try {
    const { result: shotResult, body: shot } = await timed("screenshot", () =>
      ok(client, "runtime_screenshot_capture", { session_id: sid }, WAIT),
    );
    const a = shot.artifact;
    check(a.mime_type === "image/png" && linkOf(shotResult, a.uri), "a screenshot is a PNG artifact with a resource_link", shotResult);
    const s = await timed("read_screenshot", () => readWhole(client, a, max));
    check(s.bytes.subarray(0, 8).equals(PNG), "a screenshot starts with the PNG signature");
    g.screenshot = { size: s.size, reads: s.reads, sha256: s.sha256, width: a.width, height: a.height, frames: a.frames, png: true };

    const { result: recResult, body: rec } = await timed("recording", () =>
      ok(client, "runtime_recording_capture", { session_id: sid, frames: 4, fps: 10 }, WAIT),
    );
    const r = rec.artifact;
    check(r.mime_type === "image/apng" && linkOf(recResult, r.uri), "a recording is an APNG artifact with a resource_link", recResult);
    const v = await timed("read_recording", () => readWhole(client, r, max));
    check(v.bytes.subarray(0, 8).equals(PNG), "a recording starts with the PNG signature");
    g.recording = {
      size: v.size,
      reads: v.reads,
      sha256: v.sha256,
      width: r.width,
      height: r.height,
      frames: r.frames,
      png: true,
      actl: v.bytes.includes(Buffer.from("acTL")),
    };

    const { body: exp } = await timed("export_start", () => ok(client, "project_export", { preset: "Pack", kind: "pack" }));
    check(exp.export.state === "running", "an export starts running", exp);
    const progress = [];
    const { result: stResult, body: st } = await timed("export_status", () =>
      ok(
        client,
        "project_export_status",
        { export_id: exp.export.id, wait_seconds: 50 },
        { ...WAIT, onprogress: (p) => progress.push({ progress: p.progress, total: p.total ?? null, message: p.message ?? null }) },
      ),
    );
    g.export = { id: exp.export.id, state: st.export.state, progress };
    check(st.export.state === "succeeded", "the Pack export succeeds", st.export);
    for (let i = 1; i < progress.length; i++) {
      check(progress[i].progress > progress[i - 1].progress, "progress strictly increases", progress);
    }
    progress.forEach((p, i) => {
      if (p.total !== null && i !== progress.length - 1) {
        check(p.total !== p.progress, "total equals progress only in the last notification", progress);
      }
    });
    g.export.last_total_is_progress = progress.length > 0 && progress.at(-1).total === progress.at(-1).progress;
    check(st.export.outputs.length === 1, "a pack export has one output", st.export.outputs);
    const [out] = st.export.outputs;
    check(linkOf(stResult, out.uri), "export status links its output", stResult.content);
    const p = await timed("read_pack", () => readWhole(client, out, max));
    check(p.bytes.subarray(0, 4).toString("latin1") === "GDPC", "a pack starts with GDPC");
    g.pack = { name: out.name, size: p.size, reads: p.reads, sha256: p.sha256 };
  } finally {
    const { body: stopped } = await timed("session_stop", () =>
      ok(client, "runtime_session_stop", { session_id: sid }, WAIT),
    );
    g.stopped = stopped.state;
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const sdk = JSON.parse(
    readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url), "utf8"),
  );
  findings.sdk_version = sdk.version;
  findings.transport = opts.http ? "http" : "stdio";
  const client = new Client({ name: "godot-mcp-ts-test", version: "1.0.0" });
  const transport = opts.http
    ? new StreamableHTTPClientTransport(new URL(opts.http), {
        requestInit: { headers: { Authorization: `Bearer ${opts.token}` } },
      })
    : new StdioClientTransport({
        command: opts.stdio[0],
        args: opts.stdio.slice(1),
        env: process.env, // the SDK passes only a few variables by default
        stderr: "inherit",
      });
  await timed("connect", () => client.connect(transport));
  findings.server = client.getServerVersion();
  findings.protocol_version = transport.protocolVersion ?? null;
  try {
    const max = await basics(client, opts);
    if (opts.godot) await godot(client, max);
    findings.ok = true;
  } finally {
    if (opts.http) await transport.terminateSession().catch(() => {});
    await client.close().catch(() => {});
  }
}

const guard = setTimeout(() => {
  findings.error = `client.mjs gave up after ${DEADLINE_MS} ms`;
  process.stdout.write(`${JSON.stringify(findings)}\n`);
  process.exit(1);
}, DEADLINE_MS);
guard.unref();

main().then(
  () => {
    process.stdout.write(`${JSON.stringify(findings)}\n`);
    process.exit(0);
  },
  (err) => {
    findings.ok = false;
    findings.error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    if (err instanceof McpError) findings.error_data = err.data ?? null;
    process.stderr.write(`client.mjs failed: ${err instanceof Error ? err.stack : err}\n`);
    process.stdout.write(`${JSON.stringify(findings)}\n`);
    process.exit(1);
  },
);
