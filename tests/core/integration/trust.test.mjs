// What toolhost trusts: only a configuration the user named (never one in the current folder),
// only plugin files and folders no other user can change, only permission rows that name a kind
// some plugin registered.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { TOOLHOST, EXAMPLE_CONFIG, connect } from "./harness.mjs";

const execFileP = promisify(execFile);
const FIXTURE_DIR = process.env.FIXTURE_DIR;
const INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}\n';

function scratch(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `toolhost-${name}-`));
  fs.chmodSync(dir, 0o755);
  return dir;
}

// Runs a command with stdin text; resolves with {code, stdout, stderr} whatever the exit code.
function run(file, args, { input = "", cwd, env } = {}) {
  return new Promise((resolve) => {
    const child = execFile(file, args, { cwd, env, timeout: 20000 }, (error, stdout, stderr) =>
      resolve({ code: error ? error.code ?? error.signal : 0, stdout, stderr }),
    );
    child.stdin.on("error", () => {});  // toolhost may exit before it reads its input: that is the point
    child.stdin.end(input);
  });
}

// An environment with no configuration anywhere toolhost looks by itself.
function bareEnv(root) {
  const env = { ...process.env, HOME: path.join(root, "home"), XDG_CONFIG_DIRS: path.join(root, "no-xdg-dirs") };
  delete env.XDG_CONFIG_HOME;
  delete env.TOOLHOST_CONFIG;
  delete env.TOOLHOST_PLUGIN_PATH;
  fs.mkdirSync(env.HOME, { recursive: true });
  return env;
}

// A checkout an MCP client might start toolhost in: its own config naming its own plugins.
function hostileProject(root) {
  const project = path.join(root, "project");
  fs.mkdirSync(path.join(project, "config"), { recursive: true });
  fs.writeFileSync(
    path.join(project, "config", "toolhost.toml"),
    `plugin_dirs = [${JSON.stringify(FIXTURE_DIR)}]\n[servers.evil]\nplugins = ["fixture-good"]\n`,
  );
  return project;
}

test("a config in the current folder is never read, and with none found toolhost says where it looked", async () => {
  const root = scratch("discovery");
  const project = hostileProject(root);
  const env = bareEnv(root);
  // A toolhost with no default installed beside it: a copy outside the build tree.
  fs.mkdirSync(path.join(root, "bin"));
  const lonely = path.join(root, "bin", "toolhost");
  fs.copyFileSync(TOOLHOST, lonely);
  fs.chmodSync(lonely, 0o755);
  for (const server of ["evil", "whatever"]) {
    const r = await run(lonely, ["--server", server], { input: INIT, cwd: project, env });
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stdout, "", "nothing may be served");
    assert.match(r.stderr, /^toolhost: no configuration found; looked at --config FILE, \$TOOLHOST_CONFIG, /);
    assert.ok(r.stderr.includes(path.join(env.HOME, ".config/toolhost/toolhost.toml")), r.stderr);
    assert.ok(r.stderr.includes(path.join(root, "share/toolhost/toolhost.toml")), r.stderr);
    assert.ok(!r.stderr.includes(path.join(project, "config")), "the current folder is not a place to look");
  }
  // The build's toolhost finds the default beside it (build/share/toolhost), not the project's.
  const r = await run(TOOLHOST, ["--server", "evil"], { input: INIT, cwd: project, env });
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.match(r.stderr, /^toolhost: no server named 'evil' in \S+\/share\/toolhost\/toolhost\.toml/);
  fs.rmSync(root, { recursive: true, force: true });
});

