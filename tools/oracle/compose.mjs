// Test oracle: composes a rover-style supergraph config with @apollo/composition.
// Usage: node compose.mjs CONFIG.yaml [--json]
//   default: the supergraph SDL on stdout; on failure the errors on stderr, exit 1.
//   --json:  {"supergraph": string|null, "errors": [{code, message}], "hints": [{code, message}]} on stdout.
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse } from "graphql";
import { composeServices } from "@apollo/composition";
import YAML from "yaml";

const [configPath, ...flags] = process.argv.slice(2);
if (!configPath) {
  console.error("usage: compose.mjs CONFIG.yaml [--json]");
  process.exit(2);
}
const config = YAML.parse(readFileSync(configPath, "utf8"));
const base = dirname(resolve(configPath));
const services = Object.entries(config.subgraphs ?? {}).map(([name, sg]) => {
  const schema = sg.schema ?? {};
  const sdl = schema.sdl ?? readFileSync(resolve(base, schema.file), "utf8");
  return { name, url: sg.routing_url, typeDefs: parse(sdl) };
});
const result = composeServices(services);
const pick = (e) => ({ code: e.extensions?.code ?? null, message: e.message });
const errors = (result.errors ?? []).map(pick);
const hints = (result.hints ?? []).map((h) => ({ code: h.definition?.code ?? null, message: h.message }));
if (flags.includes("--json")) {
  console.log(JSON.stringify({ supergraph: result.supergraphSdl ?? null, errors, hints }, null, 2));
  process.exit(errors.length ? 1 : 0);
}
if (errors.length) {
  for (const e of errors) console.error(`${e.code}: ${e.message}`);
  process.exit(1);
}
process.stdout.write(result.supergraphSdl);
if (!result.supergraphSdl.endsWith("\n")) process.stdout.write("\n");
