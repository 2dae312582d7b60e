// Times @apollo/composition's composeServices on a rover-style config, excluding node
// startup and parsing: a warm-up run, then the median of N runs.
// Usage (after scripts/oracle-compose.sh has installed the oracle once into the cache):
//   ORACLE_DIR=$(ls -d ~/.cache/graphfleet/tools/oracle-*) node apollo-timing.mjs CONFIG.yaml [N]
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(resolve(process.env.ORACLE_DIR ?? ".", "package.json"));
const { parse } = require("graphql");
const { composeServices } = require("@apollo/composition");
const YAML = require("yaml");

const [configPath, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 20);
const config = YAML.parse(readFileSync(configPath, "utf8"));
const base = dirname(resolve(configPath));
const services = Object.entries(config.subgraphs).map(([name, sg]) => ({
  name,
  url: sg.routing_url,
  typeDefs: parse(sg.schema.sdl ?? readFileSync(resolve(base, sg.schema.file), "utf8")),
}));
const times = [];
for (let i = 0; i <= runs; i++) {
  const start = process.hrtime.bigint();
  const result = composeServices(services);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (result.errors) throw new Error(result.errors.map((e) => e.message).join("\n"));
  if (i > 0) times.push(ms);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ runs, min_ms: times[0], median_ms: times[times.length >> 1], max_ms: times[times.length - 1] }));