test("the config is found through --config, TOOLHOST_CONFIG and XDG_CONFIG_HOME, in that order", async () => {
  const root = scratch("order");
  const env = bareEnv(root);
  const write = (file, server) => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `plugin_dirs = [${JSON.stringify(FIXTURE_DIR)}]\n[servers.${server}]\nplugins = ["example"]\n`);
    return file;
  };
  const xdg = write(path.join(root, "xdg", "toolhost", "toolhost.toml"), "from-xdg");
  const named = write(path.join(root, "env.toml"), "from-env");
  const flag = write(path.join(root, "flag.toml"), "from-flag");
  const served = async (args, extra) => {
    const r = await run(TOOLHOST, ["check-config", ...args], { env: { ...env, ...extra } });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    return r.stdout;
  };
  const xdgEnv = { XDG_CONFIG_HOME: path.join(root, "xdg") };
  assert.match(await served([], xdgEnv), new RegExp(`^${xdg}: OK`));
  assert.match(await served([], { ...xdgEnv, TOOLHOST_CONFIG: named }), new RegExp(`^${named}: OK`));
  assert.match(await served(["--config", flag], { ...xdgEnv, TOOLHOST_CONFIG: named }), new RegExp(`^${flag}: OK`));
  fs.rmSync(root, { recursive: true, force: true });
});

test("plugins and plugin folders that others can write to, or that another user owns, are refused", async () => {
  const root = scratch("plugin-trust");
  const dir = path.join(root, "plugins");
  fs.mkdirSync(dir);
  fs.chmodSync(dir, 0o755);
  const plugin = path.join(dir, "example.so");
  fs.copyFileSync(path.join(FIXTURE_DIR, "example.so"), plugin);
  const config = path.join(root, "t.toml");
  fs.writeFileSync(config, `plugin_dirs = [${JSON.stringify(dir)}]\n[servers.t]\nplugins = ["example"]\n`);
  const check = () => run(TOOLHOST, ["check-config", "--config", config]);

  fs.chmodSync(plugin, 0o755);
  assert.equal((await check()).code, 0);

  fs.chmodSync(plugin, 0o666);
  let r = await check();
  assert.equal(r.code, 1);
  assert.ok(r.stdout.includes(`the plugin ${plugin} is writable by every user (mode 0666), so toolhost does not trust it`), r.stdout);
  assert.ok(r.stdout.includes(`Fix it with: chmod go-w ${plugin}`), r.stdout);
  // Serving it is refused too: the tool is not there.
  const { client } = await connect({ config, server: "t" });
  assert.deepEqual((await client.listTools()).tools, []);
  await client.close();

  fs.chmodSync(plugin, 0o755);
  fs.chmodSync(dir, 0o777);
  r = await check();
  assert.equal(r.code, 1);
  assert.ok(r.stdout.includes(`the plugin folder ${dir} is writable by every user (mode 0777)`), r.stdout);
  fs.chmodSync(dir, 0o755);

  if (process.getuid() === 0) {
    // As root, a plugin another user owns would run that user's code with root's rights.
    fs.chownSync(plugin, 65534, 65534);
    r = await check();
    assert.equal(r.code, 1);
    assert.match(r.stdout, new RegExp(`the plugin ${plugin} belongs to \\S+, not to you \\(root\\) or root`));
    assert.ok(r.stdout.includes(`sudo chown root ${plugin}`), r.stdout);
    const listed = JSON.parse((await run(TOOLHOST, ["plugins", "--config", config, "--json"])).stdout);
    assert.equal(listed.plugins[0].status, "not trusted");
  }
  fs.rmSync(root, { recursive: true, force: true });
});

test("a world-writable configuration is refused before anything is read from it", async () => {
  const root = scratch("config-trust");
  const config = path.join(root, "t.toml");
  fs.writeFileSync(config, `plugin_dirs = [${JSON.stringify(FIXTURE_DIR)}]\n[servers.t]\nplugins = ["example"]\n`);
  fs.chmodSync(config, 0o666);
  const r = await run(TOOLHOST, ["--config", config, "--server", "t"], { input: INIT });
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.ok(r.stderr.includes(`toolhost: the configuration ${config} is writable by every user (mode 0666)`), r.stderr);
  fs.rmSync(root, { recursive: true, force: true });
});

test("a permission row naming no registered kind is an error with file:line:column", async () => {
  const root = scratch("rows");
  const config = path.join(root, "t.toml");
  fs.writeFileSync(
    config,
    `plugin_dirs = [${JSON.stringify(FIXTURE_DIR)}]\n[permissions]\n"example.cuont" = "never"\n[servers.t]\nplugins = ["example"]\n` +
      `[servers.t.permissions]\n  "example.count" = "allow"\n  "fixture.ech" = "never"\n`,
  );
  let r = await run(TOOLHOST, ["check-config", "--config", config]);
  assert.equal(r.code, 1);
  assert.ok(r.stdout.includes(`${config}:3:1: permission kind "example.cuont" is not registered by any plugin of server 't'; did you mean "example.count"?`), r.stdout);
  assert.ok(r.stdout.includes(`${config}:8:3: permission kind "fixture.ech" is not registered by any plugin of server 't'`), r.stdout);
  assert.match(r.stdout, /: 2 problems\n$/);

  // Serving, the row meant to refuse `count` must not leave it allowed: the server refuses its
  // tools with the sentence, and says why in its instructions.
  const { client, stderr } = await connect({ config, server: "t" });
  assert.match(client.getInstructions() ?? "", /configuration has an error/);
  const res = await client.callTool({ name: "count", arguments: { to: 2 } });
  assert.equal(res.isError, true);
  assert.match(res.content[0].text, /until the user fixes its configuration: .*t\.toml:\d+:\d+: permission kind "(example\.cuont|fixture\.ech)"/);
  await client.close();
  assert.match(stderr(), /toolhost: error: config: .*t\.toml:3:1: permission kind "example\.cuont"/);

  // --deny with a typo is caught the same way, and a correct one works.
  fs.writeFileSync(config, `plugin_dirs = [${JSON.stringify(FIXTURE_DIR)}]\n[servers.t]\nplugins = ["example"]\n`);
  r = await run(TOOLHOST, ["check-config", "--config", config, "--deny", "example.cout"]);
  assert.equal(r.code, 1);
  assert.ok(r.stdout.includes(`--deny example.cout: permission kind "example.cout" is not registered`), r.stdout);
  assert.equal((await run(TOOLHOST, ["check-config", "--config", config, "--deny", "example.count"])).code, 0);
  fs.rmSync(root, { recursive: true, force: true });
});

test("a row whose plugin did not start is only a warning, since its kinds are unknown", async () => {
  const root = scratch("rows-failed");
  const config = path.join(root, "t.toml");
  fs.writeFileSync(
    config,
    `plugin_dirs = [${JSON.stringify(FIXTURE_DIR)}]\n[servers.t]\nplugins = ["example", "fixture-init-fails"]\n` +
      `[servers.t.permissions]\n"fixture-init-fails.run" = "never"\n`,
  );
  const r = await run(TOOLHOST, ["check-config", "--config", config]);
  assert.equal(r.code, 1, "the plugin that failed is a problem");
  assert.match(r.stdout, /warning: .*t\.toml:5:1: permission kind "fixture-init-fails\.run" is not registered by any plugin of server 't' \(plugin fixture-init-fails did not start, so its kinds are unknown\)/);
  assert.match(r.stdout, /: 1 problem\n$/);
  fs.rmSync(root, { recursive: true, force: true });
});

test("a TOML key of 50,000 dotted parts is refused with its position, not a crash", async () => {
  const root = scratch("nesting");
  const cases = {
    "key.toml": `a${".b".repeat(50000)} = 1\n`,
    "header.toml": `[${Array(50000).fill("x").join(".")}]\n`,
    "array.toml": `a = ${"[".repeat(50000)}${"]".repeat(50000)}\n`,
  };
  for (const [name, text] of Object.entries(cases)) {
    const file = path.join(root, name);
    fs.writeFileSync(file, text);
    const r = await run(TOOLHOST, ["check-config", "--config", file]);
    assert.equal(r.code, 2, `${name}: ${r.code} ${r.stderr}`);
    assert.match(r.stderr, new RegExp(`^toolhost: ${file}:1:\\d+: (a dotted key or table header has too many parts|arrays or inline tables nest too deeply) \\(toolhost allows 64\\)\\n$`));
  }
  // Deep but sane settings still load.
  const fine = path.join(root, "fine.toml");
  fs.writeFileSync(fine, `plugin_dirs = [${JSON.stringify(FIXTURE_DIR)}]\n[servers.t]\nplugins = ["example"]\n[servers.t.settings.example]\na.b.c.d.e.f = [[1, 2.5], {x = "a.b.c"}]\n`);
  assert.equal((await run(TOOLHOST, ["check-config", "--config", fine])).code, 0);
  fs.rmSync(root, { recursive: true, force: true });
});

test("unknown flags and commands get a did-you-mean, and errors carry no internal logger name", async () => {
  let r = await run(TOOLHOST, ["--sever", "example"]);
  assert.equal(r.code, 2);
  assert.equal(r.stderr, "toolhost: unknown argument '--sever'; did you mean --server? See toolhost --help\n");
  r = await run(TOOLHOST, ["plugin"]);
  assert.match(r.stderr, /^toolhost: unknown command 'plugin'; did you mean 'plugins'\?/);
  r = await run(TOOLHOST, ["--config", EXAMPLE_CONFIG, "--server", "exampel"], { input: INIT });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^toolhost: no server named 'exampel' in \S+example\.toml; did you mean 'example'\? \(servers: /);
});

test("--set for a plugin that only disabled servers serve says the server is disabled", async () => {
  const root = scratch("set-disabled");
  const config = path.join(root, "toolhost.toml");
  fs.writeFileSync(config, `plugin_dirs = [${JSON.stringify(FIXTURE_DIR)}]\ndefault_server = "on"\n` +
    `[servers.on]\nplugins = ["fixture-good"]\n[servers.off]\nenabled = false\nplugins = ["fixture-faults"]\n`);
  let r = await run(TOOLHOST, ["--config", config, "--set", "fixture-faults.delay_ms=1"], { input: INIT });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^toolhost: '--set fixture-faults\.delay_ms=1' would change nothing: plugin 'fixture-faults' is served only by disabled servers: 'off' \(enabled = false at \S+toolhost\.toml:5:\d+\); set enabled = true there/);
  r = await run(TOOLHOST, ["--config", config, "--set", "nobody.x=1"], { input: INIT });
  assert.match(r.stderr, /no server in the config serves plugin 'nobody'/);
  fs.rmSync(root, { recursive: true, force: true });
});

test("--token-file reads the bearer token from a file only its owner can read", async () => {
  const root = scratch("token");
  const file = path.join(root, "token");
  fs.writeFileSync(file, "s3cret-token\n", { mode: 0o600 });
  const { spawn } = await import("node:child_process");
  const child = spawn(TOOLHOST, ["--config", EXAMPLE_CONFIG, "--server", "example", "--http", "127.0.0.1:0", "--token-file", file], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  const url = await new Promise((resolve, reject) => {
    child.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/at (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (m) resolve(m[1]);
    });
    child.on("exit", (code) => reject(new Error(`toolhost exited with ${code}: ${err}`)));
  });
  const post = (auth) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(auth ? { authorization: auth } : {}) },
      body: INIT,
    });
  assert.equal((await post()).status, 401);
  assert.equal((await post("Bearer wrong")).status, 401);
  assert.equal((await post("Bearer s3cret-token")).status, 200);
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
  // The command line never shows the token; --help says why to prefer the file.
  const help = (await run(TOOLHOST, ["--help"])).stdout;
  assert.match(help, /--token TOKEN .*every local user can\s+read it \(\/proc\/PID\/cmdline\)/s);
  // A token file others can read is refused, with the fix.
  fs.chmodSync(file, 0o644);
  const r = await run(TOOLHOST, ["--config", EXAMPLE_CONFIG, "--server", "example", "--http", "127.0.0.1:0", "--token-file", file]);
  assert.equal(r.code, 2);
  assert.equal(r.stderr, `toolhost: the token file ${file} can be read by others (mode 0644); keep it to yourself with: chmod 600 ${file}\n`);
  fs.rmSync(root, { recursive: true, force: true });
});
